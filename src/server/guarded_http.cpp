#include "server/guarded_http.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace wgc::server {
namespace {

thread_local HttpConnection* current = nullptr;

// Worker threads beyond the connection cap: they answer refused connections, so a refusal never
// waits behind the connections that are served.
constexpr size_t kRefusalThreads = 8;

// Milliseconds until t, rounded up (a poll that waits them does not end before t), at least 0.
int ms_until(Clock::time_point t) {
  auto ms = std::chrono::ceil<std::chrono::milliseconds>(t - Clock::now()).count();
  return int(std::clamp<long long>(ms, 0, 1 << 30));
}

// poll() for `events` up to `timeout_ms`; true when ready (or hung up: the next call says how).
bool wait_for(int fd, short events, int timeout_ms) {
  pollfd p{fd, events, 0};
  auto end = Clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    int r = ::poll(&p, 1, timeout_ms);
    if (r > 0) return true;
    if (r == 0 || errno != EINTR) return false;
    timeout_ms = ms_until(end);
  }
}

std::string address_of(const sockaddr_storage& a, int* port) {
  char buf[INET6_ADDRSTRLEN] = "";
  if (a.ss_family == AF_INET) {
    const auto& v4 = reinterpret_cast<const sockaddr_in&>(a);
    inet_ntop(AF_INET, &v4.sin_addr, buf, sizeof buf);
    if (port) *port = ntohs(v4.sin_port);
  } else if (a.ss_family == AF_INET6) {
    const auto& v6 = reinterpret_cast<const sockaddr_in6&>(a);
    inet_ntop(AF_INET6, &v6.sin6_addr, buf, sizeof buf);
    if (port) *port = ntohs(v6.sin6_port);
  }
  return buf;
}

std::string peer_address(int fd, int* port = nullptr) {
  sockaddr_storage a{};
  socklen_t n = sizeof a;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&a), &n) != 0) return "unknown";
  return address_of(a, port);
}

// "30", "2.5": a duration in seconds as a person writes it.
std::string seconds_text(std::chrono::milliseconds t) {
  char s[32];
  std::snprintf(s, sizeof s, "%g", double(t.count()) / 1000.0);
  return s;
}

const char* reason_phrase(int status) {
  switch (status) {
    case 400: return "Bad Request";
    case 408: return "Request Timeout";
    case 413: return "Payload Too Large";
    case 431: return "Request Header Fields Too Large";
    case 503: return "Service Unavailable";
    default: return "Error";
  }
}

}  // namespace

// A connection's socket as httplib's Stream, with the request's deadline and size limits.
class GuardedStream final : public httplib::Stream {
 public:
  GuardedStream(Connection& c, const HttpLimits& l) : c_(c), limits_(l) {}

  bool is_readable() const override {
    return pos_ < end_ || wait_for(c_.fd, POLLIN, std::min(int(limits_.io_timeout.count()), deadline_ms()));
  }
  bool is_writable() const override { return wait_for(c_.fd, POLLOUT, int(limits_.io_timeout.count())); }

  ssize_t read(char* ptr, size_t size) override {
    if (pos_ == end_ && !fill()) return -1;
    size_t n = std::min(size, end_ - pos_);
    const char* from = buf_ + pos_;
    if (phase_ == Phase::Head) {
      head_bytes_ += n;
      head_lines_ += size_t(std::count(from, from + n, '\n'));
      // The request line, the header lines and the empty line that ends them.
      if (head_bytes_ > limits_.max_head_bytes) return cut(Cut::HeadTooLarge);
      if (head_lines_ > limits_.max_header_lines + 2) return cut(Cut::TooManyHeaderLines);
    } else if (phase_ == Phase::Body) {
      body_bytes_ += n;
      if (body_bytes_ > body_wire_limit()) return cut(Cut::BodyTooLarge);
    }
    std::memcpy(ptr, from, n);
    pos_ += n;
    return ssize_t(n);
  }

