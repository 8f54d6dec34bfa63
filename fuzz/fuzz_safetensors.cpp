// libFuzzer target: the safetensors reader (and the JSON parser under it), then converting each
// tensor's data. Any input must give a result or a wgc::Error.
#include "cpu/llm/dequant.h"
#include "llm/formats/safetensors.h"
#include "util/error.h"

#include <cstddef>
#include <cstdint>

using namespace wgc::llm;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  try {
    SafetensorsFile f = SafetensorsFile::parse(bytes, "fuzz.safetensors");
    for (const auto& t : f.tensors()) {
      if (f.find(t.name) != &t) __builtin_trap();  // the index must agree
      if (t.numel() <= 4096) (void)dequantize(t.type, t.data, size_t(t.numel()));
    }
  } catch (const wgc::Error&) {
  }
  return 0;
}
