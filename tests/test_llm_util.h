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
inline std::vector<llm::Version> linear_versions() {
  std::vector<llm::Version> v = {llm::Version::Naive, llm::Version::Shared, llm::Version::RegTile,
                                 llm::Version::Batched};
  if (ops().versions().end() != std::find_if(ops().versions().begin(), ops().versions().end(),
                                             [](auto& k) { return k.version.find("subgroup") != std::string::npos; }))
    v.push_back(llm::Version::Subgroup);
  return v;
}

inline const char* name(llm::Version v) {
  switch (v) {
    case llm::Version::Auto: return "auto";
    case llm::Version::Naive: return "naive";
    case llm::Version::Subgroup: return "subgroup";
    case llm::Version::Shared: return "shared";
    case llm::Version::RegTile: return "regtile";
    case llm::Version::Batched: return "batched";
    case llm::Version::BatchedQ8: return "batched-q8";
  }
  return "?";
}

}  // namespace wgc::test
