// LlmOps' kx schedule of the one-token float-weight matvecs (matvec_kx.wgsl: the columns split
// across the workgroup, each invocation's share of x in registers, tiles of kx_rows rows reduced
// by a transposed subgroup butterfly), for the plain, gate|up + SwiGLU and QKV + RoPE kinds.
#include "ops/llm/llm_ops.h"
#include "ops/llm/op_checks.h"
#include "util/error.h"

#include <algorithm>
#include <bit>
#include <optional>

namespace wgc::llm {

namespace {

using detail::CombineVariant;
using detail::kMatvecRopeUniform;
using detail::need;
using detail::prelude_bool;
using detail::prelude_u32;
using detail::shape_tag;
using detail::str;
using detail::u32;

constexpr int64_t kKxWideCols = 12288;  // kx_wide_wg from this many columns
// Where an invocation takes fewer weight chunks of a row than this, kx_groups times this / chunks
// workgroups (as many weight bytes in flight per multiprocessor; session 14: 1B F16 +2%).
constexpr uint64_t kKxGroupsCpl = 2;
constexpr uint32_t kKxMaxChunks = 8;  // matvec_kx.wgsl: most chunks per invocation (CPL: x in registers)
constexpr uint32_t kKxMaxRows = 32;   // matvec_kx.wgsl: most rows per tile (T)

// matvec_kx.wgsl's variant: every choice that sets one of its pipelines apart.
struct KxVariant {
  TensorType type = TensorType::F32;
  uint32_t kind = 0;                    // LlmOps::kKxSwiglu, kKxPlain or kKxRope
  std::optional<float> eps;             // x RMS-normalised inside (its scale late)
  std::optional<CombineVariant> xc;     // x combined from decode partials
  uint32_t wg = 0, sg = 0;              // invocations per workgroup, subgroup size
  uint32_t rows = 0, rb = 0;            // rows per tile, per pass
  uint32_t cols = 0, nch = 0, cpl = 0;  // columns (built in), chunks per row and per invocation
  bool mask = false;                    // x masked past the columns

  KernelSpec spec() const {
    const bool swiglu = kind == LlmOps::kKxSwiglu, rope = kind == LlmOps::kKxRope;
    KernelSpec s;
    s.files = detail::matvec_files(type, true, xc.has_value(), eps.has_value(), rope, "llm/matvec_kx.wgsl");
    s.constants = {{"WG", wg}, {"SG", sg}};
    s.key = "llm/matvec_kx/" + str(type) + (swiglu ? "/swiglu" : rope ? "/rope" : "");
    if (eps) {
      s.constants.push_back({"EPS", double(*eps)});
      s.key += detail::eps_tag(*eps);
    }
    if (xc) s.key += xc->tag();
    s.key += "/c" + std::to_string(cols) + (mask ? "/mask/" : "/") + shape_tag({wg, rows, rb}) + "/xe/ep";
    const auto cu = prelude_u32;
    const auto cb = prelude_bool;
    // XS: each element of x through x_load4 once (the staged contract the x files ask for).
    s.prelude = cb("SWIGLU", swiglu) + cb("ROPE", rope) + cb("XS", true) + cb("X_MASK", mask) +
                cb("X_LATE", eps.has_value()) + cu("COLS", cols) + cu("NCH", nch) + cu("CPL", cpl) + cu("T", rows) +
                cu("RB", rb) + cb("DB", false) + cb("XE", true) + cb("EP", true) + cu("KSG", sg) +
                cu("LT", uint32_t(std::countr_zero(rows))) + cu("LSG", uint32_t(std::countr_zero(sg))) +
                cu("P_BINDING", rope ? kMatvecRopeUniform : 5u) + (xc ? xc->prelude() : std::string());
    s.subgroups = true;
    return s;
  }
};

}  // namespace

uint32_t LlmOps::kx_workgroup(int64_t cols) const {
  const bool wide = tuning.kx_wide_wg && cols >= kKxWideCols;
  return std::min(wide ? tuning.kx_wide_wg : tuning.kx_wg, max_wg_);
}

bool LlmOps::kx_runs(uint32_t kind, TensorType t, int64_t rows, int64_t cols, LinearVersion v) const {
  if (!(tuning.matvec_kx & kind) || !detail::float_weights(t) || cols <= 0 || rows < 0 ||
      v != LinearVersion::Subgroup || !subgroups_)
    return false;
  return kx_chunks(t, cols) <= kKxMaxChunks;
}

uint64_t LlmOps::kx_chunks(TensorType t, int64_t cols) const {
  return ceil_div(ceil_div(uint64_t(cols), uint64_t(detail::chunk_elems(t))), uint64_t(kx_workgroup(cols)));
}

Kernel LlmOps::matvec_kx_kernel(TensorType t, int64_t cols, uint32_t kind, const float* norm_eps,
                                const DecodePartials* xc) const {
  const std::string op = "matvec kx";
  KxVariant kv;
  kv.type = t;
  kv.kind = kind;
  kv.wg = kx_workgroup(cols);
  kv.sg = sg_size_;
  kv.rows = tuning.kx_rows;
  need(kv.wg % sg_size_ == 0 && (sg_size_ & (sg_size_ - 1)) == 0, op,
       "kx_wg (or kx_wide_wg) " + std::to_string(kv.wg) + " (a multiple of the subgroup size, a power of two)");
  need(kv.rows >= 2 && kv.rows <= kKxMaxRows && (kv.rows & (kv.rows - 1)) == 0, op,
       "kx_rows " + std::to_string(kv.rows) + " (a power of two, 2.." + std::to_string(kKxMaxRows) + ")");
  need(kind != kKxPlain || !norm_eps || !xc, op, "x normalised or combined, not both");
  const uint32_t ch = detail::chunk_elems(t);
  kv.nch = u32(ceil_div(uint64_t(cols), uint64_t(ch)));
  kv.cpl = u32(kx_chunks(t, cols));
  need(kv.cpl <= kKxMaxChunks, op,
       std::to_string(kv.cpl) + " chunks per invocation (at most " + std::to_string(kKxMaxChunks) + ")");
  // Rows per pass: kx_loads chunks' worth, a power of two dividing the tile.
  kv.rb = std::clamp(detail::pow2_floor(std::max(1u, tuning.kx_loads / kv.cpl)), 1u, kv.rows);
  if (norm_eps) kv.eps = *norm_eps;
  kv.mask = cols % ch != 0;
  kv.cols = u32(cols);
  if (xc) kv.xc = CombineVariant{u32(xc->n_heads), xc->splits, u32(xc->head_dim), combine_prefix(*xc)};
  return kernel(kv.spec());
}

uint64_t LlmOps::kx_grid(uint32_t kind, int64_t rows, TensorType t, int64_t cols) const {
  const uint64_t tr = tuning.kx_rows;
  const uint64_t tiles = kind == kKxPlain ? ceil_div(uint64_t(rows), tr) : ceil_div(uint64_t(rows) / 2, tr / 2);
  uint64_t groups = tuning.kx_groups;
  if (groups) groups *= std::max<uint64_t>(1, kKxGroupsCpl / std::max<uint64_t>(1, kx_chunks(t, cols)));
  return groups ? std::min(tiles, groups) : tiles;
}

}  // namespace wgc::llm
