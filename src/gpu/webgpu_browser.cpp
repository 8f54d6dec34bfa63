// WebGPU in the browser (the wasm build; an empty file natively): Dawn's current C API, which
// src/gpu is written to (named wgcBrowser* through gpu/webgpu_api.h), on emscripten 3.1.6's 2022
// bindings (library_webgpu.js, -sUSE_WEBGPU=1) and, for what those lack or get wrong for today's
// browsers, on webgpu_browser.js: the adapter's info, features and limits, the device request,
// shader compilation messages, pipelines made asynchronously, and the waits.
//
// Futures: every asynchronous call returns a future that completes when the browser's promise
// settles (the callback runs then, whatever its mode). wgpuInstanceWaitAny sleeps until it has:
// an ASYNCIFY yield (wgc_browser_wait), in which the wasm stack is unwound and the worker's event
// loop runs, so the runtime's blocking waits (adapter, device, error scopes, compilation, buffer
// maps, each token's readback) need no change. Timestamp queries are not offered (the 2022
// bindings cannot write them in a pass), so timed batches never run here.
#ifdef __EMSCRIPTEN__

#include <emscripten/emscripten.h>
// The 2022 header, in the global namespace: the bindings' functions and types (found through the
// sysroot's emscripten/ folder, since Dawn's include folder comes first for <webgpu/webgpu.h>).
#include <emscripten/../webgpu/webgpu.h>
#undef WEBGPU_H_

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include <cstdint>
#include <vector>

#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wmacro-redefined"
// Dawn's current header, its types in namespace cur; no function declarations (the 2022 header
// declares the same names with other types): the definitions below are the declarations.
#define WGPU_SKIP_DECLARATIONS
#define WGC_BROWSER_IMPLEMENTATION
namespace cur {
#include "gpu/webgpu_abi.h"  // includes gpu/webgpu_api.h: Dawn's header
}  // namespace cur
#pragma clang diagnostic pop

#include "util/error.h"
#include "util/json.h"

#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

extern "C" {
// webgpu_browser.js
// The asynchronous ones report back through wgc_browser_*_done(op, ...) below.
int wgc_browser_wait(uint32_t future, double timeout_ms);  // 1 when notified, 0 on time-out (yields)
void wgc_browser_notify(uint32_t future);
void wgc_browser_request_adapter(void* op, int power_preference);
char* wgc_browser_adapter_json(uint32_t adapter);  // malloc'd
char* wgc_browser_device_json(uint32_t device);    // malloc'd
void wgc_browser_request_device(void* op, uint32_t adapter, const char* features);
void wgc_browser_compilation_info(void* op, uint32_t module);
void wgc_browser_create_pipeline_async(void* op, uint32_t device, const ::WGPUComputePipelineDescriptor* desc);
int wgc_browser_defer_scopes();  // Module.wgcDeferErrorScopes (see wgcBrowserDevicePopErrorScope)
}

