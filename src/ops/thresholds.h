// Where host-memory ops stop running on the CPU. A host-span overload (e.g.
// `float sum(const Context&, std::span<const float>, Policy)`) runs its CPU loop when the element
// count is below the op's threshold, else uploads, dispatches and reads back. The threshold is,
// in order: Policy::cpu_below if set, the environment variable WGC_CPU_BELOW_<OP> if set (e.g.
// WGC_CPU_BELOW_SUM=100000), else the op's constant below for the kind of adapter.
#pragma once

#include "gpu/context.h"

#include <cstdint>
#include <string_view>

namespace wgc {

struct Policy {
  // Run on the CPU below this many elements. Negative: the op's default (see above); 0: always
  // on the device; INT64_MAX: always on the CPU.
  int64_t cpu_below = -1;
};

namespace thresholds {

// One op's default: the element count below which its CPU loop wins, per kind of adapter.
struct Threshold {
  std::string_view op;   // the suffix of its environment variable: WGC_CPU_BELOW_<op>
  uint64_t cpu_adapter;  // SwiftShader (the "device" is the same 2 CPU cores)
  uint64_t gpu_adapter;  // a real GPU (measured on the H200; other GPUs may want their own)
};

// "Never worth it": the device path did not win at any length measured (up to 2^24 elements).
inline constexpr uint64_t kAlwaysCpu = UINT64_MAX;

// Measured 2026-11-29 with `WGC_THRESHOLD_SCAN=1 test_reduce --gtest_filter=Measure.ThresholdScan`
// (and the same in test_map): per length 256 .. 2^24 (x4 steps), the host-span op forced onto the
// CPU (Policy{INT64_MAX}) against the same op forced onto the device (Policy{0}: upload, dispatch,
// readback), median of 5-15 runs. Maps were timed with "exp(x) * 0.5" and "exp(x) * y".
//
// SwiftShader (2-core development machine): the device never won, for any op or length. Its
// fixed cost is ~0.06-0.2 ms a call and it then runs 5-50x slower than the CPU loop (which is the
// same CPU, without Vulkan emulation in between), even against the interpreted expression maps.
//
// H200 (16-core Xeon host): a round trip costs ~0.12-0.14 ms, and the upload (Dawn's writeBuffer,
// ~3 GB/s) costs more than a CPU loop that reads the data once: for sum/max/min/mean and add the
// device never won (at 2^24: sum 12 ms CPU vs 21.5 ms device; add 53 vs 97 ms). Expression maps
// run on the CPU through an interpreter (~4.5 ns/element with an exp); the device wins from
// between 2^14 (CPU 0.07 ms vs 0.14 ms) and 2^16 (0.29 vs 0.19 ms): 2^15. Cheap expressions
// ("x * y + 1.0") never won there either; the threshold is set for the expensive kind.
// Data that is already on the device should use the Tensor overloads: no upload, no readback.
inline constexpr Threshold kSum{"SUM", kAlwaysCpu, kAlwaysCpu};
inline constexpr Threshold kMean{"MEAN", kAlwaysCpu, kAlwaysCpu};
inline constexpr Threshold kMax{"MAX", kAlwaysCpu, kAlwaysCpu};
inline constexpr Threshold kMin{"MIN", kAlwaysCpu, kAlwaysCpu};
inline constexpr Threshold kAdd{"ADD", kAlwaysCpu, kAlwaysCpu};
inline constexpr Threshold kMap{"MAP", kAlwaysCpu, 1ull << 15};    // unary expression map
inline constexpr Threshold kMap2{"MAP2", kAlwaysCpu, 1ull << 15};  // binary expression map

// Convolution (work = FLOPs, Conv2dDims::flops) and pooling (work = elements of x): see
// ops/conv.cpp and ops/pool.cpp for how these were measured or estimated.
inline constexpr Threshold kConv2d{"CONV2D", kAlwaysCpu, 1ull << 22};
inline constexpr Threshold kPool2d{"POOL2D", kAlwaysCpu, 1ull << 20};

}  // namespace thresholds

// The threshold in force for an op on this context (see the top of this file). A malformed
// environment value is an error naming the variable.
uint64_t cpu_below(const Context& ctx, const thresholds::Threshold& t, const Policy& policy = {});

// True when an op over n elements should run on the CPU.
inline bool run_on_cpu(const Context& ctx, const thresholds::Threshold& t, const Policy& policy, uint64_t n) {
  return n < cpu_below(ctx, t, policy);
}

}  // namespace wgc
