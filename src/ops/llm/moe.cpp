// LlmOps' mixture-of-experts ops: the router's top-k and the grouping of tokens by expert
// (moe_route.wgsl), the routed experts' linears over stacked weights (moe_linear.wgsl: the
// expert ids are read on the GPU, no host round trip), and the weighted sum into the residual
// (moe_combine.wgsl).
#include "ops/llm/llm_ops.h"
#include "ops/llm/op_checks.h"

#include <algorithm>

namespace wgc::llm {

using detail::need;
using detail::need_elems;
using detail::prelude_u32;
using detail::shape_tag;
using detail::str;
using detail::u32;

namespace {

// moe_linear.wgsl's schedule: lanes per row group (fixes the arithmetic), invocations, x tile.
constexpr uint32_t kMoeKl = 8, kMoeWg = 64, kMoeXt = 256;
constexpr uint32_t kMoeRowsPerGroup = 4;

// moe_linear.wgsl's variant: the weight type and the pairs it holds sums for at a time (TT:
// kMoeChunk, or 1 for one token, whose k experts are distinct, so every run is one pair; TT
// never changes a result).
struct MoeLinearVariant {
  TensorType type = TensorType::F32;
  uint32_t tt = kMoeChunk;
  KernelSpec spec() const {
    return {"llm/moe_linear/" + str(type) + "/" + shape_tag({tt, kMoeWg, kMoeKl, kMoeXt}),
            {"llm/common.wgsl", "llm/weights/" + str(type) + ".wgsl", "llm/moe_linear.wgsl"},
            prelude_u32("TT", tt) + prelude_u32("WG", kMoeWg) + prelude_u32("KL", kMoeKl) + prelude_u32("XT", kMoeXt)};
  }
};

void check_routing(const MoeRouting& r, int n_tokens, const std::string& op) {
  need(r.k >= 1 && r.k <= r.n_experts && r.n_experts <= kMoeMaxExperts, op,
       std::to_string(r.k) + " of " + std::to_string(r.n_experts) +
           " experts (1 <= k <= experts <= " + std::to_string(kMoeMaxExperts) + ")");
  need(n_tokens >= 1 && n_tokens <= r.max_tokens, op,
       std::to_string(n_tokens) + " tokens, the routing holds 1.." + std::to_string(r.max_tokens));
}

}  // namespace

uint64_t moe_max_runs(int n_tokens, int n_experts, int k) {
  return std::min<uint64_t>(uint64_t(n_experts), uint64_t(n_tokens) * uint64_t(k));
}

MoeRouting make_moe_routing(const Context& ctx, int max_tokens, int n_experts, int k) {
  MoeRouting r;
  r.max_tokens = max_tokens;
  r.n_experts = n_experts;
  r.k = k;
  check_routing(r, 1, "moe routing");
  const int64_t pairs = int64_t(max_tokens) * k;
  r.ids = make_tensor(ctx, {pairs}, DType::U32);
  r.wts = make_tensor(ctx, {pairs});
  r.order = make_tensor(ctx, {pairs}, DType::U32);
  r.runs = make_tensor(ctx, {int64_t(1 + 3 * moe_max_runs(max_tokens, n_experts, k))}, DType::U32);
  return r;
}

void LlmOps::moe_route(Batch& b, const Tensor& logits, int64_t stride, int n_tokens, bool norm_topk,
                       const MoeRouting& r) const {
  const std::string op = "moe route";
  check_routing(r, n_tokens, op);
  need(stride >= r.n_experts, op, "logit stride " + std::to_string(stride) + " < " + std::to_string(r.n_experts));
  need_elems(logits, (n_tokens - 1) * stride + r.n_experts, op, "logits");
  Kernel k = kernel({"llm/moe_route", {"llm/common.wgsl", "llm/moe_route.wgsl"}});
  b.dispatch(k, {logits, r.ids, r.wts, r.order, r.runs},
             Params(u32(n_tokens), u32(r.n_experts), u32(r.k), u32(stride), norm_topk ? 1u : 0u), {1, 1, 1});
}

void LlmOps::moe_linear(Batch& b, const GpuWeight& w, int64_t rows, const Tensor& x, int64_t x_stride, bool x_per_pair,
                        const Tensor& y, int64_t y_stride, int64_t y_off, int n_tokens, const MoeRouting& r) const {
  const std::string op = "moe linear " + str(w.type);
  check_routing(r, n_tokens, op);
  need(rows >= 1 && w.rows == rows * r.n_experts, op,
       "a stacked weight of " + std::to_string(w.rows) + " rows is not " + std::to_string(r.n_experts) +
           " experts of " + std::to_string(rows));
  need(x_stride >= w.cols && y_stride >= y_off + rows && y_off >= 0, op, "strides");
  const int64_t pairs = int64_t(n_tokens) * r.k, x_rows = x_per_pair ? pairs : n_tokens;
  need_elems(x, (x_rows - 1) * x_stride + w.cols, op, "x");
  need_elems(y, (pairs - 1) * y_stride + y_off + rows, op, "y");
  const uint32_t tt = n_tokens == 1 ? 1 : kMoeChunk;
  const uint64_t smem =
      std::max<uint64_t>(uint64_t(tt) * (kMoeXt / 4 + kMoeXt / 32) * 16, uint64_t(kMoeWg) * std::min(tt, 4u) * 16);
  need(smem <= caps_.workgroup_storage && kMoeWg <= max_wg_, op,
       std::to_string(smem) + " bytes of workgroup memory and " + std::to_string(kMoeWg) +
           " invocations, beyond the adapter's");
  const uint64_t runs = moe_max_runs(n_tokens, r.n_experts, r.k);
  const uint64_t row_tiles = ceil_div(uint64_t(rows), kMoeWg / kMoeKl * kMoeRowsPerGroup);
  const uint64_t most = ctx_.limits().max_compute_workgroups_per_dimension;
  need(runs <= most && row_tiles <= most, op, "too many experts or rows for one dispatch");
  Kernel k = kernel(MoeLinearVariant{w.type, tt}.spec());
  b.dispatch(k, {w.data, w.scales, x, r.order, r.runs, y},
             Params(u32(rows), u32(w.cols), u32(x_stride), u32(x_per_pair ? 1 : r.k), u32(y_stride), u32(y_off)),
             {u32(runs), u32(row_tiles), 1});
}

void LlmOps::moe_combine(Batch& b, const Tensor& yd, const MoeRouting& r, int n_tokens, int64_t hidden,
                         const Tensor& ys, const Tensor& gate, int64_t g_stride, int64_t g_col, const Tensor& x) const {
  const std::string op = "moe combine";
  check_routing(r, n_tokens, op);
  need_elems(yd, int64_t(n_tokens) * r.k * hidden, op, "expert outputs");
  need_elems(x, int64_t(n_tokens) * hidden, op, "x");
  const bool shared = bool(ys);
  if (shared) {
    need_elems(ys, int64_t(n_tokens) * hidden, op, "shared expert output");
    need_elems(gate, (n_tokens - 1) * g_stride + g_col + 1, op, "shared expert gate");
  }
  Kernel k = kernel({"llm/moe_combine", {"llm/common.wgsl", "llm/moe_combine.wgsl"}});
  b.dispatch(k, {yd, r.wts, shared ? ys : dummy_, shared ? gate : dummy_, x},
             Params(u32(n_tokens), u32(hidden), u32(r.k), shared ? 1u : 0u, u32(g_stride), u32(g_col)),
             groups_1d(ctx_, ceil_div(uint64_t(n_tokens) * uint64_t(hidden), 256)));
}

}  // namespace wgc::llm
