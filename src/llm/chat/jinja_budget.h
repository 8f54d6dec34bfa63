// The accounting of one render against its Limits: steps of work, nesting depth, the size of
// each string and list built. The render running on this thread makes its Budget active, so
// value operations (printing, comparing) charge it too; outside a render they check the default
// limits and count no steps.
#pragma once

#include "llm/chat/jinja.h"

#include <cstdint>
#include <string>
#include <unordered_set>

namespace wgc::llm::jinja {

// Text costs one step per this many bytes built or scanned.
inline constexpr size_t kBytesPerStep = 64;

class Budget {
 public:
  explicit Budget(const Limits& limits) : limits_(limits) {}
  Budget(const Budget&) = delete;
  Budget& operator=(const Budget&) = delete;

  const Limits& limits() const { return limits_; }

  void steps(uint64_t n) {
    steps_ += n;
    if (steps_ > limits_.steps) exceeded_steps();
  }
  void bytes(size_t n) { steps(n / kBytesPerStep + 1); }

  // One level deeper while the guard lives.
  class Nest {
   public:
    explicit Nest(Budget& b) : b_(b) {
      if (++b_.depth_ > b_.limits_.depth) b_.exceeded_depth();
    }
    ~Nest() { --b_.depth_; }
    Nest(const Nest&) = delete;
    Nest& operator=(const Nest&) = delete;

   private:
    Budget& b_;
  };

  // Containers that are (or were) an element of another list or dict: only those can close a
  // cycle when something is put into them (check_no_cycle). A freed address reused by a new
  // container only costs that check a walk.
  void note_contained(const void* container) {
    if (container) contained_.insert(container);
  }
  bool is_contained(const void* container) const { return contained_.count(container) != 0; }

  // The budget of the render running on this thread (nullptr outside a render).
  static Budget* active();

  // Makes a budget the active one for its lifetime (renders nest: the previous one comes back).
  class Activate {
   public:
    explicit Activate(Budget& b);
    ~Activate();
    Activate(const Activate&) = delete;
    Activate& operator=(const Activate&) = delete;

   private:
    Budget* prev_;
  };

 private:
  [[noreturn]] void exceeded_steps() const;
  [[noreturn]] void exceeded_depth() const;

  Limits limits_;
  uint64_t steps_ = 0;
  size_t depth_ = 0;
  std::unordered_set<const void*> contained_;
};

// The active render's limits, or the defaults.
const Limits& active_limits();
// Charges the active render (nothing outside a render).
void charge_steps(uint64_t n);
void charge_bytes(size_t n);
// ValueError when a string of `bytes` / a list of `items` would exceed the active limits;
// `what` names the operation ("string repetition", "join", ...).
void check_string_size(size_t bytes, const char* what);
void check_list_size(size_t items, const char* what);
// ValueError "nesting deeper than N" when depth exceeds the active limit.
void check_depth(size_t depth, const char* what);

}  // namespace wgc::llm::jinja
