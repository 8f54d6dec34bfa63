// LlmOps' 8-bit-activation path: quantizing activations (alone, after RMSNorm or SwiGLU), the
// integer-dot-product matvec and matmul, and decode attention with a quantized output.
#include "ops/llm/llm_ops.h"
#include "ops/llm/op_checks.h"
#include "util/error.h"

#include <algorithm>

namespace wgc::llm {

namespace {

using detail::need;
using detail::need_elems;
using detail::need_q8;
using detail::shape_tag;
using detail::str;
using detail::u32;

std::string prelude_bool(const char* name, bool v) {
  return std::string("const ") + name + ": bool = " + (v ? "true" : "false") + ";\n";
}
std::string prelude_u32(const char* name, uint32_t v) {
  return std::string("const ") + name + ": u32 = " + std::to_string(v) + "u;\n";
}

// A q8dot/*.wgsl file's unit: x blocks of 32 (MQ_UB), words per scale (MQ_SW), mins (MQ_MIN).
struct MmqUnit {
  uint32_t blocks, words_per_scale;
  bool mins;
};
MmqUnit mmq_unit(TensorType t) {
  if (t == TensorType::Q4_K) return {2, 8, true};
  if (t == TensorType::Q6_K) return {4, 4, false};
  return {1, 8, false};  // Q4_0, Q8_0
}
// matmul_q8.wgsl's workgroup memory with su units per step and a bm x bn tile.
uint64_t mmq_shared_bytes(const MmqUnit& u, uint32_t su, uint32_t bm, uint32_t bn) {
  const uint64_t words = 8ull * u.blocks * su, groups = words / u.words_per_scale, blocks = uint64_t(u.blocks) * su;
  const uint64_t per = u.mins ? 2 : 1;
  return 4 * (words * (bm + bn) + groups * bn * per + blocks * bm * per);
}

constexpr uint32_t kMatvecQ8MaxRows = 8;  // matvec_q8.wgsl: R_MAX
constexpr uint32_t kSwigluRows = 64;      // matvec_q8.wgsl: gate and up rows per SWIGLU workgroup

}  // namespace

Q8Act make_q8_act(const Context& ctx, int max_tokens, int64_t cols) {
  if (max_tokens <= 0 || cols <= 0 || cols % 32)
    throw Error("wgc: 8-bit activations of " + std::to_string(max_tokens) + " tokens x " + std::to_string(cols) +
                " columns (a positive multiple of 32)");
  Q8Act a;
  a.qs = make_tensor(ctx, {int64_t(max_tokens) * cols / 4}, DType::U32);
  a.ds = make_tensor(ctx, {int64_t(max_tokens) * cols / 16}, DType::U32);
  a.max_tokens = max_tokens;
  a.cols = cols;
  return a;
}

bool supports_q8(TensorType t) {
  return t == TensorType::Q4_0 || t == TensorType::Q8_0 || t == TensorType::Q4_K || t == TensorType::Q6_K;
}

Kernel LlmOps::q8_kernel(const std::string& kind, TensorType t, const std::string& tag, const std::string& prelude,
                         std::vector<std::pair<std::string, double>> constants) const {
  const std::string key = "llm/" + kind + "/" + str(t) + "/" + tag;  // the tag names the prelude and constants
  std::vector<std::string> files = {"llm/common.wgsl", "llm/weights/" + str(t) + ".wgsl", "llm/q8_act.wgsl",
                                    "llm/q8dot/" + str(t) + ".wgsl"};
  const bool sg = kind == "matvec_q8" && subgroups_;
  if (kind == "matvec_q8") {
    files.push_back(sg ? "llm/reduce_sg.wgsl" : "llm/reduce_wg.wgsl");
    if (sg) constants.push_back({"SG", sg_size_});
  }
  files.push_back("llm/" + kind + ".wgsl");
  return kernel(key, files, std::move(constants), sg, "main", prelude);
}

// ---- quantizing activations ----------------------------------------------------------------

void LlmOps::quant_act(Batch& b, const Tensor& x, const Tensor& w, const Q8Act& out, int n_tokens, int64_t x_stride,
                       int64_t x_offset, uint32_t mode, int64_t up_offset, float eps, const std::string& op,
                       uint32_t fixed_wg) const {
  need_q8(out, n_tokens, op, "out");
  if (x_stride < 0) x_stride = out.cols;
  need(x_offset >= 0, op, "negative offset");
  need_elems(x, (n_tokens - 1) * x_stride + x_offset + out.cols + (mode == 2 ? up_offset : 0), op, "x");
  if (mode == 1) need_elems(w, out.cols, op, "w");
  // One token (decode) gets a wider workgroup: the whole row in as few passes as the adapter allows.
  // A fixed size (fixed_wg) keeps RMSNorm's sum of squares in one order whatever the batch.
  uint32_t wg = std::max<uint32_t>(8, fixed_wg ? fixed_wg : tuning.quant_wg);
  if (n_tokens == 1 && !fixed_wg)
    wg = std::min<uint32_t>(std::min<uint32_t>(wg * 4, max_wg_), u32(std::max<int64_t>(out.cols / 4, 8)));
  uint32_t p2 = 8;
  while (p2 * 2 <= wg && p2 * 2 <= max_wg_) p2 *= 2;
  Kernel k =
      kernel("llm/quant_act/" + std::to_string(p2), {"llm/common.wgsl", "llm/quant_act.wgsl"}, {{"WG", p2}}, false);
  b.dispatch(k, {x, mode == 1 ? w : dummy_, out.qs, out.ds},
             Params(u32(n_tokens), u32(out.cols), u32(x_stride), u32(x_offset), mode, u32(up_offset), eps),
             groups_1d(ctx_, u32(n_tokens)));
}

void LlmOps::quantize_q8(Batch& b, const Tensor& x, const Q8Act& out, int n_tokens, int64_t x_stride,
                         int64_t x_offset) const {
  quant_act(b, x, dummy_, out, n_tokens, x_stride, x_offset, 0, 0, 0.f, "quantize_q8");
}

void LlmOps::rms_norm_q8(Batch& b, const Tensor& x, const Tensor& w, const Q8Act& out, int n_tokens, float eps,
                         int64_t x_stride, int64_t x_offset, uint32_t wg) const {
  quant_act(b, x, w, out, n_tokens, x_stride, x_offset, 1, 0, eps, "rms_norm_q8", wg);
}

void LlmOps::swiglu_q8(Batch& b, const Tensor& gu, int64_t stride, int64_t up_offset, const Q8Act& out,
                       int n_tokens) const {
  need(up_offset >= out.cols || up_offset <= -out.cols, "swiglu_q8", "gate and up overlap");
  need(up_offset >= 0, "swiglu_q8", "the up part must follow the gate part");
  quant_act(b, gu, dummy_, out, n_tokens, stride, 0, 2, up_offset, 0.f, "swiglu_q8");
}

// ---- integer-dot linear --------------------------------------------------------------------

void LlmOps::linear_q8(Batch& b, const GpuWeight& w, const Q8Act& x, const Tensor& y, int n_tokens,
                       const LinearOptions& o) const {
  const std::string op = "linear_q8 " + str(w.type);
  need(supports_q8(w.type), op, "8-bit activations take Q4_0, Q8_0, Q4_K or Q6_K weights");
  const auto [rows, ys, flags] = detail::check_linear_q8(w, x, y, n_tokens, o, op);
  const Tensor& bias = o.bias ? o.bias : dummy_;
  if (n_tokens == 1) {
    const uint32_t wg = std::min(tuning.mvq_wg, max_wg_), tpr = std::min(tuning.mvq_tpr, wg);
    const uint32_t r = tuning.mvq_rows;
    need(wg % tpr == 0 && (tpr & (tpr - 1)) == 0, op,
         "matvec tpr " + std::to_string(tpr) + " (a power of two dividing the workgroup)");
    need(r >= 1 && r <= kMatvecQ8MaxRows, op, "matvec rows " + std::to_string(r) + " (1..8)");
    Kernel k = q8_kernel("matvec_q8", w.type, shape_tag({wg, tpr, r}), prelude_bool("SWIGLU", false),
                         {{"WG", wg}, {"TPR", tpr}, {"R", r}});
    b.dispatch(k, {w.data, w.scales, x.qs, x.ds, bias, y, dummy_},
               Params(u32(rows), u32(w.cols), u32(o.row0), u32(o.y_offset), flags, 0u),
               groups_1d(ctx_, ceil_div(uint64_t(rows), wg / tpr * r)));
    return;
  }
  uint32_t bm = tuning.mmq_bm, bn = tuning.mmq_bn;
  need(bm >= 8 && bn >= 8 && bm % 8 == 0 && bn % 8 == 0 && bm * bn / 64 <= max_wg_, op,
       "tile " + std::to_string(bm) + "x" + std::to_string(bn) + " (multiples of 8, at most " +
           std::to_string(max_wg_ * 64) + " outputs)");
  // Small products (a 1B model's projections) give too few tiles to fill the GPU: halve the rows
  // per tile (to 32), then the tokens (to 16), until there are mmq_min_groups workgroups.
  auto groups = [&] { return ceil_div(uint64_t(rows), bn) * uint64_t(ceil_div(uint64_t(n_tokens), bm)); };
  while (groups() < tuning.mmq_min_groups && bn > 32 && bn % 16 == 0) bn /= 2;
  while (groups() < tuning.mmq_min_groups && bm > 16 && bm % 16 == 0) bm /= 2;
  const uint64_t row_tiles = ceil_div(uint64_t(rows), bn), tok_tiles = ceil_div(uint64_t(n_tokens), bm);
  need(row_tiles <= ctx_.limits().max_compute_workgroups_per_dimension &&
           tok_tiles <= ctx_.limits().max_compute_workgroups_per_dimension,
       op, "too many rows or tokens for one dispatch");
  // Units per step: mmq_units, halved until it divides the units of a row and the step's
  // workgroup memory fits.
  const MmqUnit mu = mmq_unit(w.type);
  const uint64_t units = uint64_t(w.cols) / (32 * mu.blocks);
  uint32_t su = std::max<uint32_t>(1, tuning.mmq_units);
  while (su > 1 && (units % su || mmq_shared_bytes(mu, su, bm, bn) > ctx_.limits().max_compute_workgroup_storage_size))
    su /= 2;
  const bool magic = tuning.mmq_magic != 0;
  Kernel k = q8_kernel(
      "matmul_q8", w.type, shape_tag({bm, bn, su}) + (magic ? "" : "/i2f"),
      prelude_u32("BM", bm) + prelude_u32("BN", bn) + prelude_u32("SU", su) + prelude_bool("MQ_MAGIC", magic), {});
  b.dispatch(k, {w.data, w.scales, x.qs, x.ds, bias, y},
             Params(u32(n_tokens), u32(rows), u32(w.cols), u32(o.row0), u32(ys), u32(o.y_offset), flags),
             {u32(row_tiles), u32(tok_tiles), 1});
}

void LlmOps::linear_swiglu_q8(Batch& b, const GpuWeight& w, const Q8Act& x, const Q8Act& out) const {
  const std::string op = "linear_swiglu_q8 " + str(w.type);
  need(supports_q8(w.type), op, "8-bit activations take Q4_0, Q8_0, Q4_K or Q6_K weights");
  need(x.cols == w.cols, op, "x has " + std::to_string(x.cols) + " columns, the weight " + std::to_string(w.cols));
  need_q8(x, 1, op, "x");
  need_q8(out, 1, op, "out");
  need(w.rows == 2 * out.cols, op,
       "a gate|up weight of " + std::to_string(w.rows) + " rows for " + std::to_string(out.cols) + " outputs");
  const uint32_t wg = std::min(tuning.mvq_wg, max_wg_), tpr = std::min(tuning.mvq_tpr, wg);
  need(wg % tpr == 0 && (tpr & (tpr - 1)) == 0 && kSwigluRows * tpr % wg == 0, op,
       "matvec tpr " + std::to_string(tpr) + " with a workgroup of " + std::to_string(wg));
  const uint32_t r = kSwigluRows * tpr / wg;
  need(r >= 1 && r <= kMatvecQ8MaxRows, op,
       std::to_string(wg / tpr) + " row groups per workgroup cannot take 64 rows (8 per group at most)");
  Kernel k = q8_kernel("matvec_q8", w.type, "swiglu/" + shape_tag({wg, tpr, r}), prelude_bool("SWIGLU", true),
                       {{"WG", wg}, {"TPR", tpr}, {"R", r}});
  b.dispatch(k, {w.data, w.scales, x.qs, x.ds, dummy_, out.qs, out.ds},
             Params(u32(w.rows), u32(w.cols), 0u, 0u, 0u, u32(out.cols)), groups_1d(ctx_, u32(out.cols / 32)));
}

void LlmOps::attention_decode_q8(Batch& b, const KvLayer& c, const Tensor& q, const Q8Act& out,
                                 const AttentionArgs& a) const {
  const std::string op = "attention_decode_q8";
  const int hd = c.head_dim;
  need(hd % 32 == 0 && uint32_t(hd) <= max_wg_, op, "head_dim " + std::to_string(hd) + " (a multiple of 32)");
  need(out.cols == int64_t(a.n_heads) * hd, op,
       "out has " + std::to_string(out.cols) + " columns for " + std::to_string(a.n_heads) + " heads");
  need_q8(out, 1, op, "out");
  AttentionArgs pa = a;
  pa.o_stride = -1;
  pa.o_offset = 0;
  Tensor part;
  const uint32_t splits = attention_decode_pass(b, c, q, nullptr, pa, part);
  Kernel kc = kernel("llm/attn_combine_q8/" + std::to_string(hd), {"llm/common.wgsl", "llm/attn_combine_q8.wgsl"},
                     {{"HD", hd}}, false);
  b.dispatch(kc, {part, out.qs, out.ds}, Params(u32(a.n_heads), splits), {u32(a.n_heads), 1, 1});
}

}  // namespace wgc::llm
