#include "ops/resize.h"

#include "ops/dense_common.h"

namespace wgc {

void resize(Batch& batch, const Tensor& x, const Tensor& table, const Tensor& y, const ResizeDims& d) {
  const Context& ctx = batch.context();
  const char* op = "resize";
  if (d.taps_h == 0 || d.taps_w == 0) throw Error("wgc: resize: 0 taps");
  detail::check_index_range(d.in_count(), op);
  detail::check_index_range(d.out_count(), op);
  detail::check_words(x, d.in_count(), "x", op);
  detail::check_words(table, d.table_floats(), "the taps table", op);
  detail::check_words(y, d.out_count(), "y", op);
  uint64_t n = d.out_count();
  if (n == 0) return;
  Params p(uint32_t(n), d.outer, d.in_h, d.in_w, d.out_h, d.out_w, d.mid, d.inner, d.taps_h, d.taps_w,
           uint32_t(2 * uint64_t(d.out_h) * d.taps_h), d.extrapolation);
  batch.dispatch(detail::dense_kernel(ctx, "resize/taps.wgsl", {{"WG", detail::kDenseWorkgroup}}), {x, table, y}, p,
                 detail::dense_groups(ctx, n));
}

}  // namespace wgc
