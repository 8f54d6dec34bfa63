// LlmOps' one-token matvecs with f32 activations through matvec.wgsl: plain rows (with column
// ranges), gate|up + SwiGLU, x RMS-normalised inside, QKV + RoPE and the KV append, x combined
// from decode partials. Where the kx schedule takes a matvec (matvec_kx.cpp), it runs instead.
#include "ops/llm/llm_ops.h"
#include "ops/llm/op_checks.h"
#include "util/error.h"

#include <algorithm>
#include <optional>

namespace wgc::llm {

namespace {

using detail::CombineVariant;
using detail::kMatvecRopeParams;
using detail::kMatvecRopeUniform;
using detail::need;
using detail::need_elems;
using detail::prelude_bool;
using detail::prelude_u32;
using detail::round16;
using detail::shape_tag;
using detail::str;
using detail::u32;

constexpr uint32_t kMatvecMaxRows = 8;     // matvec.wgsl: R_MAX
constexpr uint32_t kSwigluRows = 64;       // matvec.wgsl: most gate and up rows per SWIGLU workgroup
constexpr uint32_t kMatvecMaxSplits = 64;  // matvec.wgsl: most column ranges (KS)
// Grids of fewer workgroups than this take kMatvecFewUnroll loads in flight per invocation
// (session 9: 1B F16 tg128 956 -> 971 t/s; 300, reaching an 8B projection, lost there).
constexpr uint64_t kMatvecFewGroups = 256;
constexpr uint32_t kMatvecFewUnroll = 8;
constexpr uint32_t kMatvecPfLoadsMax = 8;  // most weight chunks each invocation loads ahead (session 8: 16 lost)
// The folded decode combine weighs only the keyed splits from this many splits on (a recorded
// step's splits cover the whole cache; session 10: at 16 splits +1.6% 8B F16 against all of them
// in unrolled loops; at 4, -0.6%).
constexpr uint32_t kCombinePrefixSplits = 8;
constexpr uint32_t kMatvecRopeRows = 2;  // the QKV + RoPE matvec's rows per group: one pair (session 8: 4 lost)

// matvec.wgsl's variant: every choice that sets one of its pipelines apart.
struct MatvecVariant {
  TensorType type = TensorType::F32;
  uint32_t sg = 0;                       // subgroup size of the reductions (0: workgroup memory)
  uint32_t wg = 0, tpr = 0, unroll = 0;  // invocations per workgroup and row group, loads in flight
  uint32_t rows = 0;                     // rows per row group
  bool swiglu = false, rope = false;     // the SWIGLU rows, the ROPE epilogue
  std::optional<float> eps;              // x RMS-normalised inside (matvec_x_norm.wgsl)
  bool xs = false;                       // x staged in workgroup memory (xn4 vec4s)
  uint32_t xn4 = 1;
  bool mask = false, late = false;        // x masked past the columns; the norm's scale late
  uint32_t pf = 0, splits = 1, cols = 0;  // weights loaded ahead; column ranges; columns built in
  std::optional<CombineVariant> xc;       // x combined from decode partials

