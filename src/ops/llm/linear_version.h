// The kernel family of the LLM engines' linear layers (matrix x activations), chosen per model by
// Auto or by name (wgc serve --kernel, bench-batched, tests). Public: SchedulerOptions and
// BatchedOptions name it.
#pragma once

#include <string_view>

namespace wgc::llm {

// The kernel versions of linear (y = W x). matvec (n_tokens == 1): Naive, or Subgroup / Shared
// reductions. matmul (n_tokens > 1): Naive, Shared (or Subgroup): the 64x64 tiled kernel, RegTile:
// the register-tiled kernel (also for one token).
// Batched: the serving kernel for any number of tokens (linear_batched.wgsl), whose results do not
// depend on the number of tokens (bit-identical for a token alone or in a batch; so does Naive).
// BatchedQ8: the same with x quantized to 8 bits per block of 32 (per token) and integer dot
// products, for Q4_0 / Q8_0 weights only (results differ from the f32 kernels by that rounding).
enum class LinearVersion { Auto, Naive, Subgroup, Shared, RegTile, Batched, BatchedQ8 };
// "auto", "naive", "subgroup", "shared", "regtile", "batched", "batched-q8"
std::string_view to_string(LinearVersion v);
LinearVersion parse_linear_version(std::string_view name);  // throws naming the op and the valid names
inline constexpr LinearVersion kLinearVersions[] = {LinearVersion::Naive,   LinearVersion::Subgroup,
                                                    LinearVersion::Shared,  LinearVersion::RegTile,
                                                    LinearVersion::Batched, LinearVersion::BatchedQ8};

}  // namespace wgc::llm
