// cpp-httplib's server (Debian's 0.11, used unpatched) with the limits it lacks: httplib reads a
// request with a timeout per read, so a client that sends a byte every few seconds holds a thread
// for ever, and it bounds neither the number of header lines nor a chunked body. GuardedHttpServer
// serves each connection itself (httplib's per-connection hook, process_and_close_socket) through a
// socket stream that enforces
//   - a deadline for a request's head and body together, from the request's first byte;
//   - a byte and line limit on the request line and headers, and a byte limit on the body as sent;
//   - the connection caps of ConnectionTable (total and per client), refusing with 503 past them
//     after closing idle or slow connections to make room;
// and on shutdown cuts every connection at once (close_connections), whatever the clients do.
// A cut request gets its answer (408, 413, 431, 503) from the server's error handler, or from
// here when httplib wrote none; the connection then closes.
#pragma once

#include "server/api_error.h"
#include "server/connections.h"
#include "server/lingering_close.h"

#include <httplib.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>

namespace wgc::server {

struct HttpLimits {
  ConnectionTable::Limits connections;
  std::chrono::milliseconds request_timeout{30000};  // a request's head and body, from its first byte
  std::chrono::milliseconds idle_timeout{5000};      // between the requests of a kept-alive connection
  std::chrono::milliseconds io_timeout{30000};       // one read or write while a handler runs
  size_t max_head_bytes = 64u << 10;                 // the request line and headers
  size_t max_header_lines = 100;
  size_t max_body_bytes = 8u << 20;  // the body as the handler receives it (chunked: decoded)
  size_t keep_alive_requests = 1000;
};

// The answer to a cut request (status, message, code), e.g. 431 for Cut::HeadTooLarge.
ApiError cut_error(Cut cut, const HttpLimits& limits);

class GuardedStream;

// The connection that the calling thread serves (handlers run on it), or nullptr outside one.
class HttpConnection {
 public:
  HttpConnection(ConnectionTable& table, Connection& entry, GuardedStream& stream)
      : table_(table), entry_(entry), stream_(stream) {}
  void enter(Phase p);  // the table's phase and the stream's limits follow
  Cut cut() const { return entry_.cut.load(); }
  void close_after_response() { close_ = true; }  // the request's body may be left unread
  bool closing() const { return close_; }

 private:
  ConnectionTable& table_;
  Connection& entry_;
  GuardedStream& stream_;
  bool close_ = false;
};
HttpConnection* current_http_connection();

class GuardedHttpServer : public httplib::Server {
 public:
  explicit GuardedHttpServer(HttpLimits limits);
  // Binds and listens (port 0: any free one); the bound port, or -1. The listen backlog is the
  // system's largest (httplib's is 5: a burst of connections beyond it waits for the kernel's
  // retransmissions, seconds, before it is even accepted).
  int bind(const std::string& host, int port);
  const HttpLimits& limits() const { return limits_; }
  ConnectionTable& connections() { return table_; }
  // Cuts every open connection (their threads return at once) and refuses new ones.
  void close_connections() { table_.close_all(); }

 private:
  bool process_and_close_socket(socket_t sock) override;

  HttpLimits limits_;
  ConnectionTable table_;
  LingeringCloser closer_;  // every connection ends through it (no reset losing the last answer)
};

}  // namespace wgc::server
