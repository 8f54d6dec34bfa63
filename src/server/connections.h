// The open HTTP connections of `wgc serve`: a cap on them in total and per client address, the
// phase each one is in, and room made under pressure by closing the connections that sit idle
// between requests or send their request too slowly (slowloris). Connections that run a handler
// (a generation, a stream) are never closed to make room. No HTTP here: the server
// (server/guarded_http.h) registers each socket and says when its phase changes.
//
//   ConnectionTable table({.total = 88, .per_client = 66});
//   std::string why;
//   auto c = table.admit(fd, "10.0.0.7", why);   // nullptr: refused, `why` says which cap
//   table.enter(*c, Phase::Head);                  // the first byte of a request came
//   ...
//   table.release(*c);                             // before close(fd)
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace wgc::server {

using Clock = std::chrono::steady_clock;

// Where a connection is in its request/response cycle.
enum class Phase {
  Idle,      // waiting for the next request (keep-alive)
  Head,      // reading a request's line and headers
  Body,      // reading its body
  Handling,  // running the handler and writing the answer
};

// Why the server cut a connection short (the thread that serves it answers accordingly).
enum class Cut {
  None,
  HeadTooLarge,        // the request line and headers passed the byte limit
  TooManyHeaderLines,  // ... or the line limit
  BodyTooLarge,        // the body passed --max-body
  Deadline,            // the head and body did not arrive within the request timeout
  Evicted,             // closed to make room for another connection (it was idle or slow)
  Stopping,            // the server is shutting down
};
const char* to_string(Cut c);

struct Connection {
  Connection(int socket, std::string client) : fd(socket), address(std::move(client)) {}
  const int fd;
  const std::string address;  // the client's IP address
  std::atomic<Cut> cut{Cut::None};
  // Guarded by the table's mutex.
  Phase phase = Phase::Idle;
  Clock::time_point since = Clock::now();  // when the phase began
};

class ConnectionTable {
 public:
  struct Limits {
    size_t total = 88;       // connections open at once
    size_t per_client = 66;  // of them from one client address
    // An idle or still-arriving connection may be closed to make room once it has been in that
    // phase this long (a request that just connected is not cut before it had a chance).
    Clock::duration evictable_after = std::chrono::seconds(1);
  };
  explicit ConnectionTable(Limits limits) : limits_(limits) {}

  // Registers a connection. Where a cap is reached it first closes the oldest evictable connection
  // (of this client for the per-client cap, of anyone for the total); when there is none it refuses:
  // nullptr, with `why` saying which cap. Refused after close_all() too.
  std::shared_ptr<Connection> admit(int fd, std::string address, std::string& why);
  void enter(Connection& c, Phase p);
  // Forgets a connection; call before closing its socket (the table never touches a closed fd).
  void release(const Connection& c);
  // Cuts every connection (Cut::Stopping, shutdown(SHUT_RDWR): blocked reads and writes return at
  // once) and refuses new ones.
  void close_all();

  const Limits& limits() const { return limits_; }
  struct Counts {
    size_t open = 0;
    uint64_t refused = 0, evicted = 0;
  };
  Counts counts() const;

 private:
  // The oldest evictable connection (of `address`, or of anyone when empty), cut; false if none.
  bool evict_one(const std::string& address, Clock::time_point now);

  Limits limits_;
  mutable std::mutex mu_;
  std::map<int, std::shared_ptr<Connection>> open_;  // by socket
  bool closing_ = false;
  uint64_t refused_ = 0, evicted_ = 0;
};

}  // namespace wgc::server