namespace {

using std::string;

// --- futures ----------------------------------------------------------------------------------
std::unordered_map<uint32_t, bool>& futures() {
  static std::unordered_map<uint32_t, bool> f;  // id -> completed
  return f;
}
uint32_t new_future() {
  static uint32_t next = 1;
  futures()[next] = false;
  return next++;
}
void complete(uint32_t id) {
  futures()[id] = true;
  wgc_browser_notify(id);
}

cur::WGPUStringView sv(const char* s) { return {s, s ? std::strlen(s) : 0}; }
string str(cur::WGPUStringView s) {
  if (!s.data) return {};
  return s.length == SIZE_MAX ? string(s.data) : string(s.data, s.length);
}

// A callback info kept until its (2022-style) callback runs, with the future it completes.
template <class Info>
struct Op {
  uint32_t future;
  Info info;
  std::vector<string> messages;  // compilation messages, as they arrive
  std::vector<int> types, lines, columns;
};
template <class Info>
Op<Info>* new_op(const Info& info) {
  return new Op<Info>{new_future(), info, {}, {}, {}, {}};
}

template <class T>
T handle(uint32_t id) {
  return reinterpret_cast<T>(uintptr_t(id));
}
template <class T>
uint32_t id_of(T h) {
  return uint32_t(reinterpret_cast<uintptr_t>(h));
}

// Per device: the callbacks of the device descriptor.
struct DeviceCallbacks {
  cur::WGPUDevice device;
  cur::WGPUDeviceLostCallbackInfo lost;
  cur::WGPUUncapturedErrorCallbackInfo uncaptured;
};
std::unordered_map<uint32_t, DeviceCallbacks*>& device_callbacks() {
  static std::unordered_map<uint32_t, DeviceCallbacks*> m;  // by device id
  return m;
}

cur::WGPUErrorType error_type(::WGPUErrorType t) {
  switch (t) {
    case ::WGPUErrorType_NoError: return cur::WGPUErrorType_NoError;
    case ::WGPUErrorType_Validation: return cur::WGPUErrorType_Validation;
    case ::WGPUErrorType_OutOfMemory: return cur::WGPUErrorType_OutOfMemory;
    default: return cur::WGPUErrorType_Unknown;
  }
}

// The limits the runtime reads, from {"name": value} as the browser names them.
void fill_limits(const wgc::json::Value& l, cur::WGPULimits* out) {
  auto u32 = [&](const char* name, uint32_t& f) {
    if (const auto* v = l.find(name)) f = uint32_t(v->as_double());
  };
  auto u64 = [&](const char* name, uint64_t& f) {
    if (const auto* v = l.find(name)) f = uint64_t(v->as_double());
  };
  u32("maxBindGroups", out->maxBindGroups);
  u32("maxStorageBuffersPerShaderStage", out->maxStorageBuffersPerShaderStage);
  u32("maxUniformBuffersPerShaderStage", out->maxUniformBuffersPerShaderStage);
  u64("maxUniformBufferBindingSize", out->maxUniformBufferBindingSize);
  u64("maxStorageBufferBindingSize", out->maxStorageBufferBindingSize);
  u32("minUniformBufferOffsetAlignment", out->minUniformBufferOffsetAlignment);
  u32("minStorageBufferOffsetAlignment", out->minStorageBufferOffsetAlignment);
  u64("maxBufferSize", out->maxBufferSize);
  u32("maxComputeWorkgroupStorageSize", out->maxComputeWorkgroupStorageSize);
  u32("maxComputeInvocationsPerWorkgroup", out->maxComputeInvocationsPerWorkgroup);
  u32("maxComputeWorkgroupSizeX", out->maxComputeWorkgroupSizeX);
  u32("maxComputeWorkgroupSizeY", out->maxComputeWorkgroupSizeY);
  u32("maxComputeWorkgroupSizeZ", out->maxComputeWorkgroupSizeZ);
  u32("maxComputeWorkgroupsPerDimension", out->maxComputeWorkgroupsPerDimension);
}

wgc::json::Value take_json(char* s) {
  string text = s ? s : "{}";
  std::free(s);
  return wgc::json::parse(text);
}

// Features by the browser's names and the numbers of wgc::abi (Dawn's library numbering). No
// timestamp-query: the 2022 bindings have no pass timestamp writes.
struct FeatureName {
  const char* name;
  cur::WGPUFeatureName value;
};
constexpr FeatureName kFeatures[] = {{"subgroups", cur::wgc::abi::kFeatureSubgroups},
                                     {"shader-f16", cur::wgc::abi::kFeatureShaderF16}};

}  // namespace

// --- called from webgpu_browser.js when a promise settles --------------------------------------
extern "C" {

EMSCRIPTEN_KEEPALIVE void wgc_browser_adapter_done(void* op_ptr, uint32_t adapter, char* message) {
  auto* op = static_cast<Op<cur::WGPURequestAdapterCallbackInfo>*>(op_ptr);
  string msg = message ? message : "";
  std::free(message);
  op->info.callback(adapter ? cur::WGPURequestAdapterStatus_Success : cur::WGPURequestAdapterStatus_Unavailable,
                    handle<cur::WGPUAdapter>(adapter), sv(msg.c_str()), op->info.userdata1, op->info.userdata2);
  complete(op->future);
  delete op;
}

EMSCRIPTEN_KEEPALIVE void wgc_browser_device_done(void* op_ptr, uint32_t device, char* message) {
  auto* op = static_cast<Op<cur::WGPURequestDeviceCallbackInfo>*>(op_ptr);
  string msg = message ? message : "";
  std::free(message);
  op->info.callback(device ? cur::WGPURequestDeviceStatus_Success : cur::WGPURequestDeviceStatus_Error,
                    handle<cur::WGPUDevice>(device), sv(msg.c_str()), op->info.userdata1, op->info.userdata2);
  complete(op->future);
  delete op;
}

EMSCRIPTEN_KEEPALIVE void wgc_browser_compilation_message(void* op_ptr, int type, int line, int column,
                                                          const char* message) {
  auto* op = static_cast<Op<cur::WGPUCompilationInfoCallbackInfo>*>(op_ptr);
  op->messages.emplace_back(message ? message : "");
  op->types.push_back(type);
  op->lines.push_back(line);
  op->columns.push_back(column);
}

EMSCRIPTEN_KEEPALIVE void wgc_browser_compilation_done(void* op_ptr, int ok) {
  auto* op = static_cast<Op<cur::WGPUCompilationInfoCallbackInfo>*>(op_ptr);
  std::vector<cur::WGPUCompilationMessage> msgs(op->messages.size());
  for (size_t i = 0; i < msgs.size(); ++i) {
    msgs[i] = {};
    msgs[i].message = sv(op->messages[i].c_str());
    msgs[i].type = cur::WGPUCompilationMessageType(op->types[i]);
    msgs[i].lineNum = uint64_t(op->lines[i]);
    msgs[i].linePos = uint64_t(op->columns[i]);
  }
  cur::WGPUCompilationInfo info{};
  info.messageCount = msgs.size();
  info.messages = msgs.data();
  op->info.callback(
      ok ? cur::WGPUCompilationInfoRequestStatus_Success : cur::WGPUCompilationInfoRequestStatus_CallbackCancelled,
      &info, op->info.userdata1, op->info.userdata2);
  complete(op->future);
  delete op;
}

EMSCRIPTEN_KEEPALIVE void wgc_browser_pipeline_done(void* op_ptr, uint32_t pipeline, char* message) {
  auto* op = static_cast<Op<cur::WGPUCreateComputePipelineAsyncCallbackInfo>*>(op_ptr);
  string msg = message ? message : "";
  std::free(message);
  op->info.callback(
      pipeline ? cur::WGPUCreatePipelineAsyncStatus_Success : cur::WGPUCreatePipelineAsyncStatus_ValidationError,
      handle<cur::WGPUComputePipeline>(pipeline), sv(msg.c_str()), op->info.userdata1, op->info.userdata2);
  complete(op->future);
  delete op;
}

}  // extern "C"

