#include "gpu/context.h"

#include <algorithm>

#include "gpu/context_state.h"
#include "gpu/webgpu_abi.h"
#include "util/error.h"
#include "util/install_dirs.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <sstream>
#include <vector>

namespace wgc {
namespace detail {

std::string to_string(WGPUStringView s) {
  if (!s.data) return {};
  return s.length == WGPU_STRLEN ? std::string(s.data) : std::string(s.data, s.length);
}

WGPUStringView view(std::string_view s) { return {s.data(), s.size()}; }

namespace {
// set_wait_mode's setting, from WGC_WAIT at first use.
std::atomic<int>& wait_mode_flag() {
  static std::atomic<int> mode{[] {
    const char* e = std::getenv("WGC_WAIT");
    std::string_view v = e ? e : "";
    if (!v.empty() && v != "auto" && v != "spin" && v != "block")
      throw Error("wgc: WGC_WAIT is '" + std::string(v) + "'; it takes auto, spin or block");
    return v == "spin" ? int(WaitMode::Spin) : v == "block" ? int(WaitMode::Block) : int(WaitMode::Auto);
  }()};
  return mode;
}

// The instances whose context runs on a GPU adapter (each Context has its own instance): WaitMode
// Auto polls before it sleeps only there.
std::mutex& gpu_instances_mu() {
  static std::mutex mu;
  return mu;
}
std::vector<WGPUInstance>& gpu_instances() {
  static std::vector<WGPUInstance> v;
  return v;
}
bool on_gpu(WGPUInstance instance) {
  std::lock_guard lock(gpu_instances_mu());
  return std::find(gpu_instances().begin(), gpu_instances().end(), instance) != gpu_instances().end();
}
}  // namespace

void note_gpu_instance(WGPUInstance instance, bool gpu) {
  std::lock_guard lock(gpu_instances_mu());
  auto& v = gpu_instances();
  v.erase(std::remove(v.begin(), v.end(), instance), v.end());
  if (gpu) v.push_back(instance);
}

void wait_future(WGPUInstance instance, WGPUFuture future, std::string_view what) {
  WGPUFutureWaitInfo info{future, false};
  // A generous bound: long enough for any real kernel on SwiftShader, short enough that a hung
  // device turns into an error instead of a hang.
  constexpr uint64_t kTimeoutNs = 600ull * 1000 * 1000 * 1000;
  WGPUWaitStatus st = WGPUWaitStatus_TimedOut;
  auto mode = WaitMode(wait_mode_flag().load(std::memory_order_relaxed));
  auto poll_for = [&](std::chrono::nanoseconds budget) {
    auto deadline = std::chrono::steady_clock::now() + budget;
    for (uint32_t polls = 0;; ++polls) {
      st = wgpuInstanceWaitAny(instance, 1, &info, 0);
      if (st != WGPUWaitStatus_TimedOut || info.completed) return true;
      if (polls % 64 == 63 && std::chrono::steady_clock::now() > deadline) return false;
    }
  };
  // Spin polls to the bound; Auto polls a while on a GPU, then (as Block at once) sleeps.
  const bool done = mode == WaitMode::Spin ? poll_for(std::chrono::nanoseconds(kTimeoutNs))
                                           : mode == WaitMode::Auto && on_gpu(instance) &&
                                                 poll_for(std::chrono::microseconds(kAutoSpinUs));
  if (!done && mode != WaitMode::Spin) st = wgpuInstanceWaitAny(instance, 1, &info, kTimeoutNs);
  if (st != WGPUWaitStatus_Success || !info.completed)
    throw DeviceError("wgc: waiting for " + std::string(what) + " failed (status " +
                      std::to_string(static_cast<int>(st)) + ")");
}

void BufferMap::start(WGPUBuffer buffer, WGPUMapMode mode, uint64_t bytes) {
  WGPUBufferMapCallbackInfo cb = WGPU_BUFFER_MAP_CALLBACK_INFO_INIT;
  cb.mode = WGPUCallbackMode_WaitAnyOnly;
  cb.callback = [](WGPUMapAsyncStatus st, WGPUStringView msg, void* u, void*) {
    auto* self = static_cast<BufferMap*>(u);
    self->status_ = st;
    self->message_ = to_string(msg);
  };
  cb.userdata1 = this;
  status_ = WGPUMapAsyncStatus_Error;
  message_.clear();
  future_ = wgpuBufferMapAsync(buffer, mode, 0, bytes, cb);
}

void BufferMap::wait(WGPUInstance instance, std::string_view what) { wait_future(instance, future_, what); }

void BufferMap::check(std::string_view failed) const {
  if (status_ != WGPUMapAsyncStatus_Success)
    throw GpuError("wgc: " + std::string(failed) + (message_.empty() ? "" : ": " + message_));
}

void throw_if_lost(ContextState& s) {
  if (!s.lost.load()) return;
  std::string why;
  {
    std::lock_guard lock(s.mu);
    why = s.lost_message;
  }
  why = why.substr(0, why.find('\n'));  // Dawn may append where it was lost in its own sources
  throw DeviceLost("wgc: the GPU device '" + s.info.device + "' was lost" + (why.empty() ? "" : " (" + why + ")") +
                   ": the work in progress is gone; a new Context (and the model on it) can retry it");
}

void force_device_loss(ContextState& s, std::string_view why) {
  wgpuDeviceForceLoss(s.device, WGPUDeviceLostReason_Unknown, view(why));
  wgpuInstanceProcessEvents(s.instance);
}

void note_submit(ContextState& s) {
  static const std::string trigger = [] {
    const char* v = std::getenv("WGC_INJECT_DEVICE_LOSS");
    return std::string(v ? v : "");
  }();
  // The file is removed by the one submit that loses the device.
  if (!trigger.empty() && ::access(trigger.c_str(), F_OK) == 0 && ::unlink(trigger.c_str()) == 0)
    force_device_loss(s, "injected: " + trigger + " existed (WGC_INJECT_DEVICE_LOSS)");
}

void push_error_scopes(ContextState& s) {
  wgpuDevicePushErrorScope(s.device, WGPUErrorFilter_OutOfMemory);
  wgpuDevicePushErrorScope(s.device, WGPUErrorFilter_Validation);
}

void pop_error_scopes(ContextState& s, std::string_view what) {
  std::string errors;
  for (int i = 0; i < 2; ++i) {
    WGPUPopErrorScopeCallbackInfo cb = WGPU_POP_ERROR_SCOPE_CALLBACK_INFO_INIT;
    cb.mode = WGPUCallbackMode_WaitAnyOnly;
    cb.callback = [](WGPUPopErrorScopeStatus, WGPUErrorType type, WGPUStringView msg, void* u, void*) {
      if (type == WGPUErrorType_NoError) return;
      auto* out = static_cast<std::string*>(u);
      *out += (type == WGPUErrorType_OutOfMemory ? "out of memory: " : "") + to_string(msg) + "\n";
    };
    cb.userdata1 = &errors;
    lost_checked(s, [&] { wait_future(s.instance, wgpuDevicePopErrorScope(s.device, cb), "an error scope"); });
  }
  if (!errors.empty()) throw_if_lost(s);
  if (!errors.empty() && !what.empty()) {
    while (!errors.empty() && errors.back() == '\n') errors.pop_back();
    throw GpuError("wgc: " + std::string(what) + ": " + errors);
  }
}

void ContextState::clear_bind_groups() {
  for (auto& [key, g] : bind_groups) wgpuBindGroupRelease(g.group);
  bind_groups.clear();
}

void ContextState::forget_buffer(WGPUBuffer buffer) {
  std::erase_if(bind_groups, [&](auto& kv) {
    auto& b = kv.second.buffers;
    if (std::find(b.begin(), b.end(), buffer) == b.end()) return false;
    wgpuBindGroupRelease(kv.second.group);
    return true;
  });
}

ContextState::~ContextState() {
  clear_bind_groups();
  for (auto& [p, l] : layouts) wgpuBindGroupLayoutRelease(l);
  for (auto& [key, p] : pipelines) wgpuComputePipelineRelease(p);
  for (auto& [key, b] : free_buffers) wgpuBufferRelease(b);
  if (queue) wgpuQueueRelease(queue);
  if (device) {
    releasing = true;
    wgpuDeviceDestroy(device);
    wgpuDeviceRelease(device);
  }
  if (adapter) wgpuAdapterRelease(adapter);
  if (instance) {
    wgpuInstanceProcessEvents(instance);
    note_gpu_instance(instance, false);
    wgpuInstanceRelease(instance);
  }
}

}  // namespace detail

void set_wait_mode(WaitMode m) { detail::wait_mode_flag().store(int(m), std::memory_order_relaxed); }
WaitMode wait_mode() { return WaitMode(detail::wait_mode_flag().load(std::memory_order_relaxed)); }

namespace {

using detail::ContextState;
using detail::to_string;
using detail::view;

std::string backend_name(WGPUBackendType t) {
  switch (t) {
    case WGPUBackendType_Null: return "null";
    case WGPUBackendType_Vulkan: return "vulkan";
    case WGPUBackendType_Metal: return "metal";
    case WGPUBackendType_D3D12: return "d3d12";
    case WGPUBackendType_D3D11: return "d3d11";
    case WGPUBackendType_OpenGL: return "opengl";
    case WGPUBackendType_OpenGLES: return "opengles";
    default: return "unknown";
  }
}

std::string adapter_type_name(WGPUAdapterType t) {
  switch (t) {
    case WGPUAdapterType_DiscreteGPU: return "discrete-gpu";
    case WGPUAdapterType_IntegratedGPU: return "integrated-gpu";
    case WGPUAdapterType_CPU: return "cpu";
    default: return "unknown";
  }
}

// The SwiftShader ICD json that the build and `cmake --install` put beside the library:
// <folder of libwgc.so>/wgc-swiftshader/vk_swiftshader_icd.json (its library path is relative to it).
std::string bundled_swiftshader_icd() {
  std::filesystem::path lib = library_dir();
  return lib.empty() ? std::string() : (lib / "wgc-swiftshader" / "vk_swiftshader_icd.json").string();
}

// SwiftShader is installed by scripts/setup.sh as an extra Vulkan driver; add it to the loader's
// list (without hiding real GPUs) unless the user chose drivers explicitly.
void offer_swiftshader_driver() {
  if (std::getenv("VK_ICD_FILENAMES") || std::getenv("VK_DRIVER_FILES")) return;
  // Mesa's lavapipe lacks what Dawn needs (Dawn rejects it with a warning on every run); keep the
  // loader from offering it, unless the user filters drivers themselves.
  if (!std::getenv("VK_LOADER_DRIVERS_DISABLE") && !std::getenv("VK_LOADER_DRIVERS_SELECT"))
    setenv("VK_LOADER_DRIVERS_DISABLE", "*lvp_icd*", 1);
  const char* env = std::getenv("WGC_SWIFTSHADER_ICD");
  const std::string icd = env && *env ? env : bundled_swiftshader_icd();
  std::error_code ec;
  if (icd.empty() || !std::filesystem::exists(icd, ec)) return;
  std::string add = icd;
  if (const char* prev = std::getenv("VK_ADD_DRIVER_FILES")) {
    if (std::string_view(prev).find(icd) != std::string_view::npos) return;
    add = std::string(prev) + ":" + icd;
  }
  setenv("VK_ADD_DRIVER_FILES", add.c_str(), 1);
}

constexpr const char* kInstallHint =
    "Install libvulkan1 and run scripts/setup.sh (it installs SwiftShader), or set WGC_SWIFTSHADER_ICD to a "
    "SwiftShader ICD json.";

// Timed waits, and unsafe APIs so that experimental features are offered.
WGPUInstance create_instance() {
  offer_swiftshader_driver();
  const char* instance_toggles[] = {"allow_unsafe_apis"};
  WGPUDawnTogglesDescriptor itoggles = WGPU_DAWN_TOGGLES_DESCRIPTOR_INIT;
  itoggles.enabledToggleCount = 1;
  itoggles.enabledToggles = instance_toggles;
  WGPUInstanceFeatureName ifeatures[] = {WGPUInstanceFeatureName_TimedWaitAny};
  WGPUInstanceDescriptor idesc = WGPU_INSTANCE_DESCRIPTOR_INIT;
  idesc.nextInChain = &itoggles.chain;
  idesc.requiredFeatureCount = 1;
  idesc.requiredFeatures = ifeatures;
  WGPUInstance instance = wgpuCreateInstance(&idesc);
  if (!instance) throw DeviceError("wgc: could not create a WebGPU instance");
  return instance;
}

// Extra Dawn toggles for experiments: WGC_DAWN_TOGGLES="name,-name,..." (a leading '-' disables),
// given at both the adapter and the device stage (Dawn takes each at its own stage: e.g.
// use_vulkan_memory_model is an adapter toggle, disable_robustness a device one).
struct ExtraToggles {
  std::vector<std::string> names;
  std::vector<const char*> enabled, disabled;
};
const ExtraToggles& extra_toggles() {
  static const ExtraToggles t = [] {
    ExtraToggles x;
    if (const char* env = std::getenv("WGC_DAWN_TOGGLES")) {
      std::string_view rest(env);
      while (!rest.empty()) {
        const auto comma = rest.find(',');
        std::string_view item = rest.substr(0, comma);
        if (!item.empty()) x.names.emplace_back(item);
        rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
      }
    }
    for (const auto& n : x.names) {
      if (n[0] == '-') {
        if (n.size() > 1) x.disabled.push_back(n.c_str() + 1);
      } else {
        x.enabled.push_back(n.c_str());
      }
    }
    return x;
  }();
  return t;
}

WGPURequestAdapterOptions adapter_options(Backend backend) {
  static WGPUDawnTogglesDescriptor toggles = [] {
    WGPUDawnTogglesDescriptor d = WGPU_DAWN_TOGGLES_DESCRIPTOR_INIT;
    d.enabledToggleCount = extra_toggles().enabled.size();
    d.enabledToggles = extra_toggles().enabled.data();
    d.disabledToggleCount = extra_toggles().disabled.size();
    d.disabledToggles = extra_toggles().disabled.data();
    return d;
  }();
  WGPURequestAdapterOptions opts = WGPU_REQUEST_ADAPTER_OPTIONS_INIT;
  if (!extra_toggles().names.empty()) opts.nextInChain = &toggles.chain;
  opts.featureLevel = WGPUFeatureLevel_Core;
  opts.powerPreference = WGPUPowerPreference_HighPerformance;
  opts.backendType = backend == Backend::Null ? WGPUBackendType_Null : WGPUBackendType_Vulkan;
  // No forceFallbackAdapter for CpuVulkan: this Dawn does not count SwiftShader as its fallback
  // adapter and then offers none; enumerate_adapters picks CPU adapters by type instead.
  return opts;
}

// What a RequestAdapter / RequestDevice callback gave: the handle, or the message.
template <class Handle, class Status, Status kSuccess>
struct Requested {
  Handle handle = nullptr;
  std::string message;
  static void callback(Status st, Handle h, WGPUStringView msg, void* u, void*) {
    auto* r = static_cast<Requested*>(u);
    if (st == kSuccess)
      r->handle = h;
    else
      r->message = to_string(msg);
  }
};

WGPUAdapter request_adapter(WGPUInstance instance, Backend backend) {
  WGPURequestAdapterOptions opts = adapter_options(backend);
  Requested<WGPUAdapter, WGPURequestAdapterStatus, WGPURequestAdapterStatus_Success> r;
  WGPURequestAdapterCallbackInfo cb = WGPU_REQUEST_ADAPTER_CALLBACK_INFO_INIT;
  cb.mode = WGPUCallbackMode_WaitAnyOnly;
  cb.callback = &decltype(r)::callback;
  cb.userdata1 = &r;
  detail::wait_future(instance, wgpuInstanceRequestAdapter(instance, &opts, cb), "the adapter");
  if (!r.handle) {
    throw DeviceError("wgc: no Vulkan adapter found" + (r.message.empty() ? "" : " (" + r.message + ")") + ". " +
                      kInstallHint);
  }
  return r.handle;
}

AdapterInfo read_info(WGPUAdapter adapter) {
  WGPUAdapterInfo ai = WGPU_ADAPTER_INFO_INIT;
  wgpuAdapterGetInfo(adapter, &ai);
  AdapterInfo info{to_string(ai.vendor),
                   to_string(ai.architecture),
                   to_string(ai.device),
                   to_string(ai.description),
                   backend_name(ai.backendType),
                   adapter_type_name(ai.adapterType),
                   ai.vendorID,
                   ai.deviceID,
                   ai.subgroupMinSize,
                   ai.subgroupMaxSize};
  wgpuAdapterInfoFreeMembers(ai);
  return info;
}

// The adapters `backend` offers in the driver's order (see list_adapters), each with a reference
// the caller releases.
std::vector<WGPUAdapter> enumerate_adapters(WGPUInstance instance, Backend backend) {
  WGPURequestAdapterOptions opts = adapter_options(backend);
  std::vector<WGPUAdapter> gpus, cpus;
  {
    dawn::native::Instance dawn_instance(reinterpret_cast<dawn::native::InstanceBase*>(instance));
    for (const auto& a : dawn_instance.EnumerateAdapters(&opts)) {
      WGPUAdapter adapter = a.Get();
      wgpuAdapterAddRef(adapter);
      WGPUAdapterInfo ai = WGPU_ADAPTER_INFO_INIT;
      wgpuAdapterGetInfo(adapter, &ai);
      bool cpu = ai.adapterType == WGPUAdapterType_CPU;
      wgpuAdapterInfoFreeMembers(ai);
      (cpu ? cpus : gpus).push_back(adapter);
    }
  }
  bool want_cpu = backend == Backend::CpuVulkan || (backend == Backend::Auto && gpus.empty());
  for (WGPUAdapter a : want_cpu ? gpus : cpus) wgpuAdapterRelease(a);
  return want_cpu ? cpus : gpus;
}

WGPUAdapter pick_adapter(WGPUInstance instance, Backend backend, int index) {
  std::vector<WGPUAdapter> all = enumerate_adapters(instance, backend);
  if (all.empty())
    throw DeviceError(std::string("wgc: no ") +
                      (backend == Backend::CpuVulkan ? "CPU (SwiftShader) "
                       : backend == Backend::Gpu     ? "GPU "
                                                     : "") +
                      "Vulkan adapter found. " + kInstallHint);
  WGPUAdapter chosen = index < int(all.size()) ? all[size_t(index)] : nullptr;
  std::string listing;
  for (size_t i = 0; i < all.size(); ++i) {
    if (!chosen) {
      AdapterInfo info = read_info(all[i]);
      listing += "\n  " + std::to_string(i) + ": " + info.device + " (" + info.adapter_type + ")";
    }
    if (all[i] != chosen) wgpuAdapterRelease(all[i]);
  }
  if (!chosen)
    throw DeviceError("wgc: adapter index " + std::to_string(index) + " asked for, but the " +
                      std::string(to_string(backend)) + " backend offers " + std::to_string(all.size()) +
                      " adapter(s)" + (listing.empty() ? std::string() : ":" + listing));
  return chosen;
}

Limits to_limits(const WGPULimits& l) {
  return {l.maxStorageBufferBindingSize,     l.maxBufferSize,
          l.maxUniformBufferBindingSize,     l.maxStorageBuffersPerShaderStage,
          l.maxComputeWorkgroupStorageSize,  l.maxComputeInvocationsPerWorkgroup,
          l.maxComputeWorkgroupSizeX,        l.maxComputeWorkgroupSizeY,
          l.maxComputeWorkgroupSizeZ,        l.maxComputeWorkgroupsPerDimension,
          l.minStorageBufferOffsetAlignment, l.minUniformBufferOffsetAlignment};
}

bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v && *v && std::strcmp(v, "0") != 0;
}

}  // namespace

