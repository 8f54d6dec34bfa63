// Where host-memory ops stop running on the CPU. A host-memory overload (e.g.
// `float sum(const Context&, std::span<const float>, Policy)`) runs its CPU reference when its
// work (in the op's unit: elements, pixels or FLOPs) is below the op's threshold, else uploads,
// dispatches and reads back. The threshold is, in order: Policy::cpu_below if set, the environment
// variable WGC_CPU_BELOW_<OP> if set (e.g. WGC_CPU_BELOW_SUM=100000; anything but a non-negative
// integer is an error naming the variable), else the op's constant below for the kind of adapter.
#pragma once

#include "gpu/context.h"

#include <cstdint>
#include <optional>
#include <string_view>

namespace wgc {

struct Policy {
  // Run on the CPU below this much work (the op's unit). Negative: the op's default (see above);
  // 0: always on the device; INT64_MAX: always on the CPU.
  int64_t cpu_below = -1;
};

namespace thresholds {

// One op's default: the work below which its CPU reference wins, per kind of adapter.
struct Threshold {
  std::string_view op;    // the suffix of its environment variable: WGC_CPU_BELOW_<op>
  std::string_view unit;  // what the work counts: "elements", "pixels", "FLOPs"
  uint64_t cpu_adapter;   // SwiftShader (the "device" is the same 2 CPU cores)
  uint64_t gpu_adapter;   // a real GPU (measured on the H200; other GPUs may want their own)
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
inline constexpr Threshold kSum{"SUM", "elements", kAlwaysCpu, kAlwaysCpu};
inline constexpr Threshold kMean{"MEAN", "elements", kAlwaysCpu, kAlwaysCpu};
inline constexpr Threshold kMax{"MAX", "elements", kAlwaysCpu, kAlwaysCpu};
inline constexpr Threshold kMin{"MIN", "elements", kAlwaysCpu, kAlwaysCpu};
inline constexpr Threshold kAdd{"ADD", "elements", kAlwaysCpu, kAlwaysCpu};
inline constexpr Threshold kMap{"MAP", "elements", kAlwaysCpu, 1ull << 15};    // unary expression map
inline constexpr Threshold kMap2{"MAP2", "elements", kAlwaysCpu, 1ull << 15};  // binary expression map

// Matmul, in FLOPs (2*M*N*K): the upload, dispatch and readback cost more than the arithmetic
// below it. SwiftShader: measured with `wgc bench --ops matmul`, the GPU path never wins (the value
// is far past any product tried). GPU: an estimate, not yet measured end to end: ~0.2 ms of fixed
// round trip plus uploads at ~3 GB/s (measured on the H200 for the reductions) against the plain
// CPU loop's ~5 GFLOP/s puts the crossover near 4 MFLOP (about 128^3).
inline constexpr Threshold kMatmul{"MATMUL", "FLOPs", 1'000'000'000'000ull, 4'000'000ull};

// Host-image stencils, in pixels, measured with Stencil.DISABLED_MeasureCpuThreshold in
// tests/test_stencil.cpp (host-image blur, sigma 2, and Sobel of RGB images at square sizes, the
// GPU path against the CPU path, best of 7):
//  - SwiftShader (this 2-core machine): the GPU path was slower at every size tried, 8x8 to
//    1024x1024 (Sobel 4-16x, blur 4-40x slower): a size past the largest tried (4096x4096).
//  - H200 (its host's CPU, one thread): the GPU path wins from about 96x96 for the blur
//    (0.47 vs 0.51 ms; 64x64: 0.33 vs 0.23) and from about 192x192 for Sobel (0.70 vs 0.69;
//    128x128: 0.38 vs 0.29).
inline constexpr Threshold kSobel{"SOBEL", "pixels", 1ull << 24, 192 * 192};
inline constexpr Threshold kBlur{"BLUR", "pixels", 1ull << 24, 96 * 96};

// Convolution (work = FLOPs, Conv2dDims::flops) and pooling (work = elements of x): see
// ops/conv.cpp and ops/pool.cpp for how these were measured or estimated.
inline constexpr Threshold kConv2d{"CONV2D", "FLOPs", kAlwaysCpu, 1ull << 22};
inline constexpr Threshold kPool2d{"POOL2D", "elements", kAlwaysCpu, 1ull << 20};

}  // namespace thresholds

// The threshold in force for an op on this context (see the top of this file). A malformed
// environment value is an error naming the variable.
uint64_t cpu_below(const Context& ctx, const thresholds::Threshold& t, const Policy& policy = {});
// The part that needs no device: the policy's value if set, else the environment's, else none.
std::optional<uint64_t> cpu_below_override(const thresholds::Threshold& t, const Policy& policy = {});

// True when an op with this much work (the threshold's unit) should run on the CPU.
inline bool run_on_cpu(const Context& ctx, const thresholds::Threshold& t, const Policy& policy, uint64_t work) {
  return work < cpu_below(ctx, t, policy);
}

}  // namespace wgc
