// Argument checks and small conversions shared by the LLM ops' sources (llm_ops.cpp,
// linear_q8.cpp); not installed.
#pragma once

#include "cpu/llm/tensor_type.h"
#include "gpu/tensor.h"
#include "util/error.h"

#include <cctype>
#include <cstdint>
#include <string>

namespace wgc::llm::detail {

// The lower-case type name of the weight kernels' files (llm/weights/q8_0.wgsl) and of messages.
inline std::string str(TensorType t) {
  std::string s(to_string(t));
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

inline void need(bool ok, const std::string& op, const std::string& what) {
  if (!ok) throw Error("wgc: llm " + op + ": " + what);
}

inline void need_elems(const Tensor& t, int64_t elems, const std::string& op, const std::string& name) {
  need(bool(t), op, name + " is missing");
  need(uint64_t(elems) * 4 <= t.capacity(), op,
       name + " holds " + std::to_string(t.capacity() / 4) + " elements, the op needs " + std::to_string(elems));
}

inline uint32_t u32(int64_t v) { return static_cast<uint32_t>(v); }

}  // namespace wgc::llm::detail
