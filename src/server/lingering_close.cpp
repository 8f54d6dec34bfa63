#include "server/lingering_close.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace wgc::server {

LingeringCloser::LingeringCloser(std::chrono::milliseconds linger, size_t max_sockets)
    : linger_(linger), max_(max_sockets), thread_([this] { run(); }) {}

LingeringCloser::~LingeringCloser() {
  {
    std::lock_guard lock(mu_);
    quit_ = true;
  }
  cv_.notify_all();
  thread_.join();
  for (const Socket& s : sockets_) ::close(s.fd);
}

void LingeringCloser::close(int fd) {
  ::shutdown(fd, SHUT_WR);
  {
    std::lock_guard lock(mu_);
    if (!quit_ && sockets_.size() < max_) {
      sockets_.push_back({fd, std::chrono::steady_clock::now() + linger_});
      cv_.notify_all();
      return;
    }
  }
  ::close(fd);
}

void LingeringCloser::run() {
  std::vector<pollfd> fds;
  char buf[4096];
  for (;;) {
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return quit_ || !sockets_.empty(); });
      if (quit_) return;
      fds.clear();
      for (const Socket& s : sockets_) fds.push_back({s.fd, POLLIN, 0});
    }
    // A short timeout: sockets added meanwhile join the next round.
    ::poll(fds.data(), fds.size(), 50);
    std::vector<int> done;
    for (const pollfd& p : fds) {
      if (!p.revents) continue;
      ssize_t n = 0;
      for (int i = 0; i < 16 && (n = ::recv(p.fd, buf, sizeof buf, MSG_DONTWAIT)) > 0; ++i) {
      }
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) done.push_back(p.fd);
    }
    auto now = std::chrono::steady_clock::now();
    std::lock_guard lock(mu_);
    std::erase_if(sockets_, [&](const Socket& s) {
      if (s.until > now && std::find(done.begin(), done.end(), s.fd) == done.end()) return false;
      ::close(s.fd);
      return true;
    });
  }
}

}  // namespace wgc::server
