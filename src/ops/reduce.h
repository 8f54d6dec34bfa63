// Reductions of f32 tensors of any length to one value: sum, max, min, mean.
//
// Versions (all selectable; Auto picks the best the context supports):
//   Naive     one element per invocation, a tree in workgroup memory, one partial per workgroup;
//             repeated over the partials until one value is left (ceil(log_256 n) passes)
//   Vec4      a grid-stride loop over vec4s (4 loads in flight per invocation), a tree in
//             workgroup memory, one partial per workgroup; a second pass of one workgroup over
//             the partials (one pass when one workgroup suffices)
//   Subgroup  as Vec4 with subgroupAdd/Max/Min inside the workgroup; only where
//             ctx.features().subgroups
// Max, min and mean of an empty tensor are errors; the sum of one is 0. NaN inputs give
// unspecified results for max and min (WGSL's max/min do not define them).
#pragma once

#include "gpu/batch.h"
#include "ops/op_version.h"
#include "ops/thresholds.h"

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace wgc {

enum class ReduceOp { Sum, Max, Min, Mean };
enum class ReduceVersion { Auto, Naive, Vec4, Subgroup };
std::string_view to_string(ReduceOp op);                    // "sum", "max", "min", "mean"
std::string_view to_string(ReduceVersion v);                // "auto", "naive", "vec4", "subgroup"
ReduceVersion parse_reduce_version(std::string_view name);  // throws naming the op and the valid names
inline constexpr ReduceVersion kReduceVersions[] = {ReduceVersion::Naive, ReduceVersion::Vec4, ReduceVersion::Subgroup};

// The problem: the first n elements of the input (it may hold more).
struct ReduceDims {
  uint64_t n = 0;
};

// Subgroup needs ctx.features().subgroups; the others run everywhere.
bool supports(const Context& ctx, ReduceVersion v, const ReduceDims& d);
// What Auto runs: Subgroup where the adapter has subgroups, else Vec4 (H200 at 256M floats: both
// at 99% of the copy bandwidth, the tree-per-pass Naive at 19%; docs/benchmarks.md).
ReduceVersion choose_reduce(const Context& ctx, const ReduceDims& d);

// Tuning knobs, for benchmarks; the defaults are what the ops use.
struct ReduceConfig {
  uint32_t workgroup = 256;  // invocations per workgroup: a power of two, at most the device's limit
  uint32_t max_groups = 0;   // Vec4/Subgroup: partials of the first pass; 0: the adapter's default
};

// Records the reduction of x[0 .. d.n) (f32) into out[0] (an f32 tensor of at least 1 element).
// Scratch tensors for partials come from the context's pool and live as long as the batch needs.
void reduce(Batch& batch, const Tensor& x, const Tensor& out, const ReduceDims& d, ReduceOp op, ReduceConfig cfg = {},
            ReduceVersion v = ReduceVersion::Auto);

// A new 1-element tensor holding the result (waits).
Tensor reduce(const Context& ctx, const Tensor& x, ReduceOp op, ReduceVersion v = ReduceVersion::Auto);

// The result read back to the host.
float reduce_value(const Context& ctx, const Tensor& x, ReduceOp op, ReduceVersion v = ReduceVersion::Auto);
float sum(const Context& ctx, const Tensor& x, ReduceVersion v = ReduceVersion::Auto);
float max(const Context& ctx, const Tensor& x, ReduceVersion v = ReduceVersion::Auto);
float min(const Context& ctx, const Tensor& x, ReduceVersion v = ReduceVersion::Auto);
float mean(const Context& ctx, const Tensor& x, ReduceVersion v = ReduceVersion::Auto);

// Host memory: the CPU below the op's threshold (ops/thresholds.h: kSum, kMax, kMin, kMean, in
// elements), else upload + reduce + read back.
float sum(const Context& ctx, std::span<const float> x, Policy policy = {});
float max(const Context& ctx, std::span<const float> x, Policy policy = {});
float min(const Context& ctx, std::span<const float> x, Policy policy = {});
float mean(const Context& ctx, std::span<const float> x, Policy policy = {});

// Benchmark hooks: every supported version of op (scalar output; 4 bytes per element).
std::vector<OpVersion> reduce_versions(const Context& ctx, ReduceOp op = ReduceOp::Sum);

}  // namespace wgc
