#include "ops/pool.h"

#include "gpu/kernel.h"
#include "util/error.h"

#include <string>

namespace wgc {
namespace {

constexpr uint32_t kPoolWg = 256;  // pool2d.wgsl

void need(const Tensor& t, uint64_t elems, const std::string& what) {
  if (!t) throw Error("wgc: " + what + " is an empty tensor");
  if (t.dtype() != DType::F32) throw Error("wgc: " + what + " must be f32, got " + std::string(to_string(t.dtype())));
  if (t.capacity() < elems * 4)
    throw Error("wgc: " + what + " holds " + std::to_string(t.capacity() / 4) + " floats, needs " +
                std::to_string(elems));
}

}  // namespace

void pool2d(Batch& batch, const Tensor& x, const Tensor& y, const Pool2dDims& d, PoolKind kind) {
  check(d);
  need(x, d.x_elements(), "pool2d " + d.str() + ": x");
  need(y, d.y_elements(), "pool2d " + d.str() + ": y");
  if (x.buffer() == y.buffer()) throw Error("wgc: pool2d " + d.str() + ": y must not share a buffer with x");
  const Context& ctx = batch.context();
  Kernel k = compile(ctx, embedded_kernel("pool/pool2d.wgsl", {{"MAX", kind == PoolKind::Max ? 1 : 0}}));
  Params p(d.n * d.c, d.h, d.w, d.out_h(), d.out_w(), d.kh, d.kw, d.stride_h, d.stride_w, d.dil_h, d.dil_w, d.pad_top,
           d.pad_left, d.pad_bottom, d.pad_right, uint32_t(d.count_include_pad));
  batch.dispatch(k, {x, y}, p, groups_1d(ctx, ceil_div(d.y_elements(), kPoolWg)));
}

void global_average_pool(Batch& batch, const Tensor& x, const Tensor& y, uint32_t n, uint32_t c, uint32_t hw) {
  std::string what =
      "global_average_pool n" + std::to_string(n) + " c" + std::to_string(c) + " hw" + std::to_string(hw);
  if (n == 0 || c == 0 || hw == 0) throw Error("wgc: " + what + ": a size is 0");
  uint64_t planes = uint64_t(n) * c;
  if (planes * hw >= (uint64_t(1) << 31)) throw Error("wgc: " + what + ": x passes 2^31 elements");
  need(x, planes * hw, what + ": x");
  need(y, planes, what + ": y");
  if (x.buffer() == y.buffer()) throw Error("wgc: " + what + ": y must not share a buffer with x");
  const Context& ctx = batch.context();
  Kernel k = compile(ctx, embedded_kernel("pool/global_average.wgsl"));
  batch.dispatch(k, {x, y}, Params(uint32_t(planes), hw), groups_1d(ctx, planes));
}

std::vector<float> pool2d(const Context& ctx, std::span<const float> x, const Pool2dDims& d, PoolKind kind,
                          Policy policy) {
  check(d);
  std::vector<float> y(d.y_elements());
  if (x.size() < d.x_elements())
    throw Error("wgc: pool2d " + d.str() + ": x holds " + std::to_string(x.size()) + " values, needs " +
                std::to_string(d.x_elements()));
  if (run_on_cpu(ctx, thresholds::kPool2d, policy, d.x_elements())) {
    cpu::pool2d(x, y, d, kind);
    return y;
  }
  Tensor tx = make_tensor(ctx, {int64_t(d.x_elements())}, x.first(d.x_elements()));
  Tensor ty = make_tensor(ctx, {int64_t(y.size())});
  Batch batch(ctx);
  pool2d(batch, tx, ty, d, kind);
  batch.run();
  download(ctx, ty, std::as_writable_bytes(std::span(y)));
  return y;
}

}  // namespace wgc
