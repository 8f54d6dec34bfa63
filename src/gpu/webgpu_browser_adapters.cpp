// The wasm build's stand-in for Dawn's C++ adapter enumeration (webgpu_abi.h; an empty file
// natively), which context.cpp calls for an adapter index or the cpu-vulkan backend. A browser
// offers one adapter, through requestAdapter (webgpu_browser.cpp), so the list is empty and those
// options end in the runtime's "no adapter found" error.
#ifdef __EMSCRIPTEN__
#include "gpu/webgpu_abi.h"

namespace dawn::native {
Adapter::Adapter(const Adapter& other) : impl_(other.impl_) {}
Adapter::~Adapter() = default;
Adapter& Adapter::operator=(const Adapter& other) = default;
WGPUAdapter Adapter::Get() const { return reinterpret_cast<WGPUAdapter>(impl_); }
Instance::Instance(InstanceBase* impl) : impl_(impl) {}
Instance::~Instance() = default;
std::vector<Adapter> Instance::EnumerateAdapters(const WGPURequestAdapterOptions*) const {
  (void)impl_;
  return {};
}
}  // namespace dawn::native

#endif  // __EMSCRIPTEN__