namespace {

// 2022-style callbacks of the bindings: each calls the current-style callback of its Op.
void on_map(::WGPUBufferMapAsyncStatus status, void* u) {
  auto* op = static_cast<Op<cur::WGPUBufferMapCallbackInfo>*>(u);
  op->info.callback(
      status == ::WGPUBufferMapAsyncStatus_Success ? cur::WGPUMapAsyncStatus_Success : cur::WGPUMapAsyncStatus_Error,
      sv(status == ::WGPUBufferMapAsyncStatus_Success ? "" : "the browser refused the mapping"), op->info.userdata1,
      op->info.userdata2);
  complete(op->future);
  delete op;
}

void on_pop(::WGPUErrorType type, const char* message, void* u) {
  auto* op = static_cast<Op<cur::WGPUPopErrorScopeCallbackInfo>*>(u);
  string msg = message ? message : (type == ::WGPUErrorType_OutOfMemory ? "out of memory" : "");
  op->info.callback(cur::WGPUPopErrorScopeStatus_Success, error_type(type), sv(msg.c_str()), op->info.userdata1,
                    op->info.userdata2);
  complete(op->future);
  delete op;
}

void on_work_done(::WGPUQueueWorkDoneStatus status, void* u) {
  auto* op = static_cast<Op<cur::WGPUQueueWorkDoneCallbackInfo>*>(u);
  op->info.callback(status == ::WGPUQueueWorkDoneStatus_Success ? cur::WGPUQueueWorkDoneStatus_Success
                                                                : cur::WGPUQueueWorkDoneStatus_Error,
                    sv(""), op->info.userdata1, op->info.userdata2);
  complete(op->future);
  delete op;
}

// A deferred scope's answer (wgcBrowserDevicePopErrorScope): an error goes where uncaptured ones go.
void on_deferred_pop(::WGPUErrorType type, const char* message, void* u) {
  auto* cb = static_cast<DeviceCallbacks*>(u);
  if (type == ::WGPUErrorType_NoError || !cb->uncaptured.callback) return;
  const string msg = string(type == ::WGPUErrorType_OutOfMemory ? "out of memory: " : "") + (message ? message : "");
  cb->uncaptured.callback(&cb->device, error_type(type), sv(msg.c_str()), cb->uncaptured.userdata1,
                          cb->uncaptured.userdata2);
}

void on_uncaptured(::WGPUErrorType type, const char* message, void* u) {
  auto* cb = static_cast<DeviceCallbacks*>(u);
  if (cb->uncaptured.callback)
    cb->uncaptured.callback(&cb->device, error_type(type), sv(message), cb->uncaptured.userdata1,
                            cb->uncaptured.userdata2);
}

void on_lost(::WGPUDeviceLostReason reason, const char* message, void* u) {
  auto* cb = static_cast<DeviceCallbacks*>(u);
  if (cb->lost.callback)
    cb->lost.callback(&cb->device,
                      reason == ::WGPUDeviceLostReason_Destroyed ? cur::WGPUDeviceLostReason_Destroyed
                                                                 : cur::WGPUDeviceLostReason_Unknown,
                      sv(message), cb->lost.userdata1, cb->lost.userdata2);
}

}  // namespace