  ssize_t write(const char* ptr, size_t size) override {
    for (;;) {
      ssize_t n = ::send(c_.fd, ptr, size, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n >= 0) {
        written_ += size_t(n);
        return n;
      }
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) return -1;
      if (!is_writable()) return -1;
    }
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override { ip = peer_address(c_.fd, &port); }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage a{};
    socklen_t n = sizeof a;
    ip = getsockname(c_.fd, reinterpret_cast<sockaddr*>(&a), &n) == 0 ? address_of(a, &port) : "";
  }
  socket_t socket() const override { return c_.fd; }

  // Waits up to `idle` for the next request's first byte; false on timeout, end or a cut.
  bool wait_request(std::chrono::milliseconds idle) {
    if (pos_ < end_) return true;
    return wait_for(c_.fd, POLLIN, int(idle.count())) && c_.cut.load() == Cut::None;
  }
  // A new request: its head and body must arrive by `deadline`.
  void begin_request(Clock::time_point deadline) {
    deadline_ = deadline;
    head_bytes_ = head_lines_ = body_bytes_ = 0;
    written_ = 0;
  }
  void enter(Phase p) { phase_ = p; }
  size_t written() const { return written_; }

 private:
  // The body on the wire: the payload limit plus room for a chunked body's framing.
  size_t body_wire_limit() const { return 2 * limits_.max_body_bytes + (64u << 10); }

  bool under_deadline() const { return phase_ == Phase::Head || phase_ == Phase::Body; }
  int deadline_ms() const { return under_deadline() ? ms_until(deadline_) : 1 << 30; }

  ssize_t cut(Cut why) {
    Cut none = Cut::None;
    c_.cut.compare_exchange_strong(none, why);  // an earlier cut (evicted, stopping) stays
    return -1;
  }

  // Refills the buffer; false at the end, on an error, or when the deadline or timeout passed.
  bool fill() {
    for (;;) {
      if (c_.cut.load() != Cut::None) return false;
      int timeout = int(limits_.io_timeout.count());
      bool deadline_first = false;
      if (under_deadline()) {
        int left = ms_until(deadline_);
        if (left == 0) {
          cut(Cut::Deadline);
          return false;
        }
        deadline_first = left < timeout;
        timeout = std::min(timeout, left);
      }
      if (!wait_for(c_.fd, POLLIN, timeout)) {
        if (deadline_first) continue;  // the top of the loop says whether it has passed
        return false;
      }
      ssize_t n = ::recv(c_.fd, buf_, sizeof buf_, MSG_DONTWAIT);
      if (n > 0) {
        pos_ = 0;
        end_ = size_t(n);
        return true;
      }
      if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) return false;
    }
  }

  Connection& c_;
  const HttpLimits& limits_;
  Phase phase_ = Phase::Idle;
  Clock::time_point deadline_ = Clock::now();
  size_t head_bytes_ = 0, head_lines_ = 0, body_bytes_ = 0, written_ = 0;
  char buf_[4096];
  size_t pos_ = 0, end_ = 0;
};

void HttpConnection::enter(Phase p) {
  table_.enter(entry_, p);
  stream_.enter(p);
}

HttpConnection* current_http_connection() { return current; }

ApiError cut_error(Cut cut, const HttpLimits& l) {
  switch (cut) {
    case Cut::HeadTooLarge:
      return ApiError(
          431,
          "the request line and headers are larger than the limit of " + std::to_string(l.max_head_bytes) + " bytes",
          "invalid_request_error", "", "headers_too_large");
    case Cut::TooManyHeaderLines:
      return ApiError(431, "the request has more than " + std::to_string(l.max_header_lines) + " header lines",
                      "invalid_request_error", "", "headers_too_large");
    case Cut::BodyTooLarge:
      return ApiError(413,
                      "the request body is larger than the limit of " + std::to_string(l.max_body_bytes) + " bytes",
                      "invalid_request_error", "", "request_too_large");
    case Cut::Deadline:
      return ApiError(408,
                      "the request's headers and body did not arrive within " + seconds_text(l.request_timeout) +
                          " s of its first byte",
                      "invalid_request_error", "", "request_timeout");
    case Cut::Evicted:
      return ApiError(408,
                      "the connection was closed to make room for others: its request was arriving slowly while "
                      "the server had its maximum of connections",
                      "invalid_request_error", "", "request_timeout");
    case Cut::Stopping: return ApiError(503, "the server is shutting down", "unavailable_error", "", "shutting_down");
    case Cut::None: break;
  }
  return ApiError(400, "bad request");
}

