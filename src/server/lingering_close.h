// Closing an HTTP connection without losing its last answer. A socket closed while the client is
// still sending (a refused connection's request, a body past the limit, a slow client's next bytes)
// is reset by the kernel, and a reset can discard the answer before the client has read it. So a
// connection ends with shutdown(SHUT_WR) (the client gets the answer and our end of the stream),
// and this one thread then reads and drops what the client still sends until the client closes
// too, or for at most a few seconds, before the socket is closed: the workers never wait for it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <thread>
#include <vector>

namespace wgc::server {

class LingeringCloser {
 public:
  // `linger`: how long a socket is kept at most; `max_sockets`: beyond this many, close at once.
  explicit LingeringCloser(std::chrono::milliseconds linger = std::chrono::seconds(2), size_t max_sockets = 128);
  ~LingeringCloser();  // closes what is left
  LingeringCloser(const LingeringCloser&) = delete;
  LingeringCloser& operator=(const LingeringCloser&) = delete;

  // Takes over `fd`: its write side is shut now, it is closed later (thread-safe).
  void close(int fd);

 private:
  void run();

  struct Socket {
    int fd;
    std::chrono::steady_clock::time_point until;
  };
  const std::chrono::milliseconds linger_;
  const size_t max_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Socket> sockets_;
  bool quit_ = false;
  std::thread thread_;
};

}  // namespace wgc::server
