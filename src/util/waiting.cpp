#include "util/waiting.h"

#include "util/progress.h"

#include <chrono>
#include <cstdio>

namespace wgc {

Waiting::Waiting(std::string label, std::string estimate) : label_(std::move(label)), estimate_(std::move(estimate)) {
  const std::string tail = estimate_.empty() ? "" : " (" + estimate_ + ")";
  if (!Progress::enabled()) {
    std::fprintf(stderr, "%s...%s\n", label_.c_str(), tail.c_str());
    return;
  }
  ticker_ = std::thread([this, tail] {
    const auto t0 = std::chrono::steady_clock::now();
    std::unique_lock lock(mu_);
    for (;;) {
      const long s = long(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      // One row of an 80-column terminal: a longer line would wrap, and \r would clear only its end.
      std::string line = label_ + ": " + std::to_string(s) + " s" + tail;
      if (line.size() > 79) line.resize(79);
      std::fprintf(stderr, "\r\033[K%s", line.c_str());
      std::fflush(stderr);
      if (cv_.wait_for(lock, std::chrono::seconds(1), [this] { return done_; })) break;
    }
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
  });
}

Waiting::~Waiting() {
  {
    std::lock_guard lock(mu_);
    done_ = true;
  }
  cv_.notify_all();
  if (ticker_.joinable()) ticker_.join();
}

}  // namespace wgc
