// Facts about the shipped Dawn library (bun-webgpu-linux-x64@0.1.7) that its nearest published
// header (react-native-wgpu@0.3.2) gets wrong. Found by testing; pinned by tests/test_abi.cpp.
// See ../shared/notes/PLATFORM.md.
#pragma once

#include "gpu/webgpu_api.h"

#include <cstdint>
#include <vector>

namespace wgc::abi {

// WGPUFeatureName values as the library numbers them (the header's names for 0x3, 0xA, 0x11 and
// 0x50037 mean other features).
inline constexpr auto kFeatureTimestampQuery = static_cast<WGPUFeatureName>(0x3);
inline constexpr auto kFeatureShaderF16 = static_cast<WGPUFeatureName>(0xA);
inline constexpr auto kFeatureSubgroups = static_cast<WGPUFeatureName>(0x11);
inline constexpr auto kFeatureCoreFeaturesAndLimits = static_cast<WGPUFeatureName>(0x12);
inline constexpr auto kFeatureTimestampInsidePasses = static_cast<WGPUFeatureName>(0x50003);
inline constexpr auto kFeatureSubgroupMatrix = static_cast<WGPUFeatureName>(0x50037);

// The library's WGPULimits is 16 bytes longer than the header's (four uint32 at the end), and
// GetLimits writes them: always hand it this padded struct.
struct PaddedLimits {
  WGPULimits limits = WGPU_LIMITS_INIT;
  uint32_t library_extra[4] = {};
  uint32_t slack[12] = {};  // room in case a later build grows it again
};

}  // namespace wgc::abi

// Dawn's C++ entry point for listing adapters, which the C API lacks (wgpuInstanceRequestAdapter
// picks one). Declared here as the library exports it (libstdc++ ABI, pinned by
// tests/test_runtime.cpp ContextAdapters.*): an Adapter holds one reference to its AdapterBase,
// an Instance one to its InstanceBase, and WGPUInstance/WGPUAdapter are those pointers.
namespace dawn::native {
class InstanceBase;
class AdapterBase;
class Adapter {
 public:
  Adapter(const Adapter& other);
  ~Adapter();
  Adapter& operator=(const Adapter& other);
  WGPUAdapter Get() const;  // no reference added

 private:
  AdapterBase* impl_;
};
class Instance {
 public:
  explicit Instance(InstanceBase* impl);  // adds a reference
  ~Instance();
  Instance(const Instance&) = delete;
  Instance& operator=(const Instance&) = delete;
  std::vector<Adapter> EnumerateAdapters(const WGPURequestAdapterOptions* options) const;

 private:
  InstanceBase* impl_;
};
}  // namespace dawn::native