namespace cur {
extern "C" {

// --- instance, adapter, device -----------------------------------------------------------------
// The browser has one GPU object (navigator.gpu): the instance is a token.
WGPUInstance wgcBrowserCreateInstance(const WGPUInstanceDescriptor*) { return handle<WGPUInstance>(1); }
void wgcBrowserInstanceRelease(WGPUInstance) {}
void wgcBrowserInstanceProcessEvents(WGPUInstance) {}

WGPUWaitStatus wgcBrowserInstanceWaitAny(WGPUInstance, size_t count, WGPUFutureWaitInfo* infos, uint64_t timeout_ns) {
  auto done = [&] {
    bool any = false;
    for (size_t i = 0; i < count; ++i) {
      auto it = futures().find(uint32_t(infos[i].future.id));
      if (it == futures().end() || !it->second) continue;
      infos[i].completed = 1;
      futures().erase(it);
      any = true;
    }
    return any;
  };
  if (done()) return WGPUWaitStatus_Success;
  if (count == 0) return WGPUWaitStatus_Error;
  // One future at a time (the runtime waits on one): a notification for it, or the time-out.
  const double timeout_ms = double(timeout_ns) / 1e6;
  wgc_browser_wait(uint32_t(infos[0].future.id), timeout_ms);
  return done() ? WGPUWaitStatus_Success : WGPUWaitStatus_TimedOut;
}

WGPUFuture wgcBrowserInstanceRequestAdapter(WGPUInstance, const WGPURequestAdapterOptions* options,
                                            WGPURequestAdapterCallbackInfo info) {
  auto* op = new_op(info);
  const uint32_t future = op->future;
  wgc_browser_request_adapter(op, options && options->powerPreference == WGPUPowerPreference_LowPower ? 1 : 2);
  return {future};
}

WGPUStatus wgcBrowserAdapterGetInfo(WGPUAdapter adapter, WGPUAdapterInfo* info) {
  auto j = take_json(wgc_browser_adapter_json(id_of(adapter)));
  auto dup = [](const string& s) {
    char* p = static_cast<char*>(std::malloc(s.size() + 1));
    std::memcpy(p, s.c_str(), s.size() + 1);
    return WGPUStringView{p, s.size()};
  };
  auto text = [&](const char* k) { return j.find(k) ? j.find(k)->as_string() : string(); };
  info->vendor = dup(text("vendor"));
  info->architecture = dup(text("architecture"));
  info->device = dup(text("device"));
  info->description = dup(text("description"));
  info->backendType = WGPUBackendType_WebGPU;
  // Browsers do not say integrated or discrete; a fallback adapter (SwiftShader) is a CPU.
  const bool cpu =
      (j.find("isFallbackAdapter") && j.find("isFallbackAdapter")->as_bool()) || text("architecture") == "swiftshader";
  info->adapterType = cpu ? WGPUAdapterType_CPU : WGPUAdapterType_Unknown;
  info->vendorID = 0;
  info->deviceID = 0;
  info->subgroupMinSize = j.find("subgroupMinSize") ? uint32_t(j.find("subgroupMinSize")->as_double()) : 0;
  info->subgroupMaxSize = j.find("subgroupMaxSize") ? uint32_t(j.find("subgroupMaxSize")->as_double()) : 0;
  return WGPUStatus_Success;
}

void wgcBrowserAdapterInfoFreeMembers(WGPUAdapterInfo info) {
  for (auto* s : {info.vendor.data, info.architecture.data, info.device.data, info.description.data})
    std::free(const_cast<char*>(s));
}

void wgcBrowserAdapterGetFeatures(WGPUAdapter adapter, WGPUSupportedFeatures* out) {
  auto j = take_json(wgc_browser_adapter_json(id_of(adapter)));
  std::vector<WGPUFeatureName> have;
  if (const auto* f = j.find("features"))
    for (const auto& name : f->items())
      for (const auto& k : kFeatures)
        if (name.as_string() == k.name) have.push_back(k.value);
  auto* arr = static_cast<WGPUFeatureName*>(std::malloc(sizeof(WGPUFeatureName) * (have.size() + 1)));
  std::copy(have.begin(), have.end(), arr);
  out->featureCount = have.size();
  out->features = arr;
}

void wgcBrowserSupportedFeaturesFreeMembers(WGPUSupportedFeatures f) {
  std::free(const_cast<WGPUFeatureName*>(f.features));
}

WGPUStatus wgcBrowserAdapterGetLimits(WGPUAdapter adapter, WGPULimits* limits) {
  auto j = take_json(wgc_browser_adapter_json(id_of(adapter)));
  if (const auto* l = j.find("limits")) fill_limits(*l, limits);
  return WGPUStatus_Success;
}

WGPUStatus wgcBrowserDeviceGetLimits(WGPUDevice device, WGPULimits* limits) {
  auto j = take_json(wgc_browser_device_json(id_of(device)));
  if (const auto* l = j.find("limits")) fill_limits(*l, limits);
  return WGPUStatus_Success;
}

void wgcBrowserAdapterAddRef(WGPUAdapter a) { ::wgpuAdapterReference(handle<::WGPUAdapter>(id_of(a))); }
void wgcBrowserAdapterRelease(WGPUAdapter a) { ::wgpuAdapterRelease(handle<::WGPUAdapter>(id_of(a))); }

// Asks for the features named and every limit at the adapter's value (as the runtime does
// natively); Dawn's toggles (chained) mean nothing to a browser.
WGPUFuture wgcBrowserAdapterRequestDevice(WGPUAdapter adapter, const WGPUDeviceDescriptor* desc,
                                          WGPURequestDeviceCallbackInfo info) {
  string features;
  for (size_t i = 0; desc && i < desc->requiredFeatureCount; ++i)
    for (const auto& k : kFeatures)
      if (desc->requiredFeatures[i] == k.value) features += string(features.empty() ? "" : ",") + k.name;
  // The device's own callbacks, on the 2022 bindings once the device exists.
  struct Wrapped {
    WGPURequestDeviceCallbackInfo user;
    WGPUDeviceLostCallbackInfo lost;
    WGPUUncapturedErrorCallbackInfo uncaptured;
  };
  auto* w = new Wrapped{info, desc ? desc->deviceLostCallbackInfo : WGPUDeviceLostCallbackInfo{},
                        desc ? desc->uncapturedErrorCallbackInfo : WGPUUncapturedErrorCallbackInfo{}};
  WGPURequestDeviceCallbackInfo mine = info;
  mine.callback = [](WGPURequestDeviceStatus st, WGPUDevice device, WGPUStringView msg, void* u1, void*) {
    auto* wr = static_cast<Wrapped*>(u1);
    if (st == WGPURequestDeviceStatus_Success) {
      auto* cb = new DeviceCallbacks{device, wr->lost, wr->uncaptured};  // lives as long as the page
      device_callbacks()[id_of(device)] = cb;
      ::WGPUDevice d = handle<::WGPUDevice>(id_of(device));
      ::wgpuDeviceSetUncapturedErrorCallback(d, on_uncaptured, cb);
      ::wgpuDeviceSetDeviceLostCallback(d, on_lost, cb);
    }
    wr->user.callback(st, device, msg, wr->user.userdata1, wr->user.userdata2);
    delete wr;
  };
  mine.userdata1 = w;
  auto* op = new_op(mine);
  const uint32_t future = op->future;
  wgc_browser_request_device(op, id_of(adapter), features.c_str());
  return {future};
}

WGPUQueue wgcBrowserDeviceGetQueue(WGPUDevice d) {
  return handle<WGPUQueue>(id_of(::wgpuDeviceGetQueue(handle<::WGPUDevice>(id_of(d)))));
}
void wgcBrowserDeviceDestroy(WGPUDevice d) { ::wgpuDeviceDestroy(handle<::WGPUDevice>(id_of(d))); }
// Browsers cannot lose a device on request (WGC_INJECT_DEVICE_LOSS): destroying it loses it, with
// the browser's reason ("destroyed") instead of the given one.
void wgcBrowserDeviceForceLoss(WGPUDevice d, WGPUDeviceLostReason, WGPUStringView) { wgcBrowserDeviceDestroy(d); }
void wgcBrowserDeviceRelease(WGPUDevice d) { ::wgpuDeviceRelease(handle<::WGPUDevice>(id_of(d))); }
void wgcBrowserDeviceSetLoggingCallback(WGPUDevice, WGPULoggingCallbackInfo) {}

// --- error scopes ------------------------------------------------------------------------------
void wgcBrowserDevicePushErrorScope(WGPUDevice d, WGPUErrorFilter filter) {
  ::wgpuDevicePushErrorScope(handle<::WGPUDevice>(id_of(d)), filter == WGPUErrorFilter_OutOfMemory
                                                                 ? ::WGPUErrorFilter_OutOfMemory
                                                                 : ::WGPUErrorFilter_Validation);
}

// Each pop is a round trip to the browser's GPU process, and the runtime pops two scopes around
// every batch it encodes. With Module.wgcDeferErrorScopes set, a pop answers "no error" at once
// and its real answer, if an error, arrives later as an uncaptured error, which the runtime's next
// wait reports (Context::check: a GpuError with the browser's message, one wait later than
// natively). Off by default.
WGPUFuture wgcBrowserDevicePopErrorScope(WGPUDevice d, WGPUPopErrorScopeCallbackInfo info) {
  auto cb = device_callbacks().find(id_of(d));
  if (cb != device_callbacks().end() && wgc_browser_defer_scopes()) {
    ::wgpuDevicePopErrorScope(handle<::WGPUDevice>(id_of(d)), on_deferred_pop, cb->second);
    info.callback(WGPUPopErrorScopeStatus_Success, WGPUErrorType_NoError, sv(""), info.userdata1, info.userdata2);
    const uint32_t future = new_future();
    futures()[future] = true;
    return {future};
  }
  auto* op = new_op(info);
  const uint32_t future = op->future;
  ::wgpuDevicePopErrorScope(handle<::WGPUDevice>(id_of(d)), on_pop, op);
  return {future};
}

// --- buffers -----------------------------------------------------------------------------------
WGPUBuffer wgcBrowserDeviceCreateBuffer(WGPUDevice d, const WGPUBufferDescriptor* desc) {
  const string label = str(desc->label);
  ::WGPUBufferDescriptor o{};
  o.label = label.c_str();
  o.usage = ::WGPUBufferUsageFlags(desc->usage);
  o.size = desc->size;
  o.mappedAtCreation = desc->mappedAtCreation != 0;
  return handle<WGPUBuffer>(id_of(::wgpuDeviceCreateBuffer(handle<::WGPUDevice>(id_of(d)), &o)));
}

WGPUFuture wgcBrowserBufferMapAsync(WGPUBuffer b, WGPUMapMode mode, size_t offset, size_t size,
                                    WGPUBufferMapCallbackInfo info) {
  auto* op = new_op(info);
  const uint32_t future = op->future;
  ::wgpuBufferMapAsync(handle<::WGPUBuffer>(id_of(b)), ::WGPUMapModeFlags(mode), offset, size, on_map, op);
  return {future};
}

// The bindings copy the mapping into wasm memory (freed at unmap; written back for write maps).
const void* wgcBrowserBufferGetConstMappedRange(WGPUBuffer b, size_t offset, size_t size) {
  return ::wgpuBufferGetConstMappedRange(handle<::WGPUBuffer>(id_of(b)), offset, size);
}
void* wgcBrowserBufferGetMappedRange(WGPUBuffer b, size_t offset, size_t size) {
  return ::wgpuBufferGetMappedRange(handle<::WGPUBuffer>(id_of(b)), offset, size);
}
void wgcBrowserBufferUnmap(WGPUBuffer b) { ::wgpuBufferUnmap(handle<::WGPUBuffer>(id_of(b))); }
void wgcBrowserBufferRelease(WGPUBuffer b) {
  ::wgpuBufferDestroy(handle<::WGPUBuffer>(id_of(b)));  // the GPU memory now, not at GC
  ::wgpuBufferRelease(handle<::WGPUBuffer>(id_of(b)));
}

// --- shaders and pipelines ---------------------------------------------------------------------
WGPUShaderModule wgcBrowserDeviceCreateShaderModule(WGPUDevice d, const WGPUShaderModuleDescriptor* desc) {
  string code;
  for (const WGPUChainedStruct* c = desc->nextInChain; c; c = c->next)
    if (c->sType == WGPUSType_ShaderSourceWGSL) code = str(reinterpret_cast<const WGPUShaderSourceWGSL*>(c)->code);
  const string label = str(desc->label);
  ::WGPUShaderModuleWGSLDescriptor wgsl{};
  wgsl.chain.sType = ::WGPUSType_ShaderModuleWGSLDescriptor;
  wgsl.source = code.c_str();
  ::WGPUShaderModuleDescriptor o{};
  o.nextInChain = &wgsl.chain;
  o.label = label.c_str();
  return handle<WGPUShaderModule>(id_of(::wgpuDeviceCreateShaderModule(handle<::WGPUDevice>(id_of(d)), &o)));
}

WGPUFuture wgcBrowserShaderModuleGetCompilationInfo(WGPUShaderModule m, WGPUCompilationInfoCallbackInfo info) {
  auto* op = new_op(info);
  const uint32_t future = op->future;
  wgc_browser_compilation_info(op, id_of(m));
  return {future};
}

void wgcBrowserShaderModuleRelease(WGPUShaderModule m) {
  ::wgpuShaderModuleRelease(handle<::WGPUShaderModule>(id_of(m)));
}

}  // extern "C"
}  // namespace cur

