// Internal: what a Context handle points to (`cmake --install` leaves it out); ops and runtime
// files use it.
#pragma once

#include "gpu/context.h"
#include "util/error.h"

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

namespace wgc::detail {

struct ContextState {
  ContextOptions options;
  AdapterInfo info;
  Features features;
  Limits limits;

  WGPUInstance instance = nullptr;
  WGPUAdapter adapter = nullptr;
  WGPUDevice device = nullptr;
  WGPUQueue queue = nullptr;

  // Set (once) from Dawn's callbacks when the device is lost; read without the lock by the
  // checks that turn a failed call into DeviceLost.
  std::atomic<bool> lost{false};
  bool releasing = false;  // the destructor destroys the device: that is no loss

  std::mutex mu;  // guards everything below
  std::string lost_message;
  std::string uncaptured_error;

  std::unordered_map<std::string, WGPUComputePipeline> pipelines;        // by kernel key
  std::unordered_map<WGPUComputePipeline, WGPUBindGroupLayout> layouts;  // group 0 of each pipeline
  // Bind groups by (layout, entries): a decode step binds the same buffers at the same offsets
  // every token, and creating hundreds of bind groups per token costs more host time than the
  // dispatches. Cleared whole when it reaches kMaxBindGroups (it keeps its buffers alive).
  // A buffer that is destroyed takes its bind groups with it (forget_buffer).
  static constexpr size_t kMaxBindGroups = 8192;
  struct CachedBindGroup {
    WGPUBindGroup group = nullptr;
    std::vector<WGPUBuffer> buffers;
  };
  std::unordered_map<std::string, CachedBindGroup> bind_groups;
  void clear_bind_groups();               // caller holds mu
  void forget_buffer(WGPUBuffer buffer);  // caller holds mu: drops the bind groups using it

  // Free buffers by (usage, size); Tensor storage returns here instead of being destroyed.
  std::multimap<std::pair<uint64_t, uint64_t>, WGPUBuffer> free_buffers;
  uint64_t free_bytes = 0;
  // Every buffer created and not yet destroyed (in use or pooled), for leak checks.
  uint64_t allocated_buffers = 0, allocated_bytes = 0;

  ContextState() = default;
  ContextState(const ContextState&) = delete;
  ContextState& operator=(const ContextState&) = delete;
  ~ContextState();
};

inline uint64_t round_up(uint64_t n, uint64_t a) { return (n + a - 1) / a * a; }

// A pooled GPU buffer; returns to its context's pool when the last owner lets go. Safe even with
// work in flight: WebGPU orders every later write after the work already submitted.
struct BufferHandle {
  std::shared_ptr<ContextState> state;
  WGPUBuffer buffer = nullptr;
  uint64_t size = 0;
  uint64_t usage = 0;
  ~BufferHandle();
};

std::shared_ptr<BufferHandle> acquire_buffer(const std::shared_ptr<ContextState>& st, uint64_t bytes, uint64_t usage,
                                             std::string_view label);

std::string to_string(WGPUStringView s);
WGPUStringView view(std::string_view s);

// Blocks on a future from a WaitAnyOnly callback; `what` names it in the error on time-out.
void wait_future(WGPUInstance instance, WGPUFuture future, std::string_view what);
// Whether a context on a GPU adapter owns this instance (WaitMode::Auto polls there before it
// sleeps); the context's state says so once its device exists, and takes it back when released.
void note_gpu_instance(WGPUInstance instance, bool gpu);

// One wgpuBufferMapAsync in flight (staging uploads, readbacks, timestamps): start() asks for the
// mapping, wait() blocks until it is done and throws GpuError("<failed>: <Dawn's message>") if it
// failed. The callback writes into this object, so it must stay where it is until wait() returns.
class BufferMap {
 public:
  BufferMap() = default;
  BufferMap(const BufferMap&) = delete;
  BufferMap& operator=(const BufferMap&) = delete;

  void start(WGPUBuffer buffer, WGPUMapMode mode, uint64_t bytes);
  // Blocks until the callback has run (`what` names the wait in a time-out error).
  void wait(WGPUInstance instance, std::string_view what);
  // Throws unless the mapping succeeded; call after wait().
  void check(std::string_view failed) const;

 private:
  WGPUFuture future_{};
  WGPUMapAsyncStatus status_ = WGPUMapAsyncStatus_Error;
  std::string message_;
};

// Throws DeviceLost (naming Dawn's reason) when the context's device is lost.
void throw_if_lost(ContextState& s);
// Runs f; if it throws while (or because) the device is lost, DeviceLost instead of f's error (a
// failed mapping or a wait that gave up says less than that).
template <class F>
auto lost_checked(ContextState& s, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const DeviceLost&) {
    throw;
  } catch (const Error&) {
    throw_if_lost(s);
    throw;
  }
}

// Loses the device on purpose (Dawn's wgpuDeviceForceLoss), as a driver reset would: for tests of
// what survives a lost device. With WGC_INJECT_DEVICE_LOSS=PATH in the environment, the first
// queue submit that finds the file PATH removes it and loses the device: a test loses the device
// of a running process (a server under load) by creating the file.
void force_device_loss(ContextState& s, std::string_view why);
// Batch::submit's count of submits, for WGC_INJECT_DEVICE_LOSS.
void note_submit(ContextState& s);

// Runs f with Dawn validation and out-of-memory errors captured; throws GpuError naming `what`
// if either occurred.
template <class F>
auto with_error_scope(ContextState& s, std::string_view what, F&& f) -> decltype(f());
void push_error_scopes(ContextState& s);
void pop_error_scopes(ContextState& s, std::string_view what);

template <class F>
auto with_error_scope(ContextState& s, std::string_view what, F&& f) -> decltype(f()) {
  push_error_scopes(s);
  struct Popper {  // pops without throwing if f throws, so the scope stack stays balanced
    ContextState& s;
    bool armed = true;
    ~Popper() {
      if (armed) pop_error_scopes(s, {});
    }
  } popper{s};
  if constexpr (std::is_void_v<decltype(f())>) {
    f();
    popper.armed = false;
    pop_error_scopes(s, what);
  } else {
    auto r = f();
    popper.armed = false;
    pop_error_scopes(s, what);
    return r;
  }
}

}  // namespace wgc::detail