  KernelSpec spec() const {
    KernelSpec s;
    s.files = detail::matvec_files(type, sg != 0, xc.has_value(), eps.has_value(), rope, "llm/matvec.wgsl");
    s.constants = {{"WG", wg}, {"TPR", tpr}, {"UNROLL", unroll}, {"R", rows}};
    if (sg) s.constants.push_back({"SG", sg});
    s.key = "llm/matvec/" + str(type);
    if (eps) {
      s.constants.push_back({"EPS", double(*eps)});
      s.key += detail::eps_tag(*eps);
    }
    if (mask) s.key += "/mask";
    if (xs) s.key += "/xs" + std::to_string(xn4);
    if (rope) s.key += "/rope";
    if (late) s.key += "/late";
    if (pf) s.key += "/pf" + std::to_string(pf);
    if (cols) s.key += "/c" + std::to_string(cols);
    if (splits > 1) s.key += "/ks" + std::to_string(splits);
    if (xc) s.key += xc->tag();
    s.key += std::string(sg ? "/sg/" : "/wg/") + (swiglu ? "swiglu/" : "") + shape_tag({wg, tpr, unroll, rows});
    const auto cu = prelude_u32;
    const auto cb = prelude_bool;
    s.prelude = cb("SWIGLU", swiglu) + cb("ROPE", rope) + cb("XS", xs) + cu("XN4", xn4) + cb("X_MASK", mask) +
                cb("X_LATE", late) + cu("PF", pf) + cu("PF_N", std::max(1u, pf * rows)) + cu("KS", splits) +
                cu("COLS", cols) + cu("P_BINDING", rope ? kMatvecRopeUniform : 5u) +
                (xc ? xc->prelude() : std::string());
    s.subgroups = sg != 0;
    return s;
  }
};

}  // namespace

Kernel LlmOps::matvec_kernel(TensorType t, LinearVersion v, int64_t cols, uint32_t swiglu_rows, const float* norm_eps,
                             bool rope, uint32_t splits, const DecodePartials* xc, uint64_t groups) const {
  need(!xc || (!norm_eps && !rope && !swiglu_rows), "matvec", "x combined from partials for plain rows only");
  const MatvecShape m = few_unroll(matvec_shape(swiglu_rows != 0), groups);
  MatvecVariant mv;
  mv.type = t;
  mv.sg = v == LinearVersion::Subgroup ? sg_size_ : 0;
  mv.wg = m.wg;
  mv.tpr = m.tpr;
  mv.unroll = m.unroll;
  mv.rows = rope ? kMatvecRopeRows : swiglu_rows ? swiglu_rows : m.rows;
  mv.swiglu = swiglu_rows != 0;
  mv.rope = rope;
  if (norm_eps) mv.eps = *norm_eps;
  // x masked past cols only where a row's last chunk reaches past them (the padded types).
  const uint32_t ch = detail::chunk_elems(t);
  const bool padded = detail::float_weights(t);
  mv.mask = padded && cols % ch != 0;
  // With column ranges, x staged per range (whole chunks).
  const int64_t range_cols = splits > 1 ? split_chunks(t, cols, splits) * ch : cols;
  mv.xs = stages_x(t, range_cols, xc ? detail::combine_bytes(*xc) : 0);
  need(!xc || mv.xs, "matvec", "x combined from partials must be staged whole (workgroup memory)");
  mv.xn4 = mv.xs ? u32((range_cols + 3) / 4) : 1u;
  // The prefetch and column ranges for the float types (x in one pass, w_dot as w_chunk adds).
  mv.pf = padded ? std::min({tuning.matvec_pf, m.unroll, kMatvecPfLoadsMax / mv.rows}) : 0u;
  need(splits == 1 || (padded && !swiglu_rows && !rope), "matvec", "column ranges for plain F16/BF16/F32 rows only");
  // The norm's scale after the dot products where x is staged whole (each element loaded once).
  mv.late = norm_eps && mv.xs;
  // The columns built in (a kernel per width).
  mv.cols = cols > 0 ? u32(cols) : 0u;
  mv.splits = splits;
  if (xc) mv.xc = CombineVariant{u32(xc->n_heads), xc->splits, u32(xc->head_dim), combine_prefix(*xc)};
  return kernel(mv.spec());
}

bool LlmOps::stages_x(TensorType t, int64_t cols, uint64_t extra_bytes) const {
  if (!detail::float_weights(t)) return false;
  // matvec.wgsl's xw (whole weight chunks of x), red and res
  const uint64_t xv = detail::chunk_elems(t) / 4,
                 bytes = ceil_div(uint64_t(ceil_div(uint64_t(cols), 4)), xv) * xv * 16 + 4ull * matvec_shape().wg +
                         4ull * kSwigluRows + extra_bytes;
  return cols > 0 && bytes <= caps_.workgroup_storage;
}

uint32_t LlmOps::matvec_splits(TensorType t, int64_t cols, int64_t /*rows*/) const {
  if (!detail::float_weights(t) || tuning.matvec_split <= 1 || cols < int64_t(tuning.matvec_split_cols)) return 1;
  need(tuning.matvec_split <= kMatvecMaxSplits, "matvec",
       "matvec_split " + std::to_string(tuning.matvec_split) + " (1.." + std::to_string(kMatvecMaxSplits) + ")");
  // At least one unrolled pass of every row group's invocations per range.
  const MatvecShape m = matvec_shape();
  const int64_t nch = ceil_div(cols, int64_t(detail::chunk_elems(t)));
  return u32(std::clamp<int64_t>(nch / (int64_t(m.tpr) * m.unroll), 1, tuning.matvec_split));
}

int64_t LlmOps::split_chunks(TensorType t, int64_t cols, uint32_t splits) {
  return ceil_div(ceil_div(cols, int64_t(detail::chunk_elems(t))), int64_t(splits));
}

Params LlmOps::matvec_params(int64_t rows, int64_t cols, int64_t row0, int64_t y_off, uint32_t flags) const {
  Params prm(1u, u32(rows), u32(cols), u32(row0), u32(cols), u32(rows), u32(y_off), flags);
  for (uint32_t i = 0; i < kMatvecRopeParams; ++i) prm.push(0u);
  return prm;
}

LlmOps::MatvecShape LlmOps::matvec_shape(bool /*swiglu*/) const {
  const uint32_t wg = std::min(tuning.matvec_wg, max_wg_);
  const uint32_t tpr = tuning.matvec_tpr, unroll = tuning.matvec_unroll;
  need(unroll >= 1 && unroll <= 8, "matvec", "unroll " + std::to_string(unroll) + " (1..8)");
  return {wg, std::min(tpr, wg), std::clamp(tuning.matvec_rows, 1u, kMatvecMaxRows), unroll};
}

LlmOps::MatvecShape LlmOps::few_unroll(MatvecShape m, uint64_t groups) const {
  if (groups == 0 || groups >= kMatvecFewGroups) return m;
  m.unroll = kMatvecFewUnroll;
  return m;
}

void LlmOps::matvec(Batch& b, const GpuWeight& w, const Arg& x, const Tensor& bias, const Tensor& y, int64_t rows,
                    const LinearOptions& o, uint32_t flags, LinearVersion v, const DecodePartials* xc) const {
  if (kx_runs(kKxPlain, w.type, rows, w.cols, v)) {  // whole rows per workgroup: no column ranges
    Kernel k = matvec_kx_kernel(w.type, w.cols, kKxPlain, nullptr, xc);
    b.dispatch(k, {w.data, w.scales, x, bias, y}, matvec_params(rows, w.cols, o.row0, o.y_offset, flags),
               groups_1d(ctx_, kx_grid(kKxPlain, rows, w.type, w.cols)));
    return;
  }
  const uint32_t splits = matvec_splits(w.type, w.cols, rows);
  const MatvecShape m = matvec_shape();
  const uint64_t blocks = ceil_div(uint64_t(rows), m.wg / m.tpr * m.rows);
  Kernel k = matvec_kernel(w.type, v, w.cols, 0, nullptr, false, splits, xc, blocks * splits);
  if (splits == 1) {
    b.dispatch(k, {w.data, w.scales, x, bias, y}, matvec_params(rows, w.cols, o.row0, o.y_offset, flags),
               groups_1d(ctx_, blocks));
    return;
  }
  // Partial sums per column range, then matvec_sum.wgsl adds them in order (and bias and y).
  Tensor part = make_tensor(ctx_, {int64_t(splits) * rows});
  b.dispatch(k, {w.data, w.scales, x, bias, part}, matvec_params(rows, w.cols, o.row0, 0, 0),
             groups_1d(ctx_, blocks * splits));
  Kernel ks = kernel({"llm/matvec_sum", {"llm/common.wgsl", "llm/matvec_sum.wgsl"}});
  b.dispatch(ks, {part, bias, y}, Params(u32(rows), splits, u32(o.row0), u32(o.y_offset), flags),
             groups_1d(ctx_, ceil_div(uint64_t(rows), 256)));
}

LlmOps::MatvecFusions LlmOps::matvec_fusions(TensorType t, int64_t cols, const DecodePartials* p,
                                             int64_t glu_rows) const {
  MatvecFusions f;
  if (glu_rows > 0)
    f.glu = swiglu_problem(t, glu_rows, cols, subgroups_ ? LinearVersion::Subgroup : LinearVersion::Shared).empty();
  f.norm = cols > 0 && cols % 4 == 0;
  f.rope = f.norm && caps_.storage_buffers >= kMatvecRopeUniform;  // buffers 0-8
  if (p && p->part && p->head_dim > 0 && p->head_dim % 4 == 0 && detail::float_weights(t)) {
    // The whole of x staged (column ranges, where the matvec splits, take less).
    f.combine = stages_x(t, int64_t(p->n_heads) * p->head_dim, detail::combine_bytes(*p));
    f.combine_prefix = p->splits >= kCombinePrefixSplits;
  }
  return f;
}

bool LlmOps::fuses_combine(TensorType t, const DecodePartials& p) const {
  return matvec_fusions(t, int64_t(p.n_heads) * p.head_dim, &p).combine;
}
bool LlmOps::combine_prefix(const DecodePartials& p) const { return p.splits >= kCombinePrefixSplits; }

void LlmOps::rms_norm_linear(Batch& b, const Tensor& x, const Tensor& norm_w, float eps, const GpuWeight& w,
                             const Tensor& y, const LinearOptions& o) const {
  const std::string op = "rms_norm_linear " + str(w.type);
  need(!o.bias, op, "takes no bias (the norm weight comes in its binding)");
  check_norm(x, norm_w, w.cols, op);
  const int64_t rows = o.rows < 0 ? w.rows - o.row0 : o.rows;
  need(o.row0 >= 0 && rows > 0 && o.row0 + rows <= w.rows, op,
       "rows " + std::to_string(o.row0) + "+" + std::to_string(rows) + " of a " + std::to_string(w.rows) +
           "-row weight");
  need_elems(y, o.y_offset + rows, op, "y");
  const LinearVersion v = subgroups_ ? LinearVersion::Subgroup : LinearVersion::Shared;
  const bool kx = kx_runs(kKxPlain, w.type, rows, w.cols, v);
  const MatvecShape m = matvec_shape();
  const uint64_t groups =
      kx ? kx_grid(kKxPlain, rows, w.type, w.cols) : ceil_div(uint64_t(rows), m.wg / m.tpr * m.rows);
  Kernel k = kx ? matvec_kx_kernel(w.type, w.cols, kKxPlain, &eps)
                : matvec_kernel(w.type, v, w.cols, 0, &eps, false, 1, nullptr, groups);
  b.dispatch(k, {w.data, w.scales, Arg(x, 0, round16(x.bytes())), norm_w, y},
             matvec_params(rows, w.cols, o.row0, o.y_offset, o.accumulate ? 2u : 0u), groups_1d(ctx_, groups));
}

void LlmOps::rms_norm_swiglu(Batch& b, const Tensor& x, const Tensor& norm_w, float eps, const GpuWeight& gate_up,
                             const Tensor& out) const {
  const std::string op = "rms_norm_swiglu " + str(gate_up.type);
  check_norm(x, norm_w, gate_up.cols, op);
  swiglu_matvec(b, gate_up, x, norm_w, &eps, out, subgroups_ ? LinearVersion::Subgroup : LinearVersion::Shared, op);
}

void LlmOps::rms_norm_qkv_rope(Batch& b, const Tensor& x, const Tensor& norm_w, float eps, const GpuWeight& w,
                               const Tensor& qkv, const RopeTable& table, const KvLayer& c, const RopeKvArgs& a) const {
  const std::string op = "rms_norm_qkv_rope " + str(w.type);
  check_norm(x, norm_w, w.cols, op);
  need(matvec_fusions(TensorType::F32, w.cols).rope, op,
       "needs " + std::to_string(kMatvecRopeUniform) + " storage buffers per shader stage, the adapter allows " +
           std::to_string(caps_.storage_buffers));
  detail::check_qkv_rope(w, qkv, table, c, a, op);
  const MatvecShape m = matvec_shape();
  need(m.tpr <= m.wg, op, "matvec tpr larger than the workgroup");
  const LinearVersion v = subgroups_ ? LinearVersion::Subgroup : LinearVersion::Shared;
  const bool kx = kx_runs(kKxRope, w.type, w.rows, w.cols, v);
  const uint64_t pairs = uint64_t(w.rows) / 2;  // kMatvecRopeRows / 2 per row group
  const uint64_t groups =
      kx ? kx_grid(kKxRope, w.rows, w.type, w.cols) : ceil_div(pairs, m.wg / m.tpr * (kMatvecRopeRows / 2));
  Kernel k = kx ? matvec_kx_kernel(w.type, w.cols, kKxRope, &eps)
                : matvec_kernel(w.type, v, w.cols, 0, &eps, true, 1, nullptr, groups);
  Params prm(1u, u32(w.rows), u32(w.cols), 0u, u32(w.cols), u32(w.rows), 0u, 0u);
  detail::push_rope_params(prm, table, c, a);
  b.dispatch(k,
             {w.data, w.scales, Arg(x, 0, round16(x.bytes())), norm_w, qkv, table.cos_sin,
              a.positions ? a.positions : dummy_, c.k, c.v},
             prm, groups_1d(ctx_, groups));
}

void LlmOps::check_norm(const Tensor& x, const Tensor& norm_w, int64_t cols, const std::string& op) const {
  need(matvec_fusions(TensorType::F32, cols).norm, op, std::to_string(cols) + " columns (a multiple of 4)");
  need_elems(x, cols, op, "x");
  need(round16(x.bytes()) <= x.capacity(), op, "x buffer too small");
  need_elems(norm_w, cols, op, "norm weight");
}

void LlmOps::linear_swiglu(Batch& b, const GpuWeight& w, const Tensor& x, const Tensor& out, LinearVersion v) const {
  const std::string op = "linear_swiglu " + str(w.type);
  need_elems(x, w.cols, op, "x");
  if (v == LinearVersion::Auto) v = subgroups_ ? LinearVersion::Subgroup : LinearVersion::Shared;
  need(round16(x.bytes()) <= x.capacity(), op, "x buffer too small");
  swiglu_matvec(b, w, x, dummy_, nullptr, out, v, op);
}

void LlmOps::swiglu_matvec(Batch& b, const GpuWeight& w, const Tensor& x, const Tensor& norm_w, const float* eps,
                           const Tensor& out, LinearVersion v, const std::string& op) const {
  const int64_t n = w.rows / 2;
  const uint32_t wr = tuning.swiglu_wg_rows;
  const std::string problem = swiglu_problem(w.type, w.rows, w.cols, v);
  need(problem.empty(), op, problem);
  need_elems(out, n, op, "out");
  const MatvecShape m = matvec_shape(true);
  const bool kx = kx_runs(kKxSwiglu, w.type, w.rows, w.cols, v);  // its own tiles, gate rows in any number
  const uint64_t groups = kx ? kx_grid(kKxSwiglu, w.rows, w.type, w.cols) : uint64_t(n / (wr / 2));
  Kernel k = kx ? matvec_kx_kernel(w.type, w.cols, kKxSwiglu, eps)
                : matvec_kernel(w.type, v, w.cols, wr * m.tpr / m.wg, eps, false, 1, nullptr, groups);
  b.dispatch(k, {w.data, w.scales, Arg(x, 0, round16(x.bytes())), norm_w, out}, matvec_params(w.rows, w.cols, 0, 0, 0),
             groups_1d(ctx_, groups));
}

std::string LlmOps::swiglu_problem(TensorType t, int64_t rows, int64_t cols, LinearVersion v) const {
  const uint32_t wr = tuning.swiglu_wg_rows;
  if (wr < 2 || wr > kSwigluRows || (wr & (wr - 1)) != 0)
    return "swiglu_wg_rows " + std::to_string(wr) + " (a power of two, 2.." + std::to_string(kSwigluRows) + ")";
  if (rows % 2 != 0 || (rows / 2) % (wr / 2) != 0)
    return "a gate|up weight of " + std::to_string(rows) + " rows (twice a multiple of " + std::to_string(wr / 2) + ")";
  if (v != LinearVersion::Subgroup && v != LinearVersion::Shared) return "runs the subgroup or shared matvec";
  if (v == LinearVersion::Subgroup && !subgroups_) return "this adapter has no usable subgroups";
  const MatvecShape m = matvec_shape(true);
  if (!kx_runs(kKxSwiglu, t, rows, cols, v) && (wr * m.tpr % m.wg != 0 || wr * m.tpr / m.wg > kMatvecMaxRows))
    return std::to_string(m.wg / m.tpr) + " row groups per workgroup cannot take " + std::to_string(wr) +
           " rows (1 to 8 per group)";
  return "";
}

void LlmOps::combine_linear(Batch& b, const DecodePartials& p, const GpuWeight& w, const Tensor& y,
                            const LinearOptions& o) const {
  const std::string op = "combine_linear " + str(w.type);
  need(!o.bias && o.x_stride < 0, op, "takes no bias and no x stride");
  need(p.part && p.n_heads > 0 && p.head_dim > 0, op, "no partials");
  need(w.cols == int64_t(p.n_heads) * p.head_dim, op,
       "a weight of " + std::to_string(w.cols) + " columns for " + std::to_string(p.n_heads) + " heads of " +
           std::to_string(p.head_dim));
  need(fuses_combine(w.type, p), op, "cannot fold the combine here (float weights, workgroup memory)");
  need_elems(p.part, int64_t(p.n_heads) * p.splits * (p.head_dim + 2), op, "partials");
  const int64_t rows = o.rows < 0 ? w.rows - o.row0 : o.rows;
  need(o.row0 >= 0 && rows > 0 && o.row0 + rows <= w.rows, op,
       "rows " + std::to_string(o.row0) + "+" + std::to_string(rows) + " of a " + std::to_string(w.rows) +
           "-row weight");
  need_elems(y, o.y_offset + rows, op, "y");
  // The partials read as vec4s (the buffer holds whole ones: tensors round up to 16 bytes).
  need(round16(p.part.bytes()) <= p.part.capacity(), op, "partials buffer too small");
  matvec(b, w, Arg(p.part, 0, round16(p.part.bytes())), p.part, y, rows, o, o.accumulate ? 2u : 0u,
         subgroups_ ? LinearVersion::Subgroup : LinearVersion::Shared, &p);
}

}  // namespace wgc::llm