Backend parse_backend(std::string_view name) {
  if (name == "auto") return Backend::Auto;
  if (name == "gpu") return Backend::Gpu;
  if (name == "cpu-vulkan" || name == "cpu") return Backend::CpuVulkan;
  throw Error("wgc: unknown backend '" + std::string(name) + "' (expected auto, gpu or cpu-vulkan)");
}

std::string_view to_string(Backend b) {
  switch (b) {
    case Backend::Auto: return "auto";
    case Backend::Gpu: return "gpu";
    case Backend::CpuVulkan: return "cpu-vulkan";
    case Backend::Null: return "null";
  }
  return "?";
}

std::vector<AdapterInfo> list_adapters(Backend backend) {
  if (backend == Backend::Auto)
    if (const char* env = std::getenv("WGC_BACKEND")) backend = parse_backend(env);
  WGPUInstance instance = create_instance();
  std::vector<AdapterInfo> out;
  for (WGPUAdapter a : enumerate_adapters(instance, backend)) {
    out.push_back(read_info(a));
    wgpuAdapterRelease(a);
  }
  wgpuInstanceRelease(instance);
  return out;
}

Context::Context(ContextOptions options) : state_(std::make_shared<ContextState>()) {
  if (options.backend == Backend::Auto)
    if (const char* env = std::getenv("WGC_BACKEND")) options.backend = parse_backend(env);
  if (env_flag("WGC_DEBUG")) options.debug = true;
  auto& s = *state_;
  s.options = options;
  s.instance = create_instance();

  s.adapter = options.adapter_index >= 0              ? pick_adapter(s.instance, options.backend, options.adapter_index)
              : options.backend == Backend::CpuVulkan ? pick_adapter(s.instance, options.backend, 0)
                                                      : request_adapter(s.instance, options.backend);
  s.info = read_info(s.adapter);
  if (s.info.backend == "null")
    throw DeviceError(
        "wgc: Dawn offered only its Null backend, which computes nothing; refusing it. "
        "No Vulkan driver was found: install libvulkan1 and run scripts/setup.sh.");
  if (options.backend == Backend::Gpu && s.info.is_cpu())
    throw DeviceError("wgc: the gpu backend was asked for, but Vulkan offers no GPU (only '" + s.info.device + "')");

  // Features: only those the adapter lists (asking for others can abort inside Dawn).
  WGPUSupportedFeatures supported = {};
  wgpuAdapterGetFeatures(s.adapter, &supported);
  std::vector<WGPUFeatureName> want;
  auto offer = [&](WGPUFeatureName f, bool& flag) {
    for (size_t i = 0; i < supported.featureCount; ++i)
      if (supported.features[i] == f) {
        want.push_back(f);
        flag = true;
      }
  };
  offer(abi::kFeatureSubgroups, s.features.subgroups);
  offer(abi::kFeatureTimestampQuery, s.features.timestamp_query);
  offer(abi::kFeatureTimestampInsidePasses, s.features.timestamp_inside_passes);
  offer(abi::kFeatureShaderF16, s.features.shader_f16);
  offer(abi::kFeatureSubgroupMatrix, s.features.subgroup_matrix);
  wgpuSupportedFeaturesFreeMembers(supported);

  abi::PaddedLimits limits;
  wgpuAdapterGetLimits(s.adapter, &limits.limits);

  // Device toggles: fast by default, validation on in debug; real (unquantized) timestamps always.
  std::vector<const char*> enabled, disabled = {"timestamp_quantization"};
  if (!options.debug) {
    enabled.push_back("skip_validation");
    enabled.push_back("disable_workgroup_init");
    if (!options.robust) enabled.push_back("disable_robustness");
  }
  enabled.insert(enabled.end(), extra_toggles().enabled.begin(), extra_toggles().enabled.end());
  disabled.insert(disabled.end(), extra_toggles().disabled.begin(), extra_toggles().disabled.end());
  WGPUDawnTogglesDescriptor dtoggles = WGPU_DAWN_TOGGLES_DESCRIPTOR_INIT;
  dtoggles.enabledToggleCount = enabled.size();
  dtoggles.enabledToggles = enabled.data();
  dtoggles.disabledToggleCount = disabled.size();
  dtoggles.disabledToggles = disabled.data();

  WGPUDeviceDescriptor ddesc = WGPU_DEVICE_DESCRIPTOR_INIT;
  ddesc.nextInChain = &dtoggles.chain;
  ddesc.label = view("wgc");
  ddesc.requiredFeatureCount = want.size();
  ddesc.requiredFeatures = want.data();
  ddesc.requiredLimits = &limits.limits;
  ddesc.deviceLostCallbackInfo.mode = WGPUCallbackMode_AllowSpontaneous;
  ddesc.deviceLostCallbackInfo.callback = [](WGPUDevice const*, WGPUDeviceLostReason reason, WGPUStringView msg,
                                             void* u, void*) {
    auto* st = static_cast<ContextState*>(u);
    // Destroyed by our own destructor, or the instance going away: no loss. Destroyed by anyone
    // else (wgpuDeviceDestroy elsewhere) is one.
    if (reason == WGPUDeviceLostReason_CallbackCancelled || reason == WGPUDeviceLostReason_FailedCreation ||
        (reason == WGPUDeviceLostReason_Destroyed && st->releasing))
      return;
    std::lock_guard lock(st->mu);
    st->lost_message = to_string(msg);
    st->lost = true;
  };
  ddesc.deviceLostCallbackInfo.userdata1 = &s;
  ddesc.uncapturedErrorCallbackInfo.callback = [](WGPUDevice const*, WGPUErrorType type, WGPUStringView msg, void* u,
                                                  void*) {
    auto* st = static_cast<ContextState*>(u);
    std::lock_guard lock(st->mu);
    // An internal error leaves the device in an unknown state: treated as lost (Dawn usually loses
    // it too). Validation and out-of-memory errors are the operation's, reported by check().
    if (type == WGPUErrorType_Internal && !st->lost) {
      st->lost_message = "internal error: " + to_string(msg);
      st->lost = true;
    }
    if (st->uncaptured_error.empty()) st->uncaptured_error = to_string(msg);
  };
  ddesc.uncapturedErrorCallbackInfo.userdata1 = &s;

  Requested<WGPUDevice, WGPURequestDeviceStatus, WGPURequestDeviceStatus_Success> r;
  WGPURequestDeviceCallbackInfo cb = WGPU_REQUEST_DEVICE_CALLBACK_INFO_INIT;
  cb.mode = WGPUCallbackMode_WaitAnyOnly;
  cb.callback = &decltype(r)::callback;
  cb.userdata1 = &r;
  detail::wait_future(s.instance, wgpuAdapterRequestDevice(s.adapter, &ddesc, cb), "the device");
  if (!r.handle) throw DeviceError("wgc: could not create a device on '" + s.info.device + "': " + r.message);
  s.device = r.handle;
  // With WGC_DAWN_TOGGLES, Dawn's log (e.g. dump_shaders' SPIR-V) goes to stderr.
  if (!extra_toggles().names.empty()) {
    WGPULoggingCallbackInfo log = WGPU_LOGGING_CALLBACK_INFO_INIT;
    log.callback = [](WGPULoggingType, WGPUStringView msg, void*, void*) {
      std::fprintf(stderr, "[dawn] %.*s\n", int(msg.length == WGPU_STRLEN ? std::strlen(msg.data) : msg.length),
                   msg.data);
    };
    wgpuDeviceSetLoggingCallback(s.device, log);
  }
  s.queue = wgpuDeviceGetQueue(s.device);
  detail::note_gpu_instance(s.instance, !s.info.is_cpu());

  abi::PaddedLimits got;
  wgpuDeviceGetLimits(s.device, &got.limits);
  s.limits = to_limits(got.limits);
}

