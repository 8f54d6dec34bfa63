#include "ops/norm.h"

#include "ops/dense_common.h"

namespace wgc {

namespace {

void record(Batch& batch, const Tensor& x, const Tensor& scale, const Tensor& bias, const Tensor& y, const NormDims& d,
            bool stats) {
  const Context& ctx = batch.context();
  const char* op = stats ? "norm stats" : "norm";
  try {
    check(d);
  } catch (const Error& e) {
    throw Error(std::string("wgc: ") + op + ": " + e.what());
  }
  detail::check_words(x, d.count(), "x", op);
  detail::check_words(y, stats ? 2 * uint64_t(d.rows) : d.count(), "y", op);
  if (!stats) {
    detail::check_words(scale, d.params(), "scale", op);
    detail::check_words(bias, d.params(), "bias", op);
  }
  if (d.rows == 0) return;
  Params p(d.rows, d.len, d.period, d.row_stride, d.div, d.eps, 0u, 0u);
  Kernel k = detail::dense_kernel(ctx, "norm/rows.wgsl", {{"STATS", stats ? 1.0 : 0.0}});
  batch.dispatch(k, {x, stats ? x : scale, stats ? x : bias, y}, p, groups_1d(ctx, d.rows));
}

}  // namespace

void norm(Batch& batch, const Tensor& x, const Tensor& scale, const Tensor& bias, const Tensor& y, const NormDims& d) {
  record(batch, x, scale, bias, y, d, false);
}

void norm_stats(Batch& batch, const Tensor& x, const Tensor& stats, const NormDims& d) {
  record(batch, x, Tensor(), Tensor(), stats, d, true);
}

}  // namespace wgc
