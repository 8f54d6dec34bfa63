#include "util/progress.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace wgc {
namespace {

std::string human(uint64_t v, Progress::Unit unit) {
  char buf[32];
  if (unit == Progress::Unit::Items) {
    std::snprintf(buf, sizeof buf, "%llu", static_cast<unsigned long long>(v));
    return buf;
  }
  const char* units[] = {"B", "KB", "MB", "GB", "TB"};
  double x = double(v);
  int u = 0;
  while (x >= 1000 && u < 4) {
    x /= 1000;
    ++u;
  }
  std::snprintf(buf, sizeof buf, u ? "%.1f %s" : "%.0f %s", x, units[u]);
  return buf;
}

}  // namespace

bool Progress::enabled() {
  const char* e = std::getenv("WGC_PROGRESS");
  if (e && std::strcmp(e, "0") == 0) return false;
  if (e && std::strcmp(e, "1") == 0) return true;
  return ::isatty(STDERR_FILENO) == 1;
}

Progress::Progress(std::string label, uint64_t total, Unit unit, std::chrono::milliseconds delay)
    : label_(std::move(label)),
      total_(total),
      unit_(unit),
      delay_(delay),
      start_(std::chrono::steady_clock::now()),
      enabled_(enabled()) {}

Progress::~Progress() { finish(); }

void Progress::add(uint64_t n) {
  done_.fetch_add(n, std::memory_order_relaxed);
  if (enabled_) maybe_draw(false);
}

void Progress::set(uint64_t d) {
  done_.store(d, std::memory_order_relaxed);
  if (enabled_) maybe_draw(false);
}

void Progress::finish() {
  std::lock_guard lock(mu_);
  if (finished_) return;
  finished_ = true;
  if (!shown_) return;
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::string line = render(done(), s);
  std::fprintf(stderr, "\r%s\x1b[K\n", line.c_str());
  std::fflush(stderr);
}

std::string Progress::render(uint64_t d, double seconds, int width) const {
  std::string out = label_ + "  [";
  double frac = total_ ? std::min(1.0, double(d) / double(total_)) : 1.0;
  int fill = int(frac * width + 0.5);
  out.append(size_t(fill), '#');
  out.append(size_t(width - fill), ' ');
  char buf[96];
  std::snprintf(buf, sizeof buf, "] %3d%%  %s/%s  %.1f s", int(frac * 100), human(d, unit_).c_str(),
                human(total_, unit_).c_str(), seconds);
  return out + buf;
}

void Progress::maybe_draw(bool force) {
  auto now = std::chrono::steady_clock::now();
  if (!force && now - start_ < delay_) return;
  std::unique_lock lock(mu_, std::try_to_lock);
  if (!lock.owns_lock() || finished_) return;
  if (!force && shown_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  shown_ = true;
  std::string line = render(done(), std::chrono::duration<double>(now - start_).count());
  std::fprintf(stderr, "\r%s\x1b[K", line.c_str());
  std::fflush(stderr);
}

}  // namespace wgc
