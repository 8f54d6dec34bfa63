// LlmOps' selection ops: argmax, top-k (of one row or many), the rows' log-sum-exp, and
// next_token (the argmax that also embeds its token and advances the position on the GPU).
#include "ops/llm/llm_ops.h"
#include "ops/llm/op_checks.h"

namespace wgc::llm {

using detail::need;
using detail::need_elems;
using detail::str;
using detail::u32;

namespace {
constexpr uint32_t kSelectWG = 256, kSelectCH = 2048;
}  // namespace

void LlmOps::select_pass(Batch& b, const Tensor& vals, const Tensor& ids, bool have_ids, int64_t count, int k, int rows,
                         int64_t in_stride, int64_t out_stride, const Tensor& out_v, const Tensor& out_i) const {
  Kernel kern = kernel({"llm/topk",
                        {"llm/common.wgsl", "llm/select_order.wgsl", "llm/topk.wgsl"},
                        "",
                        {{"WG", kSelectWG}, {"CH", kSelectCH}}});
  Groups g = groups_1d(ctx_, ceil_div(uint64_t(count), kSelectCH));
  g.z = u32(rows);
  b.dispatch(kern, {vals, ids, out_v, out_i},
             Params(u32(count), u32(k), have_ids ? 1u : 0u, u32(in_stride), u32(out_stride)), g);
}

void LlmOps::topk(Batch& b, const Tensor& logits, int64_t n, int k, const Tensor& out_vals,
                  const Tensor& out_ids) const {
  topk_rows(b, logits, 1, n, k, out_vals, out_ids);
}

void LlmOps::topk_rows(Batch& b, const Tensor& logits, int rows, int64_t n, int k, const Tensor& out_vals,
                       const Tensor& out_ids) const {
  const std::string op = "topk";
  need(k >= 1 && k <= 64 && k <= n, op, "k = " + std::to_string(k) + " (1..64, at most n)");
  need(rows >= 1 && uint32_t(rows) <= ctx_.limits().max_compute_workgroups_per_dimension, op,
       std::to_string(rows) + " rows");
  need_elems(logits, int64_t(rows) * n, op, "logits");
  need_elems(out_vals, int64_t(rows) * k, op, "out_vals");
  need_elems(out_ids, int64_t(rows) * k, op, "out_ids");
  const SelectCandidates c = select_candidates(b, logits, rows, n, k);
  select_pass(b, c.vals, c.ids, c.have_ids, c.count, k, rows, c.count, k, out_vals, out_ids);
}

LlmOps::SelectCandidates LlmOps::select_candidates(Batch& b, const Tensor& logits, int rows, int64_t n, int k) const {
  SelectCandidates c{logits, logits, false, n};
  for (;;) {
    const uint32_t nwg = ceil_div(uint64_t(c.count), kSelectCH);
    if (nwg == 1) return c;
    const int64_t per_row = int64_t(nwg) * k;
    Tensor tv = make_tensor(ctx_, {rows * per_row}), ti = make_tensor(ctx_, {rows * per_row}, DType::U32);
    select_pass(b, c.vals, c.ids, c.have_ids, c.count, k, rows, c.count, per_row, tv, ti);
    c = {tv, ti, true, per_row};
  }
}

void LlmOps::row_logsumexp(Batch& b, const Tensor& logits, int rows, int64_t n, const Tensor& out) const {
  const std::string op = "row_logsumexp";
  need(rows >= 1 && n >= 1, op, "empty");
  need_elems(logits, int64_t(rows) * n, op, "logits");
  need_elems(out, rows, op, "out");
  Kernel k = kernel({"llm/row_lse", {"llm/common.wgsl", "llm/row_lse.wgsl"}, "", {{"WG", kSelectWG}}});
  b.dispatch(k, {logits, out}, Params(u32(rows), u32(n)), groups_1d(ctx_, u32(rows)));
}

void LlmOps::argmax(Batch& b, const Tensor& logits, int64_t n, const Tensor& out) const {
  need(n >= 1, "argmax", "empty");
  topk(b, logits, n, 1, make_tensor(ctx_, {1}), out);
}

void LlmOps::next_token(Batch& b, const Tensor& logits, int64_t n, const Tensor& out, const GpuWeight& table,
                        const Tensor& x, const Tensor& pos) const {
  const std::string op = "next_token";
  need(n >= 1, op, "empty");
  need_elems(logits, n, op, "logits");
  need_elems(out, 1, op, "out");
  need_elems(x, table.cols, op, "x");
  need_elems(pos, 2, op, "pos");
  const SelectCandidates c = select_candidates(b, logits, 1, n, 1);
  Kernel k = kernel(
      {"llm/next_token/" + str(table.type),
       {"llm/common.wgsl", "llm/weights/" + str(table.type) + ".wgsl", "llm/select_order.wgsl", "llm/next_token.wgsl"},
       "",
       {{"WG", kSelectWG}}});
  b.dispatch(k, {table.data, table.scales, c.vals, c.ids, out, pos, x},
             Params(u32(c.count), c.have_ids ? 1u : 0u, u32(table.cols), u32(table.rows)), Groups{});
}

}  // namespace wgc::llm
