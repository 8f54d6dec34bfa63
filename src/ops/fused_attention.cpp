#include "ops/fused_attention.h"

#include "ops/dense_common.h"

#include <cmath>

namespace wgc {

void fused_attention(Batch& batch, const Tensor& q, const Tensor& kt, const Tensor& v, const Tensor& mask,
                     const Tensor& out, const FusedAttentionDims& d) {
  const Context& ctx = batch.context();
  try {
    check(d);
  } catch (const Error& e) {
    throw Error(std::string("wgc: ") + e.what());
  }
  const char* op = "fused attention";
  detail::check_words(q, d.q_span(), "Q", op);
  detail::check_words(kt, d.k_span(), "K (transposed)", op);
  detail::check_words(v, d.v_span(), "V", op);
  if (d.mask) detail::check_words(mask, d.m_span(), "the mask", op);
  detail::check_words(out, d.out_count(), "the output", op);
  uint64_t rows = d.batches() * d.lq;
  if (rows == 0 || d.dv == 0) return;
  detail::check_index_range(rows, op);
  Params p(uint32_t(rows), d.lq, d.lk, d.d, d.dv, d.m_row, d.m_col, uint32_t(d.mask), d.scale, -INFINITY, 0u, 0u);
  // Batch dims right-aligned into 4 (leading extent-1 dims with stride 0).
  auto push4 = [&](const std::array<uint32_t, 4>& a, uint32_t fill) {
    uint32_t lead = FusedAttentionDims::kMaxBatchRank - d.rank;
    for (uint32_t i = 0; i < 4; ++i) p.push(i < lead ? fill : a[i - lead]);
  };
  push4(d.batch, 1u);
  push4(d.q_strides, 0u);
  push4(d.k_strides, 0u);
  push4(d.v_strides, 0u);
  push4(d.m_strides, 0u);
  batch.dispatch(detail::dense_kernel(ctx, "attention/fused.wgsl", {{"WG", 64}}), {q, kt, v, d.mask ? mask : q, out}, p,
                 groups_1d(ctx, rows));
}

}  // namespace wgc
