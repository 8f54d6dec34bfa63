// Shared by the kernel families of the ONNX graph ops that are not convolutions (elementwise,
// norm, resize, index_ops): size checks of 4-byte tensors and kernel lookup.
#pragma once

#include "gpu/batch.h"
#include "gpu/kernel.h"
#include "util/error.h"

#include <string>
#include <string_view>

namespace wgc::detail {

inline constexpr uint32_t kDenseWorkgroup = 256;

// Throws unless t is a tensor of 4-byte elements holding at least `elems` of them.
inline void check_words(const Tensor& t, uint64_t elems, std::string_view what, std::string_view op) {
  if (!t) throw Error("wgc: " + std::string(op) + ": " + std::string(what) + " is an empty tensor");
  if (dtype_size(t.dtype()) != 4)
    throw Error("wgc: " + std::string(op) + ": " + std::string(what) + " is " + std::string(to_string(t.dtype())) +
                ", a 4-byte type (f32, i32) is needed");
  if (t.bytes() / 4 < elems)
    throw Error("wgc: " + std::string(op) + ": " + std::string(what) + " holds " + std::to_string(t.bytes() / 4) +
                " elements, needs " + std::to_string(elems));
}

inline void check_index_range(uint64_t n, std::string_view op) {
  if (n > UINT32_MAX)
    throw LimitError("wgc: " + std::string(op) + ": " + std::to_string(n) +
                     " elements exceed the kernels' 32-bit index");
}

inline Kernel dense_kernel(const Context& ctx, const char* file, std::vector<std::pair<std::string, double>> consts) {
  return compile(ctx, embedded_kernel(file, std::move(consts)));
}

// One invocation per element of n, kDenseWorkgroup per workgroup.
inline Groups dense_groups(const Context& ctx, uint64_t n) { return groups_1d(ctx, ceil_div(n, kDenseWorkgroup)); }

}  // namespace wgc::detail
