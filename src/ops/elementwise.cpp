#include "ops/elementwise.h"

#include "ops/dense_common.h"

namespace wgc {

void elementwise(Batch& batch, const Tensor& a, const Tensor& b, const Tensor& c, const Tensor& out, const EwParams& p,
                 const EwDims& d) {
  const Context& ctx = batch.context();
  std::string op = "elementwise " + std::string(to_string(p.op));
  int arity = ew_arity(p.op);
  uint64_t n = d.count();
  detail::check_index_range(n, op);
  if (d.rank > kMaxRank) throw Error("wgc: " + op + ": rank " + std::to_string(d.rank));
  const Tensor* ins[3] = {&a, &b, &c};
  for (int k = 0; k < arity; ++k) {
    int64_t hi = 0;
    for (uint32_t i = 0; i < d.rank; ++i) {
      if (d.strides[size_t(k)][i] < 0) throw Error("wgc: " + op + ": a negative stride");
      hi += d.strides[size_t(k)][i] * int64_t(d.shape[i] ? d.shape[i] - 1 : 0);
    }
    detail::check_words(*ins[k], n ? uint64_t(hi) + 1 : 0, "operand " + std::to_string(k), op);
    if (hi > INT32_MAX) throw LimitError("wgc: " + op + ": an operand's walk passes 2^31 elements");
  }
  detail::check_words(out, n, "the output", op);
  if (n == 0) return;
  Params prm(uint32_t(n), 0u, p.alpha, p.beta);
  uint32_t lead = kMaxRank - d.rank;
  for (uint32_t i = 0; i < kMaxRank; ++i) prm.push(i < lead ? 1u : d.shape[i - lead]);
  for (size_t k = 0; k < 3; ++k)
    for (uint32_t i = 0; i < kMaxRank; ++i) prm.push(i < lead || int(k) >= arity ? 0 : int32_t(d.strides[k][i - lead]));
  Kernel kern =
      detail::dense_kernel(ctx, "elementwise/ew.wgsl",
                           {{"OP", double(int(p.op))}, {"INTS", p.ints ? 1.0 : 0.0}, {"WG", detail::kDenseWorkgroup}});
  batch.dispatch(kern, {a, arity > 1 ? b : a, arity > 2 ? c : a, out}, prm, detail::dense_groups(ctx, n));
}

}  // namespace wgc
