// CPU reductions of f32 data: float64 references the GPU reductions are checked against, and the
// fallbacks for host-memory reductions too small to pay for a GPU round trip.
#pragma once

#include <span>

namespace wgc::cpu {

// The float64 sum (the reference) and the sum of absolute values (for error bounds).
double sum_f64(std::span<const float> x);
double sum_abs_f64(std::span<const float> x);

// The fallbacks: accumulate in double, round once. Empty input: sum 0; max, min and mean throw
// wgc::Error (they have no value).
float sum(std::span<const float> x);
float mean(std::span<const float> x);
float max(std::span<const float> x);
float min(std::span<const float> x);

}  // namespace wgc::cpu