namespace {
constexpr uint64_t kPlaceholderBytes = 16;

// The k-th spare placeholder buffer of a device (see wgcBrowserDeviceCreateBindGroup).
::WGPUBuffer spare_buffer(cur::WGPUDevice d, size_t k) {
  static std::unordered_map<uint32_t, std::vector<::WGPUBuffer>> spares;
  auto& v = spares[id_of(d)];
  while (v.size() <= k) {
    ::WGPUBufferDescriptor o{};
    o.label = "wgc placeholder";
    o.usage = ::WGPUBufferUsage_Storage | ::WGPUBufferUsage_CopySrc | ::WGPUBufferUsage_CopyDst;
    o.size = 256;
    v.push_back(::wgpuDeviceCreateBuffer(handle<::WGPUDevice>(id_of(d)), &o));
  }
  return v[k];
}

// A compute pipeline descriptor in the 2022 layout; its strings live here.
struct OldPipeline {
  string label, entry;
  std::vector<string> keys;
  std::vector<::WGPUConstantEntry> constants;
  ::WGPUComputePipelineDescriptor desc{};

  explicit OldPipeline(const cur::WGPUComputePipelineDescriptor& d)
      : label(str(d.label)), entry(str(d.compute.entryPoint)) {
    for (size_t i = 0; i < d.compute.constantCount; ++i) keys.push_back(str(d.compute.constants[i].key));
    for (size_t i = 0; i < d.compute.constantCount; ++i) {
      ::WGPUConstantEntry e{};
      e.key = keys[i].c_str();
      e.value = d.compute.constants[i].value;
      constants.push_back(e);
    }
    desc.label = label.c_str();
    desc.layout = handle<::WGPUPipelineLayout>(id_of(d.layout));  // none: 'auto' (webgpu_browser.js)
    desc.compute.module = handle<::WGPUShaderModule>(id_of(d.compute.module));
    desc.compute.entryPoint = entry.c_str();
    desc.compute.constantCount = uint32_t(constants.size());
    desc.compute.constants = constants.data();
  }
};
}  // namespace

