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
  uint64_t gpu_adapter;  // a real GPU: a placeholder until measured on the H200
};

// SwiftShader values: measured on the 2-core development machine with
// `WGC_THRESHOLD_SCAN=1 build/tests/test_reduce --gtest_filter='*ThresholdScan*'` (and test_map),
// which times, per length, the host-span op forced onto the CPU against the same op forced onto
// the device (upload + dispatch + readback, median of repeats). On SwiftShader the device is the
// same CPU behind a Vulkan emulation: the GPU path has a fixed cost of ~0.2-0.5 ms per call and
// runs the loop itself no faster than a plain C++ loop, so for the reductions and add it never
// catches up at any length that fits in memory (the cross-over is past 2^26; the constant is the
// largest length tried). For the expression maps the CPU path is an interpreter, which SwiftShader's
// compiled kernel does overtake.
// GPU values: placeholders (about where a ~60 us round trip, the H200's, costs as much as a CPU
// loop at ~1-4 GB/s); the lead measures them on the H200.
inline constexpr Threshold kSum{"SUM", 1ull << 26, 1ull << 16};
inline constexpr Threshold kMean{"MEAN", 1ull << 26, 1ull << 16};
inline constexpr Threshold kMax{"MAX", 1ull << 26, 1ull << 16};
inline constexpr Threshold kMin{"MIN", 1ull << 26, 1ull << 16};
inline constexpr Threshold kAdd{"ADD", 1ull << 26, 1ull << 16};
inline constexpr Threshold kMap{"MAP", 1ull << 16, 1ull << 14};    // unary expression map
inline constexpr Threshold kMap2{"MAP2", 1ull << 16, 1ull << 14};  // binary expression map

}  // namespace thresholds

// The threshold in force for an op on this context (see the top of this file). A malformed
// environment value is an error naming the variable.
uint64_t cpu_below(const Context& ctx, const thresholds::Threshold& t, const Policy& policy = {});

// True when an op over n elements should run on the CPU.
inline bool run_on_cpu(const Context& ctx, const thresholds::Threshold& t, const Policy& policy, uint64_t n) {
  return n < cpu_below(ctx, t, policy);
}

}  // namespace wgc
