// libFuzzer target: the GGUF reader, then everything a caller does with what it returns (typed
// getters, value rendering, tensor data, dequantization, the model config). Any input must give a
// result or a wgc::Error, never a crash, a sanitizer report, or a huge allocation.
#include "cpu/llm/dequant.h"
#include "llm/formats/gguf.h"
#include "llm/formats/model_config.h"
#include "util/error.h"

#include <cstddef>
#include <cstdint>

using namespace wgc::llm;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  try {
    GgufFile f = GgufFile::parse(bytes, "fuzz.gguf");
    for (const auto& kv : f.metadata()) {
      (void)kv.value.describe();
      try {
        (void)f.get_string(kv.key);
      } catch (const wgc::Error&) {
      }
      try {
        (void)f.get_u32(kv.key);
        (void)f.get_f32(kv.key);
        (void)f.get_bool(kv.key);
      } catch (const wgc::Error&) {
      }
      try {
        (void)f.get_string_array(kv.key);
      } catch (const wgc::Error&) {
      }
      try {
        (void)f.get_i32_array(kv.key);
      } catch (const wgc::Error&) {
      }
      try {
        (void)f.get_f32_array(kv.key);
      } catch (const wgc::Error&) {
      }
    }
    for (const auto& t : f.tensors()) {
      auto d = f.tensor_data(t);
      // Dequantize the first row (bounded, so a large declared shape costs nothing).
      uint64_t row = t.ne.empty() ? 1 : uint64_t(t.ne[0]);
      if (row > 4096 || row == 0) continue;
      auto rb = row_bytes(t.type, row);
      if (rb && *rb <= d.size()) (void)dequantize(t.type, d.first(size_t(*rb)), size_t(row));
    }
    try {
      (void)config_from_gguf(f).rope_inv_freq();
    } catch (const wgc::Error&) {
    }
  } catch (const wgc::Error&) {
  }
  return 0;
}