namespace cur {
extern "C" {

WGPUComputePipeline wgcBrowserDeviceCreateComputePipeline(WGPUDevice d, const WGPUComputePipelineDescriptor* desc) {
  OldPipeline p(*desc);
  return handle<WGPUComputePipeline>(id_of(::wgpuDeviceCreateComputePipeline(handle<::WGPUDevice>(id_of(d)), &p.desc)));
}

// The 2022 bindings lack it: the browser's createComputePipelineAsync (webgpu_browser.js).
WGPUFuture wgcBrowserDeviceCreateComputePipelineAsync(WGPUDevice d, const WGPUComputePipelineDescriptor* desc,
                                                      WGPUCreateComputePipelineAsyncCallbackInfo info) {
  auto* op = new_op(info);
  const uint32_t future = op->future;
  OldPipeline p(*desc);
  wgc_browser_create_pipeline_async(op, id_of(d), &p.desc);
  return {future};
}

WGPUBindGroupLayout wgcBrowserComputePipelineGetBindGroupLayout(WGPUComputePipeline p, uint32_t group) {
  return handle<WGPUBindGroupLayout>(
      id_of(::wgpuComputePipelineGetBindGroupLayout(handle<::WGPUComputePipeline>(id_of(p)), group)));
}
void wgcBrowserComputePipelineRelease(WGPUComputePipeline p) {
  ::wgpuComputePipelineRelease(handle<::WGPUComputePipeline>(id_of(p)));
}
void wgcBrowserBindGroupLayoutRelease(WGPUBindGroupLayout l) {
  ::wgpuBindGroupLayoutRelease(handle<::WGPUBindGroupLayout>(id_of(l)));
}

WGPUBindGroup wgcBrowserDeviceCreateBindGroup(WGPUDevice d, const WGPUBindGroupDescriptor* desc) {
  std::vector<::WGPUBindGroupEntry> entries(desc->entryCount);
  size_t spares = 0;
  for (size_t i = 0; i < desc->entryCount; ++i) {
    const auto& e = desc->entries[i];
    entries[i].binding = e.binding;
    entries[i].buffer = handle<::WGPUBuffer>(id_of(e.buffer));
    entries[i].offset = e.offset;
    entries[i].size = e.size;
    // The LLM ops bind one 16-byte placeholder tensor (LlmOps::dummy_) for every unused argument,
    // read-only and read-write in the same dispatch, which WebGPU forbids (Dawn natively skips the
    // check; with WGC_DEBUG=1 it fails there too). Until src/ops/llm uses a second placeholder for
    // writable slots, a placeholder-sized buffer bound again gets a spare buffer of its own.
    for (size_t j = 0; j < i; ++j)
      if (e.buffer && desc->entries[j].buffer == e.buffer && e.size <= kPlaceholderBytes) {
        entries[i].buffer = spare_buffer(d, spares++);
        entries[i].offset = 0;
        break;
      }
  }
  const string label = str(desc->label);
  ::WGPUBindGroupDescriptor o{};
  o.label = label.c_str();
  o.layout = handle<::WGPUBindGroupLayout>(id_of(desc->layout));
  o.entryCount = uint32_t(entries.size());
  o.entries = entries.data();
  return handle<WGPUBindGroup>(id_of(::wgpuDeviceCreateBindGroup(handle<::WGPUDevice>(id_of(d)), &o)));
}
void wgcBrowserBindGroupAddRef(WGPUBindGroup g) { ::wgpuBindGroupReference(handle<::WGPUBindGroup>(id_of(g))); }
void wgcBrowserBindGroupRelease(WGPUBindGroup g) { ::wgpuBindGroupRelease(handle<::WGPUBindGroup>(id_of(g))); }

// --- commands ----------------------------------------------------------------------------------
WGPUCommandEncoder wgcBrowserDeviceCreateCommandEncoder(WGPUDevice d, const WGPUCommandEncoderDescriptor*) {
  return handle<WGPUCommandEncoder>(id_of(::wgpuDeviceCreateCommandEncoder(handle<::WGPUDevice>(id_of(d)), nullptr)));
}
WGPUComputePassEncoder wgcBrowserCommandEncoderBeginComputePass(WGPUCommandEncoder e,
                                                                const WGPUComputePassDescriptor* desc) {
  if (desc && desc->timestampWrites) throw ::wgc::Error("wgc: timestamp writes are not available in the browser build");
  return handle<WGPUComputePassEncoder>(
      id_of(::wgpuCommandEncoderBeginComputePass(handle<::WGPUCommandEncoder>(id_of(e)), nullptr)));
}
void wgcBrowserCommandEncoderCopyBufferToBuffer(WGPUCommandEncoder e, WGPUBuffer src, uint64_t src_offset,
                                                WGPUBuffer dst, uint64_t dst_offset, uint64_t size) {
  ::wgpuCommandEncoderCopyBufferToBuffer(handle<::WGPUCommandEncoder>(id_of(e)), handle<::WGPUBuffer>(id_of(src)),
                                         src_offset, handle<::WGPUBuffer>(id_of(dst)), dst_offset, size);
}
void wgcBrowserCommandEncoderResolveQuerySet(WGPUCommandEncoder e, WGPUQuerySet q, uint32_t first, uint32_t count,
                                             WGPUBuffer dst, uint64_t offset) {
  ::wgpuCommandEncoderResolveQuerySet(handle<::WGPUCommandEncoder>(id_of(e)), handle<::WGPUQuerySet>(id_of(q)), first,
                                      count, handle<::WGPUBuffer>(id_of(dst)), offset);
}
WGPUCommandBuffer wgcBrowserCommandEncoderFinish(WGPUCommandEncoder e, const WGPUCommandBufferDescriptor*) {
  return handle<WGPUCommandBuffer>(id_of(::wgpuCommandEncoderFinish(handle<::WGPUCommandEncoder>(id_of(e)), nullptr)));
}
void wgcBrowserCommandEncoderRelease(WGPUCommandEncoder e) {
  ::wgpuCommandEncoderRelease(handle<::WGPUCommandEncoder>(id_of(e)));
}
void wgcBrowserComputePassEncoderSetPipeline(WGPUComputePassEncoder p, WGPUComputePipeline pipe) {
  ::wgpuComputePassEncoderSetPipeline(handle<::WGPUComputePassEncoder>(id_of(p)),
                                      handle<::WGPUComputePipeline>(id_of(pipe)));
}
void wgcBrowserComputePassEncoderSetBindGroup(WGPUComputePassEncoder p, uint32_t index, WGPUBindGroup g,
                                              size_t n_offsets, const uint32_t* offsets) {
  ::wgpuComputePassEncoderSetBindGroup(handle<::WGPUComputePassEncoder>(id_of(p)), index,
                                       handle<::WGPUBindGroup>(id_of(g)), uint32_t(n_offsets), offsets);
}
// The 2022 name (dispatch); webgpu_browser.js maps it onto dispatchWorkgroups.
void wgcBrowserComputePassEncoderDispatchWorkgroups(WGPUComputePassEncoder p, uint32_t x, uint32_t y, uint32_t z) {
  ::wgpuComputePassEncoderDispatch(handle<::WGPUComputePassEncoder>(id_of(p)), x, y, z);
}
void wgcBrowserComputePassEncoderEnd(WGPUComputePassEncoder p) {
  ::wgpuComputePassEncoderEnd(handle<::WGPUComputePassEncoder>(id_of(p)));
}
void wgcBrowserComputePassEncoderRelease(WGPUComputePassEncoder p) {
  ::wgpuComputePassEncoderRelease(handle<::WGPUComputePassEncoder>(id_of(p)));
}
void wgcBrowserCommandBufferRelease(WGPUCommandBuffer c) {
  ::wgpuCommandBufferRelease(handle<::WGPUCommandBuffer>(id_of(c)));
}

WGPUQuerySet wgcBrowserDeviceCreateQuerySet(WGPUDevice, const WGPUQuerySetDescriptor*) {
  throw ::wgc::Error("wgc: timestamp queries are not available in the browser build");
}
void wgcBrowserQuerySetRelease(WGPUQuerySet q) { ::wgpuQuerySetRelease(handle<::WGPUQuerySet>(id_of(q))); }

// --- the queue ---------------------------------------------------------------------------------
void wgcBrowserQueueSubmit(WGPUQueue q, size_t count, const WGPUCommandBuffer* commands) {
  std::vector<::WGPUCommandBuffer> c(count);
  for (size_t i = 0; i < count; ++i) c[i] = handle<::WGPUCommandBuffer>(id_of(commands[i]));
  ::wgpuQueueSubmit(handle<::WGPUQueue>(id_of(q)), uint32_t(count), c.data());
}
void wgcBrowserQueueWriteBuffer(WGPUQueue q, WGPUBuffer b, uint64_t offset, const void* data, size_t size) {
  ::wgpuQueueWriteBuffer(handle<::WGPUQueue>(id_of(q)), handle<::WGPUBuffer>(id_of(b)), offset, data, size);
}
WGPUFuture wgcBrowserQueueOnSubmittedWorkDone(WGPUQueue q, WGPUQueueWorkDoneCallbackInfo info) {
  auto* op = new_op(info);
  const uint32_t future = op->future;
  ::wgpuQueueOnSubmittedWorkDone(handle<::WGPUQueue>(id_of(q)), 0, on_work_done, op);
  return {future};
}
void wgcBrowserQueueRelease(WGPUQueue q) { ::wgpuQueueRelease(handle<::WGPUQueue>(id_of(q))); }

}  // extern "C"
}  // namespace cur

#endif  // __EMSCRIPTEN__
