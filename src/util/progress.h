// Progress: a one-line progress bar on stderr for long operations (loading a model, uploading
// weights). It draws only when stderr is a terminal and the operation has already taken more than
// `delay` (0.5 s by default), so quick runs and logs/pipes stay clean. WGC_PROGRESS=0 turns it off,
// WGC_PROGRESS=1 draws even when stderr is not a terminal. Safe to advance from several threads.
//
//   wgc::Progress bar("loading model.gguf", total_bytes, wgc::Progress::Unit::Bytes);
//   for (...) { ...; bar.add(n); }
//   bar.finish();  // or let the destructor do it
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

namespace wgc {

class Progress {
 public:
  enum class Unit { Items, Bytes };

  Progress(std::string label, uint64_t total, Unit unit = Unit::Items,
           std::chrono::milliseconds delay = std::chrono::milliseconds(500));
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void add(uint64_t n);  // n more units done
  void set(uint64_t done);
  // Draws the final state (if the bar was ever shown) and ends the line. Idempotent.
  void finish();

  uint64_t done() const { return done_.load(std::memory_order_relaxed); }
  bool shown() const { return shown_; }

  // Whether bars are drawn at all in this process (stderr a TTY, or WGC_PROGRESS=1; not
  // WGC_PROGRESS=0).
  static bool enabled();

  // The line that would be drawn (for tests): "label  [#####     ]  42%  1.2/2.9 GB  3.1 s".
  std::string render(uint64_t done, double seconds, int width = 30) const;

 private:
  void maybe_draw(bool force);

  std::string label_;
  uint64_t total_;
  Unit unit_;
  std::chrono::steady_clock::duration delay_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_{};
  std::atomic<uint64_t> done_{0};
  std::mutex mu_;
  bool enabled_;
  bool shown_ = false;
  bool finished_ = false;
};

}  // namespace wgc