namespace {

// An answer written without httplib: for connections refused at the door, and requests cut before
// httplib wrote anything. Best effort (the socket may already be gone).
void write_plain(httplib::Stream& s, const ApiError& e) {
  std::string body = error_body(e);
  std::string head = "HTTP/1.1 " + std::to_string(e.status) + " " + reason_phrase(e.status) +
                     "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
                     "\r\nConnection: close\r\n" + (e.status == 503 ? "Retry-After: 1\r\n" : "") + "\r\n";
  std::string all = head + body;
  for (size_t off = 0; off < all.size();) {
    ssize_t n = s.write(all.data() + off, all.size() - off);
    if (n <= 0) return;
    off += size_t(n);
  }
}

}  // namespace

GuardedHttpServer::GuardedHttpServer(HttpLimits limits) : limits_(limits), table_(limits.connections), closer_() {
  size_t threads = limits_.connections.total + kRefusalThreads;
  new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  set_payload_max_length(limits_.max_body_bytes);
  set_keep_alive_max_count(limits_.keep_alive_requests);
}

int GuardedHttpServer::bind(const std::string& host, int port) {
  int bound = port == 0 ? bind_to_any_port(host) : bind_to_port(host, port) ? port : -1;
  if (bound > 0) ::listen(svr_sock_, SOMAXCONN);
  return bound;
}

bool GuardedHttpServer::process_and_close_socket(socket_t sock) {
  std::string why;
  auto entry = table_.admit(sock, peer_address(sock), why);
  if (!entry) {
    Connection door(sock, "");
    HttpLimits quick = limits_;
    quick.io_timeout = std::chrono::milliseconds(100);  // a refusal never waits on the client
    GuardedStream s(door, quick);
    char buf[4096];  // what the client has sent so far: read, so that the close is not a reset
    for (int i = 0; i < 16 && ::recv(sock, buf, sizeof buf, MSG_DONTWAIT) > 0; ++i) {
    }
    write_plain(s, ApiError(503, why + "; retry later", "unavailable_error", "", "too_many_connections"));
    closer_.close(sock);
    return false;
  }
  GuardedStream strm(*entry, limits_);
  HttpConnection conn(table_, *entry, strm);
  current = &conn;
  bool ok = false;
  for (size_t left = limits_.keep_alive_requests; left > 0 && svr_sock_ != INVALID_SOCKET; --left) {
    conn.enter(Phase::Idle);
    if (!strm.wait_request(limits_.idle_timeout)) break;
    conn.enter(Phase::Head);
    strm.begin_request(Clock::now() + limits_.request_timeout);
    bool closed = false;
    ok = process_request(strm, left == 1, closed, nullptr);
    Cut cut = entry->cut.load();
    // Cut before httplib answered (while it read the request line): the answer comes from here.
    if (!ok && strm.written() == 0 && cut != Cut::None && cut != Cut::Stopping)
      write_plain(strm, cut_error(cut, limits_));
    if (!ok || closed || conn.closing() || cut != Cut::None) break;
  }
  current = nullptr;
  table_.release(*entry);
  if (entry->cut.load() == Cut::Stopping)
    ::close(sock);
  else
    closer_.close(sock);
  return ok;
}

}  // namespace wgc::server
