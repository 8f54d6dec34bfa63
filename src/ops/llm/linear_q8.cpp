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
using detail::prelude_bool;
using detail::prelude_u32;
using detail::shape_tag;
using detail::str;
using detail::u32;

// The files of a kernel of 8-bit activations (matvec_q8.wgsl, matmul_q8.wgsl) before its own:
// the weight type's layout, where x comes from, the activations' layout and the integer dots.
std::vector<std::string> q8_files(TensorType t, const char* x_file) {
  return {"llm/common.wgsl", "llm/weights/" + str(t) + ".wgsl", x_file, "llm/q8_act.wgsl",
          "llm/q8dot/" + str(t) + ".wgsl"};
}

// A q8dot/*.wgsl file's unit: x blocks of 32 (MQ_UB), words per scale (MQ_SW), mins (MQ_MIN).
struct MmqUnit {
  uint32_t blocks, words_per_scale;
  bool mins;
};
MmqUnit mmq_unit(TensorType t) {
  if (t == TensorType::Q4_K) return {2, 8, true};
  if (t == TensorType::Q6_K) return {2, 4, false};
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
// matvec_q8.wgsl: the uniform's binding (P_BINDING), after 7 storage buffers, or with ROPE after
// 10 (matvec_q8_rope.wgsl's 7-9); P's ROPE fields (zero without).
constexpr uint32_t kPlainUniform = 7, kRopeUniform = 10, kRopeParams = 9;

// Words of a q8dot/*.wgsl file's WV (a row's matvec unit as v_load loads it), and the most words
// of them matvec_q8.wgsl loads ahead per invocation (tuning.mvq_pf): registers, not spills.
uint32_t unit_words(TensorType t) {
  if (t == TensorType::Q4_K) return 10;
  if (t == TensorType::Q6_K) return 14;
  if (t == TensorType::Q8_0) return 9;
  return 5;  // Q4_0
}
constexpr uint32_t kPrefetchWords = 96;
bool is_kquant(TensorType t) { return t == TensorType::Q4_K || t == TensorType::Q6_K; }

// matvec_q8.wgsl's variant (one token): its schedule (LlmOps::MatvecQ8Shape), the SWIGLU rows or
// the ROPE epilogue, x RMS-normalised and quantized inside (q8_act_norm.wgsl: each workgroup
// quantizes x * w, its scale applied after the dot products) or quantized before
// (q8_act_global.wgsl), the subgroup size of its reductions (0: workgroup memory).
struct MatvecQ8Variant {
  TensorType type = TensorType::Q4_0;
  uint32_t wg = 0, tpr = 0, rows = 0, unroll = 0, pf = 0, cols = 0;
  bool swiglu = false, rope = false, norm = false;
  uint32_t sg = 0;

  KernelSpec spec() const {
    std::string tag = shape_tag({wg, tpr, rows, unroll}) + (pf ? "/pf" + std::to_string(pf) : "") +
                      (cols ? "/c" + std::to_string(cols) : "");
    const std::string shape = prelude_u32("PF_K", pf) + prelude_u32("PF_N", std::max(1u, pf * rows)) +
                              prelude_u32("XS", cols),
                      x = norm ? prelude_u32("XC", cols) + prelude_bool("XSWZ", false) + prelude_bool("LATE", true)
                               : std::string();
    KernelSpec s;
    s.prelude = prelude_bool("MV_HALF", false);
    if (swiglu) {
      tag = "swiglu/" + tag;
      s.prelude += prelude_bool("SWIGLU", true) + shape + x + prelude_bool("ROPE", false) +
                   prelude_u32("P_BINDING", kPlainUniform);
    } else {
      s.prelude += prelude_bool("SWIGLU", false) + prelude_bool("ROPE", rope) +
                   prelude_u32("P_BINDING", rope ? kRopeUniform : kPlainUniform) + shape + x;
    }
    if (norm) tag = "norm_late" + std::to_string(cols) + "/" + tag;
    if (rope) tag = "rope/" + tag;
    s.key = "llm/matvec_q8/" + str(type) + "/" + tag;
    s.files = q8_files(type, norm ? "llm/q8_act_norm.wgsl" : "llm/q8_act_global.wgsl");
    s.files.insert(s.files.end(),
                   {sg ? "llm/reduce_sg.wgsl" : "llm/reduce_wg.wgsl", "llm/rope_pair.wgsl",
                    rope ? "llm/matvec_q8_rope.wgsl" : "llm/matvec_q8_norope.wgsl", "llm/matvec_q8.wgsl"});
    s.constants = {{"WG", wg}, {"TPR", tpr}, {"R", rows}, {"UNROLL", unroll}};
    if (sg) s.constants.push_back({"SG", sg});
    s.subgroups = sg != 0;
    return s;
  }
};

// (Shape: LlmOps::MatvecQ8Shape.)
template <class Shape>
MatvecQ8Variant matvec_q8_variant(TensorType t, const Shape& m, bool swiglu, bool rope, bool norm, uint32_t sg) {
  MatvecQ8Variant v;
  v.type = t;
  v.wg = m.wg;
  v.tpr = m.tpr;
  v.rows = m.rows;
  v.unroll = m.unroll;
  v.pf = m.pf;
  v.cols = m.cols;
  v.swiglu = swiglu;
  v.rope = rope;
  v.norm = norm;
  v.sg = sg;
  return v;
}

// matmul_q8.wgsl's variant (prefill): tokens x weight rows per workgroup, units per step.
struct MatmulQ8Variant {
  TensorType type = TensorType::Q4_0;
  uint32_t bm = 0, bn = 0, su = 0;
  KernelSpec spec() const {
    std::vector<std::string> files = q8_files(type, "llm/q8_act_global.wgsl");
    files.push_back("llm/matmul_q8.wgsl");
    return {"llm/matmul_q8/" + str(type) + "/" + shape_tag({bm, bn, su}), std::move(files),
            prelude_bool("MV_HALF", false) + prelude_u32("BM", bm) + prelude_u32("BN", bn) + prelude_u32("SU", su) +
                prelude_bool("MQ_MAGIC", true)};
  }
};
constexpr uint32_t kQuantWg = 256;  // quant_act.wgsl: invocations per token (up to 4x for one token)

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
  // Steps of fewer than tuning.quant_groups tokens split each row's passes between workgroups
  // (the same bits; RMSNorm's sum of squares redone by each).
  uint32_t wg = std::max<uint32_t>(8, fixed_wg ? fixed_wg : kQuantWg);
  // (Modes 0 and 2 round each block alone: their workgroup size changes no bit, RMSNorm's does.)
  const bool split = tuning.quant_groups > uint32_t(n_tokens);
  if (n_tokens == 1 && !fixed_wg && !(split && mode != 1))
    wg = std::min<uint32_t>(std::min<uint32_t>(wg * 4, max_wg_), u32(std::max<int64_t>(out.cols / 4, 8)));
  uint32_t p2 = 8;
  while (p2 * 2 <= wg && p2 * 2 <= max_wg_) p2 *= 2;
  const uint32_t passes = ceil_div(uint64_t(out.cols) / 4, p2);
  const uint32_t chunks = split ? std::min(passes, ceil_div(tuning.quant_groups, uint64_t(n_tokens))) : 1;
  Kernel k =
      kernel({"llm/quant_act/" + std::to_string(p2), {"llm/common.wgsl", "llm/quant_act.wgsl"}, "", {{"WG", p2}}});
  Groups g = groups_1d(ctx_, u32(n_tokens));
  g.z = chunks;
  b.dispatch(k, {x, mode == 1 ? w : dummy_, out.qs, out.ds},
             Params(u32(n_tokens), u32(out.cols), u32(x_stride), u32(x_offset), mode, u32(up_offset), eps), g);
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

LlmOps::MatvecQ8Shape LlmOps::matvec_q8_shape(const std::string& op, const GpuWeight& w, uint32_t group_rows,
                                              uint32_t wg_rows, uint32_t tpr_knob) const {
  const TensorType t = w.type;
  const uint32_t cols = u32(w.cols);
  const uint32_t wg = std::min(tuning.mvq_wg, max_wg_), tpr = std::min(tpr_knob ? tpr_knob : tuning.mvq_tpr, wg);
  need(wg % tpr == 0 && (tpr & (tpr - 1)) == 0, op,
       "matvec tpr " + std::to_string(tpr) + " (a power of two dividing the workgroup of " + std::to_string(wg) + ")");
  need(tuning.mvq_unroll >= 1 && tuning.mvq_unroll <= 8, op,
       "matvec unroll " + std::to_string(tuning.mvq_unroll) + " (1..8)");
  uint32_t r = group_rows ? group_rows : tuning.mvq_rows;
  if (wg_rows) {
    need(wg_rows * tpr % wg == 0, op,
         std::to_string(wg / tpr) + " row groups per workgroup cannot share " + std::to_string(wg_rows) + " rows");
    r = wg_rows * tpr / wg;
  }
  need(r >= 1 && r <= kMatvecQ8MaxRows, op,
       "matvec rows " + std::to_string(r) + " per group (1.." + std::to_string(kMatvecQ8MaxRows) + ")");
  // Units per row loaded ahead of x_prologue: tuning.mvq_pf, at most a step's, within kPrefetchWords.
  const uint32_t pf_knob = is_kquant(t) && tuning.mvq_kq_pf ? tuning.mvq_kq_pf : tuning.mvq_pf;
  const uint32_t pf = std::min({pf_knob, tuning.mvq_unroll, kPrefetchWords / (r * unit_words(t))});
  // The columns built into the kernel (a kernel per width: the unit loops' trip counts known to
  // the compiler; session 6 with the late norm and pf: 8B Q4_0 435 -> 463.9 t/s).
  return {wg, tpr, r, tuning.mvq_unroll, pf, cols};
}

LlmOps::Q8Fusions LlmOps::matvec_q8_fusions(int64_t cols) const {
  Q8Fusions f;
  if (cols <= 0 || cols % 32) return f;
  const uint64_t wg = std::min(tuning.mvq_wg, max_wg_);
  // q8_act_norm.wgsl's xw and xd, matvec_q8.wgsl's red and res
  const uint64_t bytes = uint64_t(cols) + uint64_t(cols) / 4 + 4 * wg + 4 * kSwigluRows;
  f.norm = bytes <= caps_.workgroup_storage;
  f.rope = f.norm && caps_.storage_buffers >= kRopeUniform;  // buffers 0-9
  return f;
}

void LlmOps::check_norm_q8(const Tensor& x, const Tensor& norm_w, int64_t cols, const std::string& op) const {
  need(matvec_q8_fusions(cols).norm, op,
       std::to_string(cols) + " columns (a multiple of 32 whose quants fit in the workgroup memory)");
  need_elems(x, cols, op, "x");
  need_elems(norm_w, cols, op, "norm weight");
}

void LlmOps::rms_norm_linear_q8(Batch& b, const Tensor& x, const Tensor& norm_w, float eps, const GpuWeight& w,
                                const Tensor& y, const LinearOptions& o) const {
  const std::string op = "rms_norm_linear_q8 " + str(w.type);
  need(supports_q8(w.type), op, "8-bit activations take Q4_0, Q8_0, Q4_K or Q6_K weights");
  check_norm_q8(x, norm_w, w.cols, op);
  matvec_q8(b, w, x, norm_w, eps, true, y, o, op);
}

void LlmOps::matvec_q8(Batch& b, const GpuWeight& w, const Tensor& x2, const Tensor& x3, float eps, bool norm_x,
                       const Tensor& y, const LinearOptions& o, const std::string& op, const RopeKv* rope) const {
  const int64_t rows = o.rows < 0 ? w.rows - o.row0 : o.rows;
  need(o.row0 >= 0 && rows > 0 && o.row0 + rows <= w.rows, op,
       "rows " + std::to_string(o.row0) + "+" + std::to_string(rows) + " of a " + std::to_string(w.rows) +
           "-row weight");
  need_elems(y, o.y_offset + rows, op, "y");
  if (o.bias) need_elems(o.bias, o.row0 + rows, op, "bias");
  const uint32_t flags = (o.bias ? 1u : 0u) | (o.accumulate ? 2u : 0u);
  // Rows per group: ROPE a RoPE pair, else tuning.mvq_rows.
  const MatvecQ8Shape m = matvec_q8_shape(op, w, rope ? 2 : 0, 0, 0);
  const uint32_t sg = subgroups_ && sg_size_ >= 2 ? sg_size_ : 0u;  // partner() shuffles pairs
  Kernel k = kernel(matvec_q8_variant(w.type, m, false, rope != nullptr, norm_x, sg).spec());
  Params prm(u32(rows), u32(w.cols), u32(o.row0), u32(o.y_offset), flags, 0u, eps);
  std::vector<Arg> args = {w.data, w.scales, x2, x3, o.bias ? o.bias : dummy_, y};
  if (rope) {
    const RopeKvArgs& a = *rope->args;
    const KvLayer& c = *rope->cache;
    detail::push_rope_params(prm, *rope->table, c, a);
    prm.push(u32(rope->row0 / c.head_dim));
    args.insert(args.end(), {rope->table->cos_sin, a.positions ? a.positions : dummy_, c.k, c.v});
  } else {
    for (uint32_t i = 0; i < kRopeParams; ++i) prm.push(0u);
    args.push_back(dummy_);
  }
  const uint64_t groups = rope ? uint64_t(rows) / 2 : ceil_div(uint64_t(rows), m.wg / m.tpr * m.rows);
  b.dispatch(k, std::move(args), prm, groups_1d(ctx_, u32(rope ? ceil_div(groups, m.wg / m.tpr) : groups)));
}

void LlmOps::rms_norm_qkv_rope_q8(Batch& b, const Tensor& x, const Tensor& norm_w, float eps, const GpuWeight& w,
                                  const Tensor& qkv, const RopeTable& table, const KvLayer& c, const RopeKvArgs& a,
                                  int64_t row0) const {
  const std::string op = "rms_norm_qkv_rope_q8 " + str(w.type);
  need(supports_q8(w.type), op, "8-bit activations take Q4_0, Q8_0, Q4_K or Q6_K weights");
  check_norm_q8(x, norm_w, w.cols, op);
  need(matvec_q8_fusions(w.cols).rope, op,
       "needs " + std::to_string(kRopeUniform) + " storage buffers per shader stage, the adapter allows " +
           std::to_string(caps_.storage_buffers));
  need(row0 >= 0, op, "row0 " + std::to_string(row0) + " (the first QKV row of w)");
  detail::check_qkv_rope(w, qkv, table, c, a, op, row0);
  const RopeKv rope{&table, &c, &a, row0};
  LinearOptions o;
  o.y_offset = row0;
  matvec_q8(b, w, x, norm_w, eps, true, qkv, o, op, &rope);
}

void LlmOps::linear_q8(Batch& b, const GpuWeight& w, const Q8Act& x, const Tensor& y, int n_tokens,
                       const LinearOptions& o) const {
  const std::string op = "linear_q8 " + str(w.type);
  need(supports_q8(w.type), op, "8-bit activations take Q4_0, Q8_0, Q4_K or Q6_K weights");
  // Named copies, not a structured binding: lambdas below capture them (clang before 16 cannot
  // capture a structured binding).
  const detail::Q8LinearShape shape = detail::check_linear_q8(w, x, y, n_tokens, o, op);
  const int64_t rows = shape.rows, ys = shape.y_stride;
  const uint32_t flags = shape.flags;
  if (n_tokens == 1) return matvec_q8(b, w, x.qs, x.ds, 0.f, false, y, o, op);
  const Tensor& bias = o.bias ? o.bias : dummy_;
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
  while (su > 1 && (units % su || mmq_shared_bytes(mu, su, bm, bn) > caps_.workgroup_storage)) su /= 2;
  Kernel k = kernel(MatmulQ8Variant{w.type, bm, bn, su}.spec());
  b.dispatch(k, {w.data, w.scales, x.qs, x.ds, bias, y},
             Params(u32(n_tokens), u32(rows), u32(w.cols), u32(o.row0), u32(ys), u32(o.y_offset), flags),
             {u32(row_tiles), u32(tok_tiles), 1});
}

void LlmOps::linear_swiglu_q8(Batch& b, const GpuWeight& w, const Q8Act& x, const Q8Act& out) const {
  const std::string op = "linear_swiglu_q8 " + str(w.type);
  need(supports_q8(w.type), op, "8-bit activations take Q4_0, Q8_0, Q4_K or Q6_K weights");
  need(x.cols == w.cols, op, "x has " + std::to_string(x.cols) + " columns, the weight " + std::to_string(w.cols));
  need_q8(x, 1, op, "x");
  swiglu_matvec_q8(b, w, x.qs, x.ds, 0.f, false, out, op);
}

void LlmOps::rms_norm_swiglu_q8(Batch& b, const Tensor& x, const Tensor& norm_w, float eps, const GpuWeight& w,
                                const Q8Act& out) const {
  const std::string op = "rms_norm_swiglu_q8 " + str(w.type);
  need(supports_q8(w.type), op, "8-bit activations take Q4_0, Q8_0, Q4_K or Q6_K weights");
  check_norm_q8(x, norm_w, w.cols, op);
  swiglu_matvec_q8(b, w, x, norm_w, eps, true, out, op);
}

void LlmOps::swiglu_matvec_q8(Batch& b, const GpuWeight& w, const Tensor& x2, const Tensor& x3, float eps, bool norm_x,
                              const Q8Act& out, const std::string& op) const {
  need_q8(out, 1, op, "out");
  need(w.rows == 2 * out.cols, op,
       "a gate|up weight of " + std::to_string(w.rows) + " rows for " + std::to_string(out.cols) + " outputs");
  const uint32_t sw_tpr = is_kquant(w.type) && tuning.mvq_kq_sw_tpr ? tuning.mvq_kq_sw_tpr : tuning.mvq_sw_tpr;
  const MatvecQ8Shape m = matvec_q8_shape(op, w, 0, kSwigluRows, sw_tpr);
  const uint32_t sg = subgroups_ && sg_size_ >= 2 ? sg_size_ : 0u;  // partner() shuffles pairs
  Kernel k = kernel(matvec_q8_variant(w.type, m, true, false, norm_x, sg).spec());
  Params prm(u32(w.rows), u32(w.cols), 0u, 0u, 0u, u32(out.cols), eps);
  for (uint32_t i = 0; i < kRopeParams; ++i) prm.push(0u);
  b.dispatch(k, {w.data, w.scales, x2, x3, dummy_, out.qs, out.ds}, prm, groups_1d(ctx_, u32(out.cols / 32)));
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
  // kCombineSp invocations per element, halved until the workgroup (a head) fits.
  uint32_t sp = detail::kCombineSp;
  while (sp > 1 && uint64_t(hd) * sp > max_wg_) sp /= 2;
  Kernel kc = kernel({"llm/attn_combine_q8/" + std::to_string(hd) + "x" + std::to_string(sp),
                      {"llm/common.wgsl", "llm/attn_combine_q8.wgsl"},
                      "",
                      {{"HD", hd}, {"SP", sp}}});
  b.dispatch(kc, {part, out.qs, out.ds}, Params(u32(a.n_heads), splits), {u32(a.n_heads), 1, 1});
}

}  // namespace wgc::llm