const AdapterInfo& Context::adapter() const { return state_->info; }
const Features& Context::features() const { return state_->features; }
const Limits& Context::limits() const { return state_->limits; }
const ContextOptions& Context::options() const { return state_->options; }
WGPUInstance Context::instance() const { return state_->instance; }
WGPUDevice Context::device() const { return state_->device; }
WGPUQueue Context::queue() const { return state_->queue; }

void Context::check() const {
  wgpuInstanceProcessEvents(state_->instance);
  detail::throw_if_lost(*state_);
  std::lock_guard lock(state_->mu);
  if (!state_->uncaptured_error.empty()) {
    std::string e = std::move(state_->uncaptured_error);
    state_->uncaptured_error.clear();
    throw GpuError("wgc: " + e);
  }
}

bool Context::lost() const {
  wgpuInstanceProcessEvents(state_->instance);
  return state_->lost.load();
}

void Context::wait_idle() const {
  detail::lost_checked(*state_, [&] {
    WGPUQueueWorkDoneCallbackInfo cb = WGPU_QUEUE_WORK_DONE_CALLBACK_INFO_INIT;
    cb.mode = WGPUCallbackMode_WaitAnyOnly;
    cb.callback = [](WGPUQueueWorkDoneStatus, WGPUStringView, void*, void*) {};
    detail::wait_future(state_->instance, wgpuQueueOnSubmittedWorkDone(state_->queue, cb), "the queue");
  });
  check();
}

