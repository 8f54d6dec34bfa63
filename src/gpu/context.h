// Context: one WebGPU instance, adapter, device and queue, plus the caches that hang off them
// (pipelines, buffer pool). A Context is a cheap handle: copies share one device.
#pragma once

#include "gpu/webgpu_api.h"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace wgc {

// Which Vulkan adapter to use. Auto: a real GPU if Vulkan offers one, else SwiftShader (CPU).
// Null exists only so tests can check that Dawn's Null backend is refused.
enum class Backend { Auto, Gpu, CpuVulkan, Null };

Backend parse_backend(std::string_view name);  // "auto", "gpu", "cpu-vulkan"; throws on others
std::string_view to_string(Backend b);

struct ContextOptions {
  Backend backend = Backend::Auto;  // WGC_BACKEND overrides Auto
  // Dawn validation on and the performance toggles off (WGC_DEBUG=1 sets it too).
  bool debug = false;
  // Keep Dawn's bounds-checking of buffer accesses. wgc's own kernels are vetted to stay in
  // bounds, so it is off by default; turn it on when running untrusted WGSL.
  bool robust = false;
  // >= 0: the adapter at this index among those the backend offers (list_adapters), instead of
  // Dawn's pick; for one process per GPU on a multi-GPU host.
  int adapter_index = -1;
};

struct Features {
  bool subgroups = false;
  bool timestamp_query = false;
  bool timestamp_inside_passes = false;
  bool shader_f16 = false;
  bool subgroup_matrix = false;
};

struct Limits {
  uint64_t max_storage_buffer_binding_size = 0;
  uint64_t max_buffer_size = 0;
  uint64_t max_uniform_buffer_binding_size = 0;
  uint32_t max_storage_buffers_per_shader_stage = 0;
  uint32_t max_compute_workgroup_storage_size = 0;
  uint32_t max_compute_invocations_per_workgroup = 0;
  uint32_t max_compute_workgroup_size_x = 0;
  uint32_t max_compute_workgroup_size_y = 0;
  uint32_t max_compute_workgroup_size_z = 0;
  uint32_t max_compute_workgroups_per_dimension = 0;
  uint32_t min_storage_buffer_offset_alignment = 0;
  uint32_t min_uniform_buffer_offset_alignment = 0;
};

struct AdapterInfo {
  std::string vendor, architecture, device, description;
  std::string backend;       // "vulkan", "null", ...
  std::string adapter_type;  // "discrete-gpu", "integrated-gpu", "cpu", "unknown"
  uint32_t vendor_id = 0, device_id = 0;
  uint32_t subgroup_min_size = 0, subgroup_max_size = 0;
  bool is_cpu() const { return adapter_type == "cpu"; }
};

namespace detail {
struct ContextState;
}

class Context {
 public:
  explicit Context(ContextOptions options = {});

  const AdapterInfo& adapter() const;
  const Features& features() const;
  const Limits& limits() const;
  const ContextOptions& options() const;

  WGPUInstance instance() const;
  WGPUDevice device() const;
  WGPUQueue queue() const;

  // Throws DeviceLost if the device was lost, or GpuError if Dawn reported an error that no
  // error scope caught (the message names the operation that was running).
  void check() const;
  // Whether the device was lost (a driver reset, the GPU reclaimed, an internal error): then every
  // call on this context and what was made on it throws DeviceLost; a new Context can take over.
  bool lost() const;

  // Blocks until all submitted work is done.
  void wait_idle() const;

  detail::ContextState& state() const { return *state_; }
  const std::shared_ptr<detail::ContextState>& shared_state() const { return state_; }

 private:
  std::shared_ptr<detail::ContextState> state_;
};

// How the host waits for the GPU (readbacks, mappings, the queue): Block sleeps in Dawn's timed
// wait (the driver's fence wait); Spin polls (wgpuInstanceWaitAny with a zero timeout) in a loop,
// keeping a core busy to wake as soon as the work is done; Auto (the default) polls for up to
// kAutoSpinUs on a GPU adapter, then sleeps, and sleeps at once on a CPU adapter (SwiftShader's
// threads need the cores a poll would take). A fence wait wakes 50-200 us late on the H200, which
// is a fifth of a MobileNetV2 inference at batch 1 (docs/history/benchmarks-cnn.md). Process-wide; the
// environment variable WGC_WAIT=auto|spin|block sets the default.
enum class WaitMode { Auto, Block, Spin };
inline constexpr uint32_t kAutoSpinUs = 3000;
void set_wait_mode(WaitMode m);
WaitMode wait_mode();

// The adapters a backend offers, in the driver's order (what ContextOptions::adapter_index counts):
// for Auto the GPUs, or the CPU adapter when there is no GPU; for Gpu the GPUs; for CpuVulkan the
// CPU adapters.
std::vector<AdapterInfo> list_adapters(Backend backend = Backend::Auto);

// Info about the adapter that ContextOptions would pick, with features and limits.
std::string describe(const Context& ctx, bool json);

}  // namespace wgc
