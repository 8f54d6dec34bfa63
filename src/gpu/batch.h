// Batch: records many dispatches and copies and sends them in one submit. Storage tensors bind
// to @binding(0..n-1) of @group(0) in the order given; the parameter block, if any, binds as a
// uniform at @binding(n).
#pragma once

#include "gpu/context.h"
#include "gpu/kernel.h"
#include "gpu/tensor.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace wgc {

// Workgroup counts of a dispatch.
struct Groups {
  uint32_t x = 1, y = 1, z = 1;
};

// Groups for n workgroups laid out in x, spilling into y past the per-dimension limit.
// Kernels recover the linear index as wid.x + wid.y * nwg.x (and must skip indices >= n).
Groups groups_1d(const Context& ctx, uint64_t n);
inline uint32_t ceil_div(uint64_t a, uint64_t b) { return static_cast<uint32_t>((a + b - 1) / b); }

// A binding: a whole tensor, or a byte range of one.
struct Arg {
  Tensor tensor;
  uint64_t offset = 0;
  uint64_t size = 0;                       // 0: to the end of the data
  Arg(Tensor t) : tensor(std::move(t)) {}  // NOLINT: implicit on purpose, args read as tensors
  Arg(Tensor t, uint64_t off, uint64_t sz) : tensor(std::move(t)), offset(off), size(sz) {}
};

// A kernel's uniform parameter block, built from plain values (each 4 bytes: u32, i32, f32).
class Params {
 public:
  Params() = default;
  template <class... T>
  explicit Params(T... v) {
    (push(v), ...);
  }
  template <class T>
  Params& push(T v) {
    static_assert(sizeof(T) == 4, "params are 4-byte scalars (u32, i32, f32)");
    size_t at = bytes_.size();
    bytes_.resize(at + 4);
    std::memcpy(bytes_.data() + at, &v, 4);
    return *this;
  }
  std::span<const std::byte> bytes() const { return bytes_; }
  bool empty() const { return bytes_.empty(); }

 private:
  std::vector<std::byte> bytes_;
};

// Data on its way back to the host: Batch::read records the copy, the batch's submit asks for the
// mapping, and wait() blocks until the bytes are here. The host can record and submit more work
// in between (a decode loop records the next token while the GPU runs this one).
class Readback {
 public:
  Readback() = default;
  std::span<const std::byte> wait() const;    // blocks on the first call; the bytes stay valid
  void wait(std::span<std::byte> out) const;  // the same into out (then wait() has no bytes to give)
  template <class T>
  T value(size_t i = 0) const {
    T v;
    std::memcpy(&v, wait().data() + i * sizeof(T), sizeof(T));
    return v;
  }
  explicit operator bool() const { return state_ != nullptr; }

  struct State;

 private:
  State& submitted() const;  // the state, once its batch was submitted (else throws)
  std::shared_ptr<State> state_;
  friend class Batch;
};

struct DispatchTiming {
  std::string label;
  double ms = 0;
};

// Dispatches and copies fixed for replay (Batch::freeze): their bind groups made and their
// parameter blocks uploaded once, so that recording them again (Batch::replay) costs only the
// encoder's calls. A decode step whose position comes from a buffer is the same every token.
// Holds its tensors; copyable (shared).
class Recording {
 public:
  Recording() = default;
  size_t dispatches() const;
  explicit operator bool() const { return impl_ != nullptr; }

  struct Impl;

 private:
  std::shared_ptr<const Impl> impl_;
  friend class Batch;
};

class Batch {
 public:
  // timed: put each dispatch in its own pass with timestamp writes (needs the feature).
  explicit Batch(Context ctx, bool timed = false);
  ~Batch();
  Batch(Batch&&) noexcept;
  Batch& operator=(Batch&&) noexcept;

  void dispatch(const Kernel& k, std::vector<Arg> args, const Params& params, Groups groups);
  void copy(const Tensor& src, uint64_t src_offset, const Tensor& dst, uint64_t dst_offset, uint64_t bytes);
  // Copies `bytes` of src at `offset` (after the work recorded before) back to the host.
  Readback read(const Tensor& src, uint64_t offset, uint64_t bytes);
  // Turns what was recorded (dispatches, copies and replays; no reads) into a Recording and
  // empties the batch. Not for timed batches or after submit().
  Recording freeze();
  // Records a recording's commands, in order, after what was recorded before.
  void replay(const Recording& r);

  // Encodes what was recorded into a command buffer now (the host's share of a submit, minus the
  // submit itself), so that a later submit() costs less: work can be encoded ahead, e.g. while the
  // GPU runs the previous batch. Buffers may still be mapped when encoding; they must be unmapped
  // by submit(). Nothing can be recorded after it.
  void encode();
  void submit();  // encodes everything (unless encode() did) and submits; returns without waiting
  void wait();    // waits for the submitted work and, if timed, reads the timestamps
  void run() {
    submit();
    wait();
  }

  const Context& context() const;
  size_t size() const;
  bool timed() const;  // asked for, or WGC_PROFILE, on a device with timestamps
  // Times the whole batch on the GPU, from before its first command to after its last, with one
  // pair of timestamps around it (its passes stay merged, unlike a timed batch's): after wait(),
  // timings() holds one entry and total_ms() is that time. Without timestamp queries (or in a
  // timed batch) it does nothing.
  void time_span();
  // Per-dispatch GPU time, in the order recorded (after wait(), timed batches only).
  const std::vector<DispatchTiming>& timings() const;
  double total_ms() const;  // sum of timings()

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Records, submits and waits for one dispatch.
void run(const Context& ctx, const Kernel& k, std::vector<Arg> args, const Params& params, Groups groups);

}  // namespace wgc
