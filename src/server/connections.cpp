#include "server/connections.h"

#include <sys/socket.h>

namespace wgc::server {

const char* to_string(Cut c) {
  switch (c) {
    case Cut::None: return "none";
    case Cut::HeadTooLarge: return "head_too_large";
    case Cut::TooManyHeaderLines: return "too_many_header_lines";
    case Cut::BodyTooLarge: return "body_too_large";
    case Cut::Deadline: return "deadline";
    case Cut::Evicted: return "evicted";
    case Cut::Stopping: return "stopping";
  }
  return "?";
}

std::shared_ptr<Connection> ConnectionTable::admit(int fd, std::string address, std::string& why) {
  std::lock_guard lock(mu_);
  if (closing_) {
    why = "the server is shutting down";
    ++refused_;
    return nullptr;
  }
  // Connections already cut are on their way out: they do not count.
  size_t live = 0, same = 0;
  for (const auto& [_, c] : open_) {
    if (c->cut.load() != Cut::None) continue;
    ++live;
    same += c->address == address;
  }
  auto now = Clock::now();
  if (same >= limits_.per_client && !evict_one(address, now)) {
    why = "too many connections from " + address + " (at most " + std::to_string(limits_.per_client) +
          " per client, none of them idle or slow)";
    ++refused_;
    return nullptr;
  }
  if (same >= limits_.per_client) --live;  // one of them was just cut
  if (live >= limits_.total && !evict_one({}, now)) {
    why = "too many connections (at most " + std::to_string(limits_.total) + ", none of them idle or slow)";
    ++refused_;
    return nullptr;
  }
  auto c = std::make_shared<Connection>(fd, std::move(address));
  open_[fd] = c;
  return c;
}

bool ConnectionTable::evict_one(const std::string& address, Clock::time_point now) {
  Connection* victim = nullptr;
  for (const auto& [_, c] : open_) {
    if (c->cut.load() != Cut::None || c->phase == Phase::Handling) continue;
    if (!address.empty() && c->address != address) continue;
    if (now - c->since < limits_.evictable_after) continue;
    if (!victim || c->since < victim->since) victim = c.get();
  }
  if (!victim) return false;
  victim->cut = Cut::Evicted;
  // Only the reading side: its thread wakes with end-of-file and can still answer why.
  ::shutdown(victim->fd, SHUT_RD);
  ++evicted_;
  return true;
}

void ConnectionTable::enter(Connection& c, Phase p) {
  std::lock_guard lock(mu_);
  c.phase = p;
  c.since = Clock::now();
}

void ConnectionTable::release(const Connection& c) {
  std::lock_guard lock(mu_);
  open_.erase(c.fd);
}

void ConnectionTable::close_all() {
  std::lock_guard lock(mu_);
  closing_ = true;
  for (const auto& [fd, c] : open_) {
    Cut none = Cut::None;
    c->cut.compare_exchange_strong(none, Cut::Stopping);
    ::shutdown(fd, SHUT_RDWR);
  }
}

ConnectionTable::Counts ConnectionTable::counts() const {
  std::lock_guard lock(mu_);
  return {open_.size(), refused_, evicted_};
}

}  // namespace wgc::server
