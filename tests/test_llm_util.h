// Shared by the tests/test_llm_*.cpp files.
#pragma once

#include "cpu/llm/llm_ref.h"
#include "ops/llm/llm_ops.h"
#include "test_util.h"

#include <string>
#include <vector>

namespace wgc::test {

inline llm::LlmOps& ops() {
  static llm::LlmOps o(ctx());
  return o;
}

inline Tensor poisoned(int64_t n, DType t = DType::F32) {
  auto x = make_tensor(ctx(), {n}, t);
  fill_u32(ctx(), x, kPoisonNaN);
  return x;
}

inline std::vector<float> to_float(const std::vector<double>& v) { return {v.begin(), v.end()}; }

// The versions of a matvec/matmul this adapter runs.
inline std::vector<llm::LinearVersion> linear_versions() {
  std::vector<llm::LinearVersion> v;
  for (auto lv : llm::kLinearVersions)
    if (ops().supports(lv, {})) v.push_back(lv);
  return v;
}

}  // namespace wgc::test