std::string describe(const Context& ctx, bool json) {
  const auto& a = ctx.adapter();
  const auto& f = ctx.features();
  const auto& l = ctx.limits();
  std::ostringstream o;
  auto esc = [](const std::string& s) {
    std::string r;
    for (char c : s) {
      if (c == '"' || c == '\\') r += '\\';
      if (static_cast<unsigned char>(c) >= 0x20) r += c;
    }
    return r;
  };
  struct Row {
    const char* name;
    uint64_t value;
  };
  const Row limits[] = {{"max_storage_buffer_binding_size", l.max_storage_buffer_binding_size},
                        {"max_buffer_size", l.max_buffer_size},
                        {"max_uniform_buffer_binding_size", l.max_uniform_buffer_binding_size},
                        {"max_storage_buffers_per_shader_stage", l.max_storage_buffers_per_shader_stage},
                        {"max_compute_workgroup_storage_size", l.max_compute_workgroup_storage_size},
                        {"max_compute_invocations_per_workgroup", l.max_compute_invocations_per_workgroup},
                        {"max_compute_workgroup_size_x", l.max_compute_workgroup_size_x},
                        {"max_compute_workgroups_per_dimension", l.max_compute_workgroups_per_dimension},
                        {"min_storage_buffer_offset_alignment", l.min_storage_buffer_offset_alignment}};
  const std::pair<const char*, bool> feats[] = {{"subgroups", f.subgroups},
                                                {"timestamp-query", f.timestamp_query},
                                                {"timestamp-query-inside-passes", f.timestamp_inside_passes},
                                                {"shader-f16", f.shader_f16},
                                                {"subgroup-matrix", f.subgroup_matrix}};
  if (json) {
    o << "{\"device\":\"" << esc(a.device) << "\",\"vendor\":\"" << esc(a.vendor) << "\",\"architecture\":\""
      << esc(a.architecture) << "\",\"description\":\"" << esc(a.description) << "\",\"backend\":\"" << a.backend
      << "\",\"adapter_type\":\"" << a.adapter_type << "\",\"vendor_id\":" << a.vendor_id
      << ",\"device_id\":" << a.device_id << ",\"subgroup_min_size\":" << a.subgroup_min_size
      << ",\"subgroup_max_size\":" << a.subgroup_max_size << ",\"features\":{";
    for (size_t i = 0; i < std::size(feats); ++i)
      o << (i ? "," : "") << '"' << feats[i].first << "\":" << (feats[i].second ? "true" : "false");
    o << "},\"limits\":{";
    for (size_t i = 0; i < std::size(limits); ++i)
      o << (i ? "," : "") << '"' << limits[i].name << "\":" << limits[i].value;
    o << "}}";
    return o.str();
  }
  o << "adapter:   " << a.device << " (" << a.adapter_type << ", " << a.backend << ")\n"
    << "vendor:    " << a.vendor << " [" << a.architecture << "] 0x" << std::hex << a.vendor_id << ":0x" << a.device_id
    << std::dec << "\n"
    << "driver:    " << a.description << "\n"
    << "subgroups: size " << a.subgroup_min_size << ".." << a.subgroup_max_size << "\n"
    << "features: ";
  for (auto& [name, on] : feats) o << ' ' << name << (on ? "=yes" : "=no");
  o << "\nlimits:\n";
  for (auto& r : limits) o << "  " << r.name << " = " << r.value << "\n";
  return o.str();
}

}  // namespace wgc
