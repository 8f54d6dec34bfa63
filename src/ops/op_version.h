// Benchmark hooks: one entry per kernel version of an op, so `wgc bench` can time every version
// with timestamp queries. Each op header has a function listing its versions (map_versions,
// reduce_versions, ...).
#pragma once

#include "gpu/batch.h"

#include <functional>
#include <span>
#include <string>

namespace wgc {

struct OpVersion {
  std::string op;                // "map.exp", "sum"
  std::string version;           // "vec4", "subgroup"
  int inputs = 1;                // f32 input tensors of n elements that record() takes
  bool scalar_output = false;    // the output holds 1 element (a reduction), else n
  double bytes_per_element = 0;  // bytes read + written per element of n (for GB/s)
  bool is_default = false;       // the version Auto picks on this context
  // Records one run reading `inputs` (each n floats, n = inputs[0].numel()) and writing `out`.
  // It may record several dispatches (a reduction's two passes: add their timings up) or a buffer
  // copy, which gets no timestamps (time it by the wall clock).
  std::function<void(Batch&, std::span<const Tensor> inputs, const Tensor& out)> record;
};

}  // namespace wgc
