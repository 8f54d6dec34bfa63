#include "ops/llm/llm_ops.h"
#include "ops/llm/op_checks.h"

#include "cpu/llm/rope_table.h"

#include "util/error.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <numbers>

namespace wgc::llm {

namespace {

using detail::kCombineSp;
using detail::need;
using detail::need_elems;
using detail::need_q8;
using detail::prelude_bool;
using detail::prelude_u32;
using detail::shape_tag;
using detail::str;
using detail::u32;

uint64_t round16(uint64_t b) { return (b + 15) / 16 * 16; }

// linear_batched.wgsl: weight elements per chunk (one vec4<u32>), as weights/*.wgsl's W_CHUNK.
uint32_t chunk_elems(TensorType t) {
  switch (t) {
    case TensorType::F32: return 4;
    case TensorType::F16:
    case TensorType::BF16: return 8;
    case TensorType::Q8_0: return 16;
    case TensorType::Q4_0:
    case TensorType::Q4_K:
    case TensorType::Q6_K: return 32;
    default: break;  // not a GPU weight type: upload_weight refuses it
  }
  return 4;
}

// The float weight types: rows padded to whole chunks, read by matvec.wgsl / matvec_kx.wgsl with
// x in f32 (the quantized types take 8-bit activations).
bool float_weights(TensorType t) { return t == TensorType::F32 || t == TensorType::F16 || t == TensorType::BF16; }

// The shader files of a one-token f32-activation matvec, `main_file` last: x plain, RMS-normalised
// (norm) or combined from decode partials (combine), with the ROPE epilogue's bindings or not.
std::vector<std::string> matvec_files(TensorType t, bool sg, bool combine, bool norm, bool rope,
                                      const char* main_file) {
  return {"llm/common.wgsl",
          "llm/rope_pair.wgsl",
          "llm/weights/" + str(t) + ".wgsl",
          sg ? "llm/reduce_sg.wgsl" : "llm/reduce_wg.wgsl",
          combine ? "llm/matvec_x_combine.wgsl"
          : norm  ? "llm/matvec_x_norm.wgsl"
                  : "llm/matvec_x.wgsl",
          rope ? "llm/matvec_rope.wgsl" : "llm/matvec_q8_norope.wgsl",
          main_file};
}

uint32_t pow2_floor(uint32_t v) {
  uint32_t p = 1;
  while (p * 2 <= v) p *= 2;
  return p;
}

}  // namespace

// ---- RoPE ----------------------------------------------------------------------------------

RopeTable make_rope_table(const Context& ctx, std::span<const double> inv, int head_dim, int max_pos) {
  if (max_pos <= 0) throw Error("wgc: rope table: max_pos must be positive");
  if (head_dim <= 0 || head_dim % 2) throw Error("wgc: rope: head_dim must be even, not " + std::to_string(head_dim));
  if (inv.empty() || inv.size() > size_t(head_dim / 2))
    throw Error("wgc: rope table: " + std::to_string(inv.size()) + " frequencies for head_dim " +
                std::to_string(head_dim) + " (1 to head_dim / 2)");
  const std::vector<float> cs = rope_cos_sin(inv, max_pos);
  RopeTable t;
  t.cos_sin = make_tensor(ctx, {int64_t(cs.size())}, cs);
  t.head_dim = head_dim;
  t.max_pos = max_pos;
  return t;
}

// ---- KV cache ------------------------------------------------------------------------------

KvLayer KvCache::layer(int i) const {
  if (i < 0 || i >= n_layers) throw Error("wgc: kv cache: no layer " + std::to_string(i));
  KvLayer l;
  l.k = k;
  l.v = v;
  l.n_kv_heads = n_kv_heads;
  l.max_ctx = max_ctx;
  l.head_dim = head_dim;
  l.offset = u32(int64_t(i) * n_kv_heads * max_ctx * head_dim);
  return l;
}

KvCache make_kv_cache(const Context& ctx, int n_layers, int n_kv_heads, int max_ctx, int head_dim) {
  KvCache c;
  int64_t n = int64_t(n_layers) * n_kv_heads * max_ctx * head_dim;
  if (n <= 0 || n >= (int64_t(1) << 32)) throw Error("wgc: kv cache of " + std::to_string(n) + " elements");
  c.k = make_tensor(ctx, {n});
  c.v = make_tensor(ctx, {n});
  c.n_layers = n_layers;
  c.n_kv_heads = n_kv_heads;
  c.max_ctx = max_ctx;
  c.head_dim = head_dim;
  return c;
}

// ---- kernels -------------------------------------------------------------------------------

LlmCaps llm_caps(const Context& ctx) {
  const auto& a = ctx.adapter();
  LlmCaps c;
  c.subgroups = ctx.features().subgroups && a.subgroup_min_size == a.subgroup_max_size && a.subgroup_min_size >= 1;
  c.subgroup_size = c.subgroups ? a.subgroup_min_size : 0;
  c.max_invocations = std::max<uint32_t>(64, ctx.limits().max_compute_invocations_per_workgroup);
  c.workgroup_storage = ctx.limits().max_compute_workgroup_storage_size;
  c.storage_buffers = ctx.limits().max_storage_buffers_per_shader_stage;
  return c;
}

LlmOps::LlmOps(Context ctx) : LlmOps(ctx, llm_caps(ctx)) {}

LlmOps::LlmOps(Context ctx, const LlmCaps& caps) : ctx_(std::move(ctx)), caps_(caps) {
  const LlmCaps full = llm_caps(ctx_);
  if ((caps.subgroups && (!full.subgroups || caps.subgroup_size != full.subgroup_size)) ||
      (!caps.subgroups && caps.subgroup_size != 0) || caps.max_invocations > full.max_invocations ||
      caps.max_invocations < 64 || caps.workgroup_storage > full.workgroup_storage ||
      caps.storage_buffers > full.storage_buffers)
    throw Error("wgc: llm ops: capabilities beyond the adapter's");
  subgroups_ = caps_.subgroups;
  sg_size_ = caps_.subgroup_size;
  max_wg_ = caps_.max_invocations;
  dummy_ = make_tensor(ctx_, {4});
}

namespace {
// WGC_DUMP_KERNELS=FILE: each pipeline LlmOps compiles, appended to FILE (its cache key, whether
// the tuning was the default one, entry point, override constants and final WGSL), so that a
// change to the kernels' host code can show which kernels it changed (scripts/kernel_dump_diff.py).
void dump_kernel(const KernelCode& code, bool default_tuning) {
  static const char* path = std::getenv("WGC_DUMP_KERNELS");
  if (!path || !*path) return;
  static std::mutex m;
  std::lock_guard lock(m);
  std::FILE* f = std::fopen(path, "a");
  if (!f) return;
  std::fprintf(f, "@@@ kernel %s\n@@@ default %d\n@@@ entry %s\n", code.label.c_str(), default_tuning ? 1 : 0,
               code.entry.c_str());
  for (const auto& [name, value] : code.constants) std::fprintf(f, "@@@ constant %s=%.17g\n", name.c_str(), value);
  std::fprintf(f, "@@@ wgsl\n%s\n@@@ end\n", code.wgsl.c_str());
  std::fclose(f);
}
}  // namespace

Kernel LlmOps::kernel(const std::string& key, const std::vector<std::string>& files,
                      std::vector<std::pair<std::string, double>> constants, bool subgroups, const std::string& entry,
                      const std::string& prelude) const {
  if (auto it = kernels_.find(key); it != kernels_.end()) return it->second;
  KernelCode code;
  if (subgroups) code.wgsl = "enable subgroups;\n";
  code.wgsl += prelude;
  for (auto& f : files) code.wgsl += embedded_kernel(f).wgsl;
  code.constants = std::move(constants);
  code.entry = entry;
  code.label = key;
  dump_kernel(code, tuning == LlmTuning{});
  Kernel k = compile(ctx_, code);
  kernels_.emplace(key, k);
  return k;
}

namespace {
constexpr uint32_t kNaiveWG = 64;
constexpr uint32_t kMatvecMaxRows = 8;     // matvec.wgsl: R_MAX
constexpr uint32_t kSwigluRows = 64;       // matvec.wgsl: most gate and up rows per SWIGLU workgroup
constexpr uint32_t kMatvecPfLoads = 16;    // matvec.wgsl: most weight chunks loaded before x (PF * R)
constexpr uint32_t kMatvecMaxSplits = 64;  // matvec.wgsl: most column ranges (KS)
// matvec.wgsl's grids of fewer workgroups than this take kMatvecFewUnroll loads in flight per
// invocation (session 9: 1B F16 tg128 956 -> 971 t/s; 300, reaching an 8B projection, lost there).
constexpr uint64_t kMatvecFewGroups = 256;
constexpr uint32_t kMatvecFewUnroll = 8;
constexpr uint32_t kMatvecPfLoadsMax = 8;  // most weight chunks each invocation loads ahead (session 8: 16 lost)
// The folded decode combine weighs only the keyed splits from this many splits on (session 10: at
// 16 splits +1.6% 8B F16; at 4, -0.6%).
constexpr uint32_t kCombinePrefixSplits = 8;
constexpr uint32_t kMatvecRopeRows = 2;  // the QKV + RoPE matvec's rows per group: one pair (session 8: 4 lost)
constexpr int64_t kKxWideCols = 12288;   // kx_wide_wg from this many columns
// kx: where an invocation takes fewer weight chunks of a row than this, kx_groups times this /
// chunks workgroups (as many weight bytes in flight per multiprocessor; session 14: 1B F16 +2%).
constexpr uint64_t kKxGroupsCpl = 2;
constexpr uint32_t kKxMaxChunks = 8;         // matvec_kx.wgsl: most chunks per invocation (CPL: x in registers)
constexpr uint32_t kKxMaxRows = 32;          // matvec_kx.wgsl: most rows per tile (T)
constexpr uint64_t kRegTileMinGroups = 256;  // choose_linear: tiles from which RegTile runs
// matmul_regtile.wgsl: weight rows per invocation (8 x 4 outputs; session 6: 4 beat 8 by 27%, 8B F16 pp512).
constexpr uint32_t kRegTileTn = 4;
// matvec.wgsl: the uniform's binding with ROPE (after matvec_rope.wgsl's storage buffers 5-8), and
// P's ROPE fields (zero without).
constexpr uint32_t kMatvecRopeUniform = 9, kMatvecRopeParams = 8;
// matvec_x_combine.wgsl's workgroup memory: a weight per head and split, a sum and a count per head.
uint64_t combine_bytes(const DecodePartials& p) {
  return 4ull * (uint64_t(p.n_heads) * p.splits + 2 * uint64_t(p.n_heads));
}
// matvec_x_combine.wgsl's part of a kernel's key and prelude; `prefix`: the keyed splits only
// (XC_PREFIX).
std::string combine_tag(const DecodePartials& p, bool prefix) {
  return "/xc" + std::to_string(p.n_heads) + "x" + std::to_string(p.splits) + "x" + std::to_string(p.head_dim) +
         (prefix ? "p" : "");
}
std::string combine_prelude(const DecodePartials& p, bool prefix) {
  return prelude_u32("XC_NH", u32(p.n_heads)) + prelude_u32("XC_S", p.splits) + prelude_u32("XC_HD", u32(p.head_dim)) +
         prelude_bool("XC_PREFIX", prefix);
}
}  // namespace

std::string_view to_string(LinearVersion v) {
  switch (v) {
    case LinearVersion::Auto: return "auto";
    case LinearVersion::Naive: return "naive";
    case LinearVersion::Subgroup: return "subgroup";
    case LinearVersion::Shared: return "shared";
    case LinearVersion::RegTile: return "regtile";
    case LinearVersion::Batched: return "batched";
    case LinearVersion::BatchedQ8: return "batched-q8";
  }
  return "?";
}

LinearVersion parse_linear_version(std::string_view name) {
  if (name == "auto") return LinearVersion::Auto;
  for (LinearVersion v : kLinearVersions)
    if (to_string(v) == name) return v;
  throw Error("wgc: unknown linear version '" + std::string(name) +
              "' (auto, naive, subgroup, shared, regtile, batched, batched-q8)");
}

std::string_view to_string(RmsNormVersion v) {
  switch (v) {
    case RmsNormVersion::Auto: return "auto";
    case RmsNormVersion::Shared: return "shared";
    case RmsNormVersion::Subgroup: return "subgroup";
  }
  return "?";
}

bool LlmOps::supports(LinearVersion v, const LinearDims& d) const {
  if (v == LinearVersion::Subgroup) return subgroups_;
  if (v == LinearVersion::BatchedQ8) return d.type == TensorType::Q4_0 || d.type == TensorType::Q8_0;
  return true;
}

LinearVersion LlmOps::choose_linear(const LinearDims& d) const {
  if (d.n_tokens > 1 && tuning.matmul != LinearVersion::Auto) return tuning.matmul;
  if (ctx_.adapter().is_cpu()) return LinearVersion::Naive;
  // Register tiling where it fills the GPU: an 8B model's projections at 512 tokens (256 and more
  // tiles) ran 1.66x faster on the H200 than the tiled kernel (8B F16 pp512 1,466 vs 883 t/s,
  // docs/benchmarks.md); smaller products keep the tiled kernel's 64 x 64 tiles (not measured).
  if (d.n_tokens > 1 &&
      uint64_t(ceil_div(uint64_t(d.rows), tuning.matmul_bn)) * ceil_div(uint64_t(d.n_tokens), tuning.matmul_bm) >=
          kRegTileMinGroups)
    return LinearVersion::RegTile;
  return subgroups_ ? LinearVersion::Subgroup : LinearVersion::Shared;
}

Kernel LlmOps::linear_kernel(const std::string& kind, TensorType t) const {
  std::vector<std::string> files = {"llm/common.wgsl", "llm/weights/" + str(t) + ".wgsl"};
  std::string key = "llm/" + kind + "/" + str(t);
  if (kind == "naive") {
    files.push_back("llm/linear_naive.wgsl");
    return kernel(key, files, {{"WG", kNaiveWG}}, false);
  }
  if (kind == "matmul") {
    files.push_back("llm/matmul_tiled.wgsl");
    return kernel(key, files, {}, false);
  }
  if (kind == "regtile") {
    const uint32_t bm = tuning.matmul_bm, bn = tuning.matmul_bn, bk = tuning.matmul_bk;
    const std::string op = "linear regtile";
    need(bm > 0 && bn > 0 && bm % 8 == 0 && bn % 8 == 0, op,
         "tile " + std::to_string(bm) + "x" + std::to_string(bn) + ": both must be multiples of 8");
    need(bk > 0 && bk % 4 == 0, op, "BK " + std::to_string(bk) + " is not a multiple of 4");
    const uint32_t tn = kRegTileTn;
    const uint32_t nt = bm * bn / (8 * tn);
    need(nt <= max_wg_, op,
         std::to_string(nt) + " invocations per workgroup, the adapter allows " + std::to_string(max_wg_));
    const uint64_t shared = uint64_t(bk) * (bm + bn) * 4;
    need(shared <= caps_.workgroup_storage, op,
         std::to_string(shared) + " bytes of workgroup memory, the adapter allows " +
             std::to_string(caps_.workgroup_storage));
    files.push_back("llm/matmul_regtile.wgsl");
    // The tile as constants in the source; the next tile's quads loaded into registers before
    // this tile's math (RT_PREFETCH).
    auto decl = [&](const char* name, uint32_t val) {
      return std::string("const ") + name + ": u32 = " + std::to_string(val) + "u;\n";
    };
    const std::string prelude = decl("BM", bm) + decl("BN", bn) + decl("BK", bk) + decl("NT", nt) + decl("KQ", bk / 4) +
                                decl("AS", bk * bm / 4) + decl("BS", bk * bn / 4) + decl("RT_TN", tn) +
                                "const RT_DB: bool = false;\nconst RT_PREFETCH: bool = true;\nconst RT_WPT: u32 = " +
                                std::to_string(ceil_div(bn * bk / 4, nt)) +
                                "u;\nconst RT_XPT: u32 = " + std::to_string(ceil_div(bm * bk / 4, nt)) + "u;\n";
    return kernel(
        key + "/" + std::to_string(bm) + "x" + std::to_string(bn) + "x" + std::to_string(bk) + "/8x4/prefetch", files,
        {}, false, "main", prelude);
  }
  throw Error("wgc: llm: no kernel kind '" + kind + "'");
}

Kernel LlmOps::matvec_kernel(TensorType t, LinearVersion v, int64_t cols, uint32_t swiglu_rows, const float* norm_eps,
                             bool rope, uint32_t splits, const DecodePartials* xc, uint64_t groups) const {
  const bool sg = v == LinearVersion::Subgroup;
  need(!xc || (!norm_eps && !rope && !swiglu_rows), "matvec", "x combined from partials for plain rows only");
  const auto files = matvec_files(t, sg, xc != nullptr, norm_eps != nullptr, rope, "llm/matvec.wgsl");
  const MatvecShape m = few_unroll(matvec_shape(swiglu_rows != 0), groups);
  const uint32_t rows = rope ? rope_rows() : swiglu_rows ? swiglu_rows : m.rows;
  std::vector<std::pair<std::string, double>> c = {{"WG", m.wg}, {"TPR", m.tpr}, {"UNROLL", m.unroll}, {"R", rows}};
  if (sg) c.push_back({"SG", sg_size_});
  std::string key = "llm/matvec/" + str(t);
  if (norm_eps) {
    c.push_back({"EPS", double(*norm_eps)});
    uint32_t bits;
    std::memcpy(&bits, norm_eps, 4);
    key += "/norm" + std::to_string(bits);
  }
  // x masked past cols only where a row's last chunk reaches past them (the padded types).
  const uint32_t ch = chunk_elems(t);
  const bool padded = float_weights(t);
  const bool mask = padded && cols % ch != 0;
  // With column ranges, x staged per range (whole chunks).
  const int64_t range_cols = splits > 1 ? split_chunks(t, cols, splits) * ch : cols;
  const bool xs = stages_x(t, range_cols, xc ? combine_bytes(*xc) : 0);
  need(!xc || xs, "matvec", "x combined from partials must be staged whole (matvec_xs 2, workgroup memory)");
  const uint32_t xn4 = xs ? u32((range_cols + 3) / 4) : 1u;
  // The prefetch and column ranges for the float types (x in one pass, w_dot as w_chunk adds).
  const uint32_t pf = padded ? std::min({tuning.matvec_pf, m.unroll, kMatvecPfLoadsMax / rows}) : 0u;
  need(splits == 1 || (padded && !swiglu_rows && !rope), "matvec", "column ranges for plain F16/BF16/F32 rows only");
  if (mask) key += "/mask";
  if (xs) key += "/xs" + std::to_string(xn4);
  if (rope) key += "/rope";
  // The norm's scale after the dot products where x is staged whole (each element loaded once).
  const bool late = norm_eps && xs;
  if (late) key += "/late";
  if (pf) key += "/pf" + std::to_string(pf);
  // The columns built in (a kernel per width).
  const uint32_t static_cols = cols > 0 ? u32(cols) : 0u;
  if (static_cols) key += "/c" + std::to_string(static_cols);
  if (splits > 1) key += "/ks" + std::to_string(splits);
  if (xc) key += combine_tag(*xc, combine_prefix(*xc));
  const auto cu = prelude_u32;
  const auto cb = prelude_bool;
  const std::string prelude = cb("SWIGLU", swiglu_rows != 0) + cb("ROPE", rope) + cb("XS", xs) + cu("XN4", xn4) +
                              cb("X_MASK", mask) + cb("X_LATE", late) + cu("PF", pf) +
                              cu("PF_N", std::max(1u, pf * rows)) + cu("KS", splits) + cu("COLS", static_cols) +
                              cu("P_BINDING", rope ? kMatvecRopeUniform : 5u) +
                              (xc ? combine_prelude(*xc, combine_prefix(*xc)) : std::string());
  return kernel(
      key + (sg ? "/sg/" : "/wg/") + (swiglu_rows ? "swiglu/" : "") + shape_tag({m.wg, m.tpr, m.unroll, rows}), files,
      c, sg, "main", prelude);
}

uint32_t LlmOps::kx_workgroup(int64_t cols) const {
  const bool wide = tuning.kx_wide_wg && cols >= kKxWideCols;
  return std::min(wide ? tuning.kx_wide_wg : tuning.kx_wg, max_wg_);
}

bool LlmOps::kx_runs(uint32_t kind, TensorType t, int64_t rows, int64_t cols, LinearVersion v) const {
  const bool padded = float_weights(t);
  if (!(tuning.matvec_kx & kind) || !padded || cols <= 0 || rows < 0 || v != LinearVersion::Subgroup || !subgroups_)
    return false;
  return kx_chunks(t, cols) <= kKxMaxChunks;
}

uint64_t LlmOps::kx_chunks(TensorType t, int64_t cols) const {
  return ceil_div(ceil_div(uint64_t(cols), uint64_t(chunk_elems(t))), uint64_t(kx_workgroup(cols)));
}

Kernel LlmOps::matvec_kx_kernel(TensorType t, int64_t cols, uint32_t kind, const float* norm_eps,
                                const DecodePartials* xc) const {
  const std::string op = "matvec kx";
  const uint32_t wg = kx_workgroup(cols), rows = tuning.kx_rows;
  need(wg % sg_size_ == 0 && (sg_size_ & (sg_size_ - 1)) == 0, op,
       "kx_wg (or kx_wide_wg) " + std::to_string(wg) + " (a multiple of the subgroup size, a power of two)");
  need(rows >= 2 && rows <= kKxMaxRows && (rows & (rows - 1)) == 0, op,
       "kx_rows " + std::to_string(rows) + " (a power of two, 2.." + std::to_string(kKxMaxRows) + ")");
  need(kind != kKxPlain || !norm_eps || !xc, op, "x normalised or combined, not both");
  const uint32_t ch = chunk_elems(t);
  const uint32_t nch = u32(ceil_div(uint64_t(cols), uint64_t(ch)));
  const uint32_t cpl = u32(kx_chunks(t, cols));
  need(cpl <= kKxMaxChunks, op,
       std::to_string(cpl) + " chunks per invocation (at most " + std::to_string(kKxMaxChunks) + ")");
  // Rows per pass: kx_loads chunks' worth, a power of two dividing the tile.
  const uint32_t rb = std::clamp(pow2_floor(std::max(1u, tuning.kx_loads / cpl)), 1u, rows);
  const bool swiglu = kind == kKxSwiglu, rope = kind == kKxRope;
  const auto files = matvec_files(t, true, xc != nullptr, norm_eps != nullptr, rope, "llm/matvec_kx.wgsl");
  std::vector<std::pair<std::string, double>> c = {{"WG", wg}, {"SG", sg_size_}};
  std::string key = "llm/matvec_kx/" + str(t) + (swiglu ? "/swiglu" : rope ? "/rope" : "");
  if (norm_eps) {
    c.push_back({"EPS", double(*norm_eps)});
    uint32_t bits;
    std::memcpy(&bits, norm_eps, 4);
    key += "/norm" + std::to_string(bits);
  }
  const bool mask = cols % ch != 0;
  if (xc) key += combine_tag(*xc, combine_prefix(*xc));
  key += "/c" + std::to_string(cols) + (mask ? "/mask/" : "/") + shape_tag({wg, rows, rb}) + "/xe/ep";
  const auto cu = prelude_u32;
  const auto cb = prelude_bool;
  // XS: each element of x through x_load4 once (the staged contract the x files ask for).
  const std::string prelude = cb("SWIGLU", swiglu) + cb("ROPE", rope) + cb("XS", true) + cb("X_MASK", mask) +
                              cb("X_LATE", norm_eps != nullptr) + cu("COLS", u32(cols)) + cu("NCH", nch) +
                              cu("CPL", cpl) + cu("T", rows) + cu("RB", rb) + cb("DB", false) + cb("XE", true) +
                              cb("EP", true) + cu("KSG", sg_size_) + cu("LT", uint32_t(std::countr_zero(rows))) +
                              cu("LSG", uint32_t(std::countr_zero(sg_size_))) +
                              cu("P_BINDING", rope ? kMatvecRopeUniform : 5u) +
                              (xc ? combine_prelude(*xc, combine_prefix(*xc)) : std::string());
  return kernel(key, files, c, true, "main", prelude);
}

uint64_t LlmOps::kx_grid(uint32_t kind, int64_t rows, TensorType t, int64_t cols) const {
  const uint64_t tr = tuning.kx_rows;
  const uint64_t tiles = kind == kKxPlain ? ceil_div(uint64_t(rows), tr) : ceil_div(uint64_t(rows) / 2, tr / 2);
  uint64_t groups = tuning.kx_groups;
  if (groups) groups *= std::max<uint64_t>(1, kKxGroupsCpl / std::max<uint64_t>(1, kx_chunks(t, cols)));
  return groups ? std::min(tiles, groups) : tiles;
}

bool LlmOps::stages_x(TensorType t, int64_t cols, uint64_t extra_bytes) const {
  if (!float_weights(t)) return false;
  // matvec.wgsl's xw (whole weight chunks of x), red and res
  const uint64_t xv = chunk_elems(t) / 4, bytes = ceil_div(uint64_t(ceil_div(uint64_t(cols), 4)), xv) * xv * 16 +
                                                  4ull * matvec_shape().wg + 4ull * kSwigluRows + extra_bytes;
  return cols > 0 && bytes <= caps_.workgroup_storage;
}

uint32_t LlmOps::matvec_splits(TensorType t, int64_t cols, int64_t /*rows*/) const {
  const bool padded = float_weights(t);
  if (!padded || tuning.matvec_split <= 1 || cols < int64_t(tuning.matvec_split_cols)) return 1;
  need(tuning.matvec_split <= kMatvecMaxSplits, "matvec",
       "matvec_split " + std::to_string(tuning.matvec_split) + " (1.." + std::to_string(kMatvecMaxSplits) + ")");
  // At least one unrolled pass of every row group's invocations per range.
  const MatvecShape m = matvec_shape();
  const int64_t nch = ceil_div(cols, int64_t(chunk_elems(t)));
  return u32(std::clamp<int64_t>(nch / (int64_t(m.tpr) * m.unroll), 1, tuning.matvec_split));
}

int64_t LlmOps::split_chunks(TensorType t, int64_t cols, uint32_t splits) {
  return ceil_div(ceil_div(cols, int64_t(chunk_elems(t))), int64_t(splits));
}

Params LlmOps::matvec_params(int64_t rows, int64_t cols, int64_t row0, int64_t y_off, uint32_t flags) const {
  Params prm(1u, u32(rows), u32(cols), u32(row0), u32(cols), u32(rows), u32(y_off), flags);
  for (uint32_t i = 0; i < kMatvecRopeParams; ++i) prm.push(0u);
  return prm;
}

LlmOps::MatvecShape LlmOps::matvec_shape(bool swiglu) const {
  const uint32_t wg = std::min(tuning.matvec_wg, max_wg_);
  (void)swiglu;
  const uint32_t tpr = tuning.matvec_tpr, unroll = tuning.matvec_unroll;
  need(unroll >= 1 && unroll <= 8, "matvec", "unroll " + std::to_string(unroll) + " (1..8)");
  return {wg, std::min(tpr, wg), std::clamp(tuning.matvec_rows, 1u, kMatvecMaxRows), unroll};
}

LlmOps::MatvecShape LlmOps::few_unroll(MatvecShape m, uint64_t groups) const {
  if (groups == 0 || groups >= kMatvecFewGroups) return m;
  m.unroll = kMatvecFewUnroll;
  return m;
}

std::vector<KernelVersion> LlmOps::versions() const {
  std::vector<KernelVersion> v;
  for (auto t : kGpuTensorTypes) {
    std::string ts = str(t);
    v.push_back({"matvec", ts + "/naive", "one invocation per output row"});
    if (subgroups_) v.push_back({"matvec", ts + "/subgroup", "32 invocations per row, vec4 loads, subgroupAdd"});
    v.push_back({"matvec", ts + "/shared", "32 invocations per row, vec4 loads, shared-memory sum"});
    v.push_back({"matmul", ts + "/naive", "one invocation per output"});
    v.push_back({"matmul", ts + "/tiled", "64x64 tiles, 4x4 per invocation, W dequantized into shared memory"});
    v.push_back({"matmul", ts + "/regtile",
                 std::to_string(tuning.matmul_bm) + " tokens x " + std::to_string(tuning.matmul_bn) +
                     " rows per workgroup, 8x8 per invocation, vec4 shared-memory reads of x and dequantized W"});
    v.push_back({"batched", ts + "/batched",
                 "serving: tokens x 4 rows per invocation, " + std::to_string(tuning.batched_kl) +
                     " lanes per row read consecutive chunks, x broadcast from shared memory; results independent of "
                     "the batch"});
    if (t == TensorType::Q4_0 || t == TensorType::Q8_0)
      v.push_back({"batched", ts + "/batched-q8",
                   "serving, x quantized to 8 bits per 32 (per token), integer dot products (dot4I8Packed)"});
    v.push_back({"embedding", ts, "one invocation per 4 elements"});
  }
  if (subgroups_) v.push_back({"rms_norm", "subgroup", "one workgroup per row"});
  v.push_back({"rms_norm", "shared", "one workgroup per row"});
  v.push_back({"rope", "table", "one invocation per pair"});
  v.push_back({"swiglu", "elementwise", ""});
  v.push_back({"add", "elementwise", ""});
  v.push_back({"kv_append", "elementwise", ""});
  v.push_back({"rope_kv_append", "elementwise", "q/k RoPE and the K/V cache append, one invocation per pair"});
  v.push_back(
      {"attention", "prefill", "flash attention, causal, GQA: 16 rows per workgroup (where -tiled-pf cannot run)"});
  v.push_back({"attention", "prefill-tiled-pf",
               "register-tiled flash attention, 64 rows x 64 keys, chunks prefetched into registers"});
  v.push_back({"attention", "decode", "split-K flash decoding + combine, a row per head (where -kv cannot run)"});
  v.push_back({"attention", "decode-kv", "split-K flash decoding, K/V read once per kv head (without subgroups)"});
  if (subgroups_)
    v.push_back({"attention", "decode-sg", "split-K flash decoding, K/V rows in registers, subgroup sums"});
  v.push_back({"argmax", "chained", "top-1 passes of 2048 entries per workgroup"});
  v.push_back({"topk", "chained", "k rounds per workgroup, passes until k remain"});
  return v;
}

void LlmOps::precompile(const std::vector<TensorType>& types, const std::vector<int>& head_dims) {
  // Compile on first use is the common path; this only warms the map (pipelines compile in Dawn's
  // cache, so a later compile() of the same code is cheap).
  for (auto t : types) {
    linear_kernel("naive", t);
    linear_kernel("matmul", t);
    linear_kernel("regtile", t);
    matvec_kernel(t, subgroups_ ? LinearVersion::Subgroup : LinearVersion::Shared, 0);
    kernel("llm/embedding/" + str(t), {"llm/common.wgsl", "llm/weights/" + str(t) + ".wgsl", "llm/embedding.wgsl"}, {},
           false);
  }
  for (int hd : head_dims) {
    attn_tiled_pf_kernel(hd);
    attn_kernel(hd, 16);
    for (int bq : {1, 2, 4, 8}) attn_kernel(hd, bq);
  }
}

// ---- embedding -----------------------------------------------------------------------------

void LlmOps::embedding(Batch& b, const GpuWeight& table, const Tensor& ids, const Tensor& out, int n_tokens,
                       int64_t out_stride) const {
  const std::string op = "embedding";
  if (out_stride < 0) out_stride = table.cols;
  need(n_tokens > 0, op, "no tokens");
  need_elems(ids, n_tokens, op, "ids");
  need_elems(out, (n_tokens - 1) * out_stride + table.cols, op, "out");
  Kernel k = kernel("llm/embedding/" + str(table.type),
                    {"llm/common.wgsl", "llm/weights/" + str(table.type) + ".wgsl", "llm/embedding.wgsl"}, {}, false);
  uint64_t work = uint64_t(n_tokens) * uint64_t((table.cols + 3) / 4);
  b.dispatch(k, {table.data, table.scales, ids, out},
             Params(u32(n_tokens), u32(table.cols), u32(out_stride), u32(table.rows)),
             groups_1d(ctx_, ceil_div(work, 256)));
}

// ---- rms_norm ------------------------------------------------------------------------------

void LlmOps::rms_norm(Batch& b, const Tensor& x, const Tensor& w, const Tensor& y, int rows, int n, float eps,
                      RmsNormVersion v) const {
  const std::string op = "rms_norm";
  need(rows > 0 && n > 0, op, "empty");
  need_elems(x, int64_t(rows) * n, op, "x");
  need_elems(y, int64_t(rows) * n, op, "y");
  need_elems(w, n, op, "w");
  bool sg = v == RmsNormVersion::Subgroup || (v == RmsNormVersion::Auto && subgroups_);
  need(!sg || subgroups_, op, "this adapter has no usable subgroups");
  uint32_t wg = std::min<uint32_t>(256, pow2_floor(max_wg_));
  std::vector<std::pair<std::string, double>> c = {{"WG", wg}};
  if (sg) c.push_back({"SG", sg_size_});
  Kernel k = kernel(std::string("llm/rms_norm/") + (sg ? "sg" : "wg"),
                    {"llm/common.wgsl", sg ? "llm/reduce_sg.wgsl" : "llm/reduce_wg.wgsl", "llm/rms_norm.wgsl"}, c, sg);
  b.dispatch(k, {x, w, y}, Params(u32(rows), u32(n), u32(n), u32(n), eps), groups_1d(ctx_, u32(rows)));
}

void LlmOps::head_rms_norm(Batch& b, const Tensor& x, const Tensor& w, int n_tokens, int n_heads, int head_dim,
                           int64_t stride, int64_t offset, float eps) const {
  const std::string op = "head_rms_norm";
  need(n_tokens > 0 && n_heads > 0 && head_dim > 0, op, "empty");
  need(stride >= int64_t(n_heads) * head_dim, op, "stride shorter than the heads");
  need_elems(x, (n_tokens - 1) * stride + offset + int64_t(n_heads) * head_dim, op, "x");
  need_elems(w, head_dim, op, "w");
  constexpr uint32_t kWG = 64;  // head vectors are 64-256 long
  Kernel k = kernel("llm/head_norm", {"llm/head_norm.wgsl"}, {{"WG", kWG}}, false);
  uint32_t rows = u32(int64_t(n_tokens) * n_heads);
  b.dispatch(k, {x, w}, Params(rows, u32(n_heads), u32(head_dim), u32(stride), u32(offset), eps),
             groups_1d(ctx_, rows));
}

// ---- rope ----------------------------------------------------------------------------------

void LlmOps::rope(Batch& b, const Tensor& x, const RopeTable& table, const RopeArgs& a) const {
  const std::string op = "rope";
  const int hd = table.head_dim;
  int64_t stride = a.stride < 0 ? int64_t(a.n_heads) * hd : a.stride;
  need(a.n_tokens > 0 && a.n_heads > 0, op, "empty");
  need_elems(x, (a.n_tokens - 1) * stride + a.offset + int64_t(a.n_heads) * hd, op, "x");
  uint32_t flags = (a.positions ? 1u : 0u) | (a.interleaved ? 2u : 0u);
  if (a.positions) {
    need_elems(a.positions, a.n_tokens, op, "positions");
  } else {
    need(a.pos0 >= 0 && a.pos0 + a.n_tokens <= table.max_pos, op,
         "positions " + std::to_string(a.pos0) + ".." + std::to_string(a.pos0 + a.n_tokens - 1) + " past the table's " +
             std::to_string(table.max_pos));
  }
  Kernel k = kernel("llm/rope", {"llm/common.wgsl", "llm/rope.wgsl"}, {}, false);
  uint64_t work = uint64_t(a.n_tokens) * uint64_t(a.n_heads) * uint64_t(hd / 2);
  b.dispatch(k, {x, table.cos_sin, a.positions ? a.positions : table.cos_sin},
             Params(u32(a.n_tokens), u32(a.n_heads), u32(hd), u32(stride), u32(a.offset), u32(a.pos0), flags,
                    u32(table.max_pos)),
             groups_1d(ctx_, ceil_div(work, 256)));
}

// ---- linear --------------------------------------------------------------------------------

void LlmOps::linear(Batch& b, const GpuWeight& w, const Tensor& x, const Tensor& y, int n_tokens,
                    const LinearOptions& o, LinearVersion v) const {
  const std::string op = "linear " + str(w.type);
  const int64_t rows = o.rows < 0 ? w.rows - o.row0 : o.rows;
  const int64_t xs = o.x_stride < 0 ? w.cols : o.x_stride;
  const int64_t ys = o.y_stride < 0 ? rows : o.y_stride;
  need(n_tokens > 0, op, "no tokens");
  need(o.row0 >= 0 && rows > 0 && o.row0 + rows <= w.rows, op,
       "rows " + std::to_string(o.row0) + "+" + std::to_string(rows) + " of a " + std::to_string(w.rows) +
           "-row weight");
  need_elems(x, (n_tokens - 1) * xs + w.cols, op, "x");
  need_elems(y, (n_tokens - 1) * ys + o.y_offset + rows, op, "y");
  if (o.bias) need_elems(o.bias, o.row0 + rows, op, "bias");
  uint32_t flags = (o.bias ? 1u : 0u) | (o.accumulate ? 2u : 0u);
  Params prm(u32(n_tokens), u32(rows), u32(w.cols), u32(o.row0), u32(xs), u32(ys), u32(o.y_offset), flags);
  const Tensor& bias = o.bias ? o.bias : x;
  const LinearDims d{n_tokens, rows, w.cols, w.type};
  if (v == LinearVersion::Auto) v = choose_linear(d);
  need(supports(v, d), op,
       v == LinearVersion::BatchedQ8 ? "batched-q8 reads Q4_0 and Q8_0 weights only"
                                     : "this adapter has no usable subgroups");
  if (v == LinearVersion::Batched) return linear_batched(b, w, x, y, n_tokens, prm, bias, rows);
  if (v == LinearVersion::BatchedQ8) return linear_batched_q8(b, w, x, xs, y, n_tokens, prm, bias, rows);
  if (v == LinearVersion::Naive) {
    Kernel k = linear_kernel("naive", w.type);
    b.dispatch(k, {w.data, w.scales, x, bias, y}, prm,
               groups_1d(ctx_, ceil_div(uint64_t(n_tokens) * uint64_t(rows), kNaiveWG)));
  } else if (v == LinearVersion::RegTile) {
    Kernel k = linear_kernel("regtile", w.type);
    b.dispatch(k, {w.data, w.scales, Arg(x, 0, x.capacity()), bias, y}, prm,
               {ceil_div(uint64_t(rows), tuning.matmul_bn), ceil_div(uint64_t(n_tokens), tuning.matmul_bm), 1});
  } else if (n_tokens == 1) {
    need(round16(x.bytes()) <= x.capacity(), op, "x buffer too small");
    matvec(b, w, Arg(x, 0, round16(x.bytes())), bias, y, rows, o, flags, v);
  } else {
    Kernel k = linear_kernel("matmul", w.type);
    b.dispatch(k, {w.data, w.scales, x, bias, y}, prm,
               {ceil_div(uint64_t(rows), 64), ceil_div(uint64_t(n_tokens), 64), 1});
  }
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
  Kernel ks = kernel("llm/matvec_sum", {"llm/common.wgsl", "llm/matvec_sum.wgsl"}, {}, false);
  b.dispatch(ks, {part, bias, y}, Params(u32(rows), splits, u32(o.row0), u32(o.y_offset), flags),
             groups_1d(ctx_, ceil_div(uint64_t(rows), 256)));
}

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

bool LlmOps::fuses_norm(int64_t cols) const { return cols > 0 && cols % 4 == 0; }

bool LlmOps::fuses_rope(int64_t cols) const {
  return fuses_norm(cols) && caps_.storage_buffers >= kMatvecRopeUniform;  // buffers 0-8
}

void LlmOps::rms_norm_qkv_rope(Batch& b, const Tensor& x, const Tensor& norm_w, float eps, const GpuWeight& w,
                               const Tensor& qkv, const RopeTable& table, const KvLayer& c, const RopeKvArgs& a) const {
  const std::string op = "rms_norm_qkv_rope " + str(w.type);
  check_norm(x, norm_w, w.cols, op);
  need(fuses_rope(w.cols), op,
       "needs " + std::to_string(kMatvecRopeUniform) + " storage buffers per shader stage, the adapter allows " +
           std::to_string(caps_.storage_buffers));
  detail::check_qkv_rope(w, qkv, table, c, a, op);
  const MatvecShape m = matvec_shape();
  need(m.tpr <= m.wg, op, "matvec tpr larger than the workgroup");
  const LinearVersion v = subgroups_ ? LinearVersion::Subgroup : LinearVersion::Shared;
  const bool kx = kx_runs(kKxRope, w.type, w.rows, w.cols, v);
  const uint64_t pairs = uint64_t(w.rows) / 2;  // rope_rows() / 2 per row group
  const uint64_t groups =
      kx ? kx_grid(kKxRope, w.rows, w.type, w.cols) : ceil_div(pairs, m.wg / m.tpr * (rope_rows() / 2));
  Kernel k = kx ? matvec_kx_kernel(w.type, w.cols, kKxRope, &eps)
                : matvec_kernel(w.type, v, w.cols, 0, &eps, true, 1, nullptr, groups);
  Params prm(1u, u32(w.rows), u32(w.cols), 0u, u32(w.cols), u32(w.rows), 0u, 0u);
  detail::push_rope_params(prm, table, c, a);
  b.dispatch(k,
             {w.data, w.scales, Arg(x, 0, round16(x.bytes())), norm_w, qkv, table.cos_sin,
              a.positions ? a.positions : dummy_, c.k, c.v},
             prm, groups_1d(ctx_, groups));
}

uint32_t LlmOps::rope_rows() const { return kMatvecRopeRows; }

void LlmOps::check_norm(const Tensor& x, const Tensor& norm_w, int64_t cols, const std::string& op) const {
  need(fuses_norm(cols), op, std::to_string(cols) + " columns (a multiple of 4)");
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
  need(wr >= 2 && wr <= kSwigluRows && (wr & (wr - 1)) == 0, op,
       "swiglu_wg_rows " + std::to_string(wr) + " (a power of two, 2.." + std::to_string(kSwigluRows) + ")");
  need(w.rows % 2 == 0 && n % (wr / 2) == 0, op,
       "a gate|up weight of " + std::to_string(w.rows) + " rows (twice a multiple of " + std::to_string(wr / 2) + ")");
  need_elems(out, n, op, "out");
  need(v == LinearVersion::Subgroup || v == LinearVersion::Shared, op, "runs the subgroup or shared matvec");
  need(v != LinearVersion::Subgroup || subgroups_, op, "this adapter has no usable subgroups");
  const MatvecShape m = matvec_shape(true);
  const bool kx = kx_runs(kKxSwiglu, w.type, w.rows, w.cols, v);  // its own tiles, gate rows in any number
  need(kx || (wr * m.tpr % m.wg == 0 && wr * m.tpr / m.wg <= kMatvecMaxRows), op,
       std::to_string(m.wg / m.tpr) + " row groups per workgroup cannot take " + std::to_string(wr) +
           " rows (1 to 8 per group)");
  const uint64_t groups = kx ? kx_grid(kKxSwiglu, w.rows, w.type, w.cols) : uint64_t(n / (wr / 2));
  Kernel k = kx ? matvec_kx_kernel(w.type, w.cols, kKxSwiglu, eps)
                : matvec_kernel(w.type, v, w.cols, wr * m.tpr / m.wg, eps, false, 1, nullptr, groups);
  b.dispatch(k, {w.data, w.scales, Arg(x, 0, round16(x.bytes())), norm_w, out}, matvec_params(w.rows, w.cols, 0, 0, 0),
             groups_1d(ctx_, groups));
}

namespace {
constexpr uint32_t kBatchedRowsPerGroup = 4;  // linear_batched.wgsl: TR
constexpr int kBatchedLargeStep = 256;        // more tokens: tuning.batched_tt_large
// The batched kernels' workgroup: the largest of 64, 128, 256 invocations that still gives this
// many workgroups (two per SM on the H200).
constexpr uint64_t kBatchedMinGroups = 264;
// linear_batched_q8.wgsl's x tile in elements (whole blocks of every lane).
constexpr uint32_t kBatchedQ8XTile = 1024;
// linear_batched_q8_mv.wgsl: blocks each invocation loads at once, rows per row group, invocations
// per workgroup (serving session 7: un 8, tr 2 and wg 128 lost).
constexpr uint32_t kBatchedMvUnroll = 4, kBatchedMvRows = 1, kBatchedMvWg = 256;
// The batched kernels' token tile: the smallest power of two that holds n tokens, at most `most`
// (a few decode tokens then cost no arithmetic on padding). It never changes a result.
uint32_t batched_token_tile(int n_tokens, uint32_t most) {
  uint32_t tt = 1;
  while (tt < most && tt < uint32_t(n_tokens)) tt *= 2;
  return tt;
}
// Workgroup memory of the kernels' final sum over the lanes: WG x min(TT, 4) vec4 (TC in the .wgsl).
uint64_t batched_sum_bytes(uint32_t wg, uint32_t tt) { return uint64_t(wg) * std::min(tt, 4u) * 16; }
}  // namespace

void LlmOps::linear_batched(Batch& b, const GpuWeight& w, const Tensor& x, const Tensor& y, int n_tokens,
                            const Params& prm, const Tensor& bias, int64_t rows) const {
  const std::string op = "linear batched " + str(w.type);
  const uint32_t kl = tuning.batched_kl;
  need(kl >= 1 && kl <= 32 && (kl & (kl - 1)) == 0, op,
       "batched_kl " + std::to_string(kl) + " is not a power of two <= 32");
  // x tile: a multiple of 256 (whole K-quant super-blocks) and of kl chunks (each lane keeps its
  // chunks c = lane mod kl across tiles).
  uint32_t xt = 256;
  while (xt % (kl * chunk_elems(w.type)) != 0) xt += 256;
  // Tokens per workgroup: as many as there are, up to batched_tt (the register budget: TT x 4
  // sums), as workgroup memory allows.
  const uint64_t smem_limit = caps_.workgroup_storage;
  const auto x_tile_bytes = [&](uint32_t t) { return uint64_t(t) * (xt / 4 + xt / 32) * 16; };
  uint32_t tt = batched_token_tile(n_tokens, batched_tt(n_tokens));
  while (tt > 1 && x_tile_bytes(tt) > smem_limit) tt /= 2;
  const uint64_t tiles = ceil_div(uint64_t(n_tokens), tt);
  const uint32_t wg = batched_wg(tiles, rows, kBatchedRowsPerGroup);
  const uint64_t shared = std::max(x_tile_bytes(tt), batched_sum_bytes(wg, tt));
  need(shared <= smem_limit, op,
       std::to_string(shared) + " bytes of workgroup memory, the adapter allows " + std::to_string(smem_limit));
  const uint32_t bn = wg / kl * kBatchedRowsPerGroup;
  const uint64_t row_tiles = ceil_div(uint64_t(rows), bn);
  need(row_tiles <= ctx_.limits().max_compute_workgroups_per_dimension, op, "too many rows");
  std::string prelude = "const TT: u32 = " + std::to_string(tt) + "u;\nconst WG: u32 = " + std::to_string(wg) +
                        "u;\nconst KL: u32 = " + std::to_string(kl) + "u;\nconst XT: u32 = " + std::to_string(xt) +
                        "u;\n";
  Kernel k = kernel("llm/batched/" + str(w.type) + "/" + std::to_string(tt) + "x" + std::to_string(wg) + "x" +
                        std::to_string(kl) + "x" + std::to_string(xt),
                    {"llm/common.wgsl", "llm/weights/" + str(w.type) + ".wgsl", "llm/linear_batched.wgsl"}, {}, false,
                    "main", prelude);
  b.dispatch(k, {w.data, w.scales, x, bias, y}, prm, {u32(tiles), u32(row_tiles), 1});
}

uint32_t LlmOps::batched_tt(int n_tokens) const {
  for (uint32_t tt : {tuning.batched_tt, tuning.batched_tt_large})
    need(tt >= 1 && tt <= 32 && (tt & (tt - 1)) == 0, "linear batched",
         "batched_tt " + std::to_string(tt) + " is not a power of two <= 32");
  return n_tokens > kBatchedLargeStep ? tuning.batched_tt_large : tuning.batched_tt;
}

uint32_t LlmOps::batched_wg(uint64_t tiles, int64_t rows, uint32_t tr) const {
  const uint32_t kl = tuning.batched_kl;
  uint32_t wg = 64;
  for (uint32_t c : {128u, 256u})
    if (tiles * ceil_div(uint64_t(rows), c / kl * tr) >= kBatchedMinGroups) wg = c;
  wg = std::max(wg, kl);
  need(wg % kl == 0 && wg <= max_wg_, "linear batched",
       "workgroup of " + std::to_string(wg) + " (a multiple of batched_kl, <= " + std::to_string(max_wg_) + ")");
  return wg;
}

void LlmOps::linear_batched_q8(Batch& b, const GpuWeight& w, const Tensor& x, int64_t x_stride, const Tensor& y,
                               int n_tokens, const Params& prm, const Tensor& bias, int64_t rows) const {
  // x quantized per token and block of 32 (as rms_norm_q8 / swiglu_q8 would: the batched engine's
  // fused path gives the same quants), then the integer kernel.
  Q8Act xq = make_q8_act(ctx_, n_tokens, w.cols);
  quant_act(b, x, dummy_, xq, n_tokens, x_stride, 0, 0, 0, 0.f, "linear batched-q8", kBatchedQuantWg);
  linear_batched_q8_kernel(b, w, xq, y, n_tokens, prm, bias, rows);
}

void LlmOps::linear_batched_q8(Batch& b, const GpuWeight& w, const Q8Act& x, const Tensor& y, int n_tokens,
                               const LinearOptions& o) const {
  const std::string op = "linear batched-q8 " + str(w.type);
  // Named copies, not a structured binding: lambdas below capture them (clang before 16 cannot
  // capture a structured binding).
  const detail::Q8LinearShape shape = detail::check_linear_q8(w, x, y, n_tokens, o, op);
  const int64_t rows = shape.rows, ys = shape.y_stride;
  const uint32_t flags = shape.flags;
  Params prm(u32(n_tokens), u32(rows), u32(w.cols), u32(o.row0), u32(w.cols), u32(ys), u32(o.y_offset), flags);
  linear_batched_q8_kernel(b, w, x, y, n_tokens, prm, o.bias ? o.bias : dummy_, rows);
}

bool LlmOps::batched_rope_takes(int head_dim) const {
  return head_dim > 0 && head_dim % 2 == 0 && caps_.storage_buffers >= 10;
}

void LlmOps::linear_batched_q8_rope(Batch& b, const GpuWeight& w, const Q8Act& x, const Tensor& qkv, int n_tokens,
                                    const RopeTable& table, const KvLayer& c, const RopeKvArgs& a,
                                    const Tensor& bias) const {
  const std::string op = "linear_batched_q8_rope " + str(w.type);
  const int hd = c.head_dim;
  need(batched_rope_takes(hd), op,
       "head_dim " + std::to_string(hd) + " (even) and 10 storage buffers per shader stage (the adapter allows " +
           std::to_string(caps_.storage_buffers) + ")");
  need(a.n_tokens == n_tokens && a.n_heads > 0 && c.n_kv_heads > 0, op, "the rope arguments' tokens and heads");
  need(table.head_dim == hd, op,
       "the rope table's head_dim " + std::to_string(table.head_dim) + " is not the cache's " + std::to_string(hd));
  const int64_t rows = (int64_t(a.n_heads) + 2 * c.n_kv_heads) * hd;
  need(w.rows == rows, op,
       "a QKV weight of " + std::to_string(w.rows) + " rows for " + std::to_string(rows) + " (q, k and v heads)");
  need(a.q_offset == 0 && (a.k_offset < 0 || a.k_offset == int64_t(a.n_heads) * hd) &&
           (a.v_offset < 0 || a.v_offset == (int64_t(a.n_heads) + c.n_kv_heads) * hd) &&
           (a.stride < 0 || a.stride == rows),
       op, "q, k and v heads back to back from 0, one row per token");
  need(!a.cache_rows || a.positions, op, "cache rows come with the positions buffer");
  if (a.positions) need_elems(a.positions, int64_t(n_tokens) * (a.cache_rows ? 2 : 1), op, "positions");
  need(a.cache_rows || int64_t(a.pos0) + n_tokens <= c.max_ctx, op,
       "positions " + std::to_string(a.pos0) + "+" + std::to_string(n_tokens) + " past max_ctx " +
           std::to_string(c.max_ctx));
  need(a.positions || int64_t(a.pos0) + n_tokens <= table.max_pos, op,
       "positions past the table's " + std::to_string(table.max_pos));
  need_elems(c.k, c.offset + int64_t(c.n_kv_heads) * hd * c.max_ctx, op, "k cache");
  need_elems(c.v, c.offset + int64_t(c.n_kv_heads) * hd * c.max_ctx, op, "v cache");
  if (bias) need_elems(bias, rows, op, "bias");
  LinearOptions o;
  o.bias = bias;
  const detail::Q8LinearShape shape = detail::check_linear_q8(w, x, qkv, n_tokens, o, op);
  Params prm(u32(n_tokens), u32(rows), u32(w.cols), 0u, u32(w.cols), u32(shape.y_stride), 0u, shape.flags);
  detail::push_rope_params(prm, table, c, a);
  const RopeKv rope{&table, &c, &a, 0};
  linear_batched_q8_kernel(b, w, x, qkv, n_tokens, prm, bias ? bias : dummy_, rows, &rope);
}

void LlmOps::linear_batched_q8_kernel(Batch& b, const GpuWeight& w, const Q8Act& x, const Tensor& y, int n_tokens,
                                      const Params& prm_in, const Tensor& bias, int64_t rows,
                                      const RopeKv* rope) const {
  const std::string op = "linear batched-q8 " + str(w.type);
  need(w.type == TensorType::Q4_0 || w.type == TensorType::Q8_0, op, "8-bit activations need Q4_0 or Q8_0 weights");
  const uint32_t kl = tuning.batched_kl;
  need(kl >= 1 && kl <= 32 && (kl & (kl - 1)) == 0, op,
       "batched_kl " + std::to_string(kl) + " is not a power of two <= 32");
  std::vector<Arg> args = {w.data, w.scales, x.qs, x.ds, bias, y};
  Params prm = prm_in;
  if (rope) {
    args.insert(args.end(), {rope->table->cos_sin, rope->args->positions ? rope->args->positions : dummy_,
                             rope->cache->k, rope->cache->v});
  } else {
    for (int i = 0; i < 8; ++i) prm.push(0u);  // the ROPE fields
  }
  need(tuning.batched_mv_n <= 8, op, "batched_mv_n " + std::to_string(tuning.batched_mv_n) + " (at most 8)");
  if (n_tokens <= int(tuning.batched_mv_n))
    return linear_batched_q8_mv(b, w, n_tokens, rows, rope != nullptr, std::move(args), prm);
  // x tile: whole blocks of every lane.
  uint32_t xt = std::max<uint32_t>(kBatchedQ8XTile, 32 * kl);
  xt = std::min<uint32_t>(xt, u32(w.cols));  // no longer than a row
  xt = (xt + 32 * kl - 1) / (32 * kl) * (32 * kl);
  // Workgroup memory: the x tile (2 + 1/4 vec4 per block and token) or the lanes' final sum,
  // and (d, sum) per block and token.
  const auto x_tile_bytes = [&](uint32_t t) { return uint64_t(t) * (xt / 32 * 2 + xt / 128) * 16; };
  const auto ds_bytes = [&](uint32_t t) { return uint64_t(t) * xt / 32 * 8; };
  const uint64_t smem_limit = caps_.workgroup_storage;
  uint32_t tt = batched_token_tile(n_tokens, batched_tt(n_tokens));
  while (tt > 1 && x_tile_bytes(tt) + ds_bytes(tt) > smem_limit) tt /= 2;
  // ROPE: a row group holds whole RoPE pairs (2 or 4 rows)
  const uint32_t tr = kBatchedRowsPerGroup;
  const auto smem = [&](uint32_t groups, uint32_t wg_size) {
    return std::max(x_tile_bytes(tt * groups), batched_sum_bytes(wg_size, tt)) + ds_bytes(tt * groups);
  };
  // One token group per workgroup (linear_batched_q8.wgsl's TG).
  const uint32_t tg = 1;
  const uint64_t tiles = ceil_div(uint64_t(n_tokens), tt);
  const uint32_t wgr = batched_wg(tiles, rows, tr);
  const uint32_t wg = wgr;
  const uint64_t shared = smem(tg, wg);
  need(shared <= smem_limit, op,
       std::to_string(shared) + " bytes of workgroup memory, the adapter allows " + std::to_string(smem_limit));
  const uint32_t bn = wgr / kl * tr;
  const uint64_t row_tiles = ceil_div(uint64_t(rows), bn);
  need(row_tiles <= ctx_.limits().max_compute_workgroups_per_dimension, op, "too many rows");
  const bool q4 = w.type == TensorType::Q4_0;
  // Each lane loads its next weight block before it multiplies the current one (PF).
  const uint32_t un = 1;
  const bool pf = true, i2f = false;
  std::string prelude = "const TT: u32 = " + std::to_string(tt) + "u;\nconst TG: u32 = " + std::to_string(tg) +
                        "u;\nconst WG: u32 = " + std::to_string(wg) + "u;\nconst KL: u32 = " + std::to_string(kl) +
                        "u;\nconst TR: u32 = " + std::to_string(tr) + "u;\nconst XT: u32 = " + std::to_string(xt) +
                        "u;\nconst Q4: bool = " + (q4 ? "true" : "false") +
                        ";\nconst PF: bool = " + (pf ? "true" : "false") + ";\nconst UN: u32 = " + std::to_string(un) +
                        "u;\nconst I2F: bool = " + (i2f ? "true" : "false") +
                        ";\nconst ROPE: bool = " + (rope ? "true" : "false") +
                        ";\nconst P_BINDING: u32 = " + (rope ? "10" : "6") + "u;\n";
  Kernel k = kernel("llm/batched_q8/" + str(w.type) + "/" + shape_tag({tt, tg, wg, kl, tr, xt}) + (pf ? "/pf" : "") +
                        (un > 1 ? "/u" + std::to_string(un) : "") + (i2f ? "/i2f" : "") + (rope ? "/rope" : ""),
                    {"llm/common.wgsl", rope ? "llm/linear_batched_rope.wgsl" : "llm/linear_batched_norope.wgsl",
                     "llm/linear_batched_q8.wgsl"},
                    {}, false, "main", prelude);
  b.dispatch(k, std::move(args), prm, {u32(tiles), u32(row_tiles), 1});
}

void LlmOps::linear_batched_q8_mv(Batch& b, const GpuWeight& w, int n_tokens, int64_t rows, bool rope,
                                  std::vector<Arg> args, const Params& prm) const {
  const std::string op = "linear batched-q8 " + str(w.type) + " (batched_mv_n)";
  const uint32_t kl = tuning.batched_kl, sl = tuning.batched_mv_sl, tr_want = kBatchedMvRows;
  uint32_t un = kBatchedMvUnroll;
  need(sl >= 1 && sl <= 32 && (sl & (sl - 1)) == 0 && kl * sl <= max_wg_, op,
       "batched_mv_sl " + std::to_string(sl) + " (a power of two, batched_kl x it at most " + std::to_string(max_wg_) +
           ")");
  const uint32_t tr = rope ? std::max(2u, tr_want) : tr_want;  // ROPE: whole pairs per row group
  const uint32_t tt = batched_token_tile(n_tokens, 8);
  const uint32_t rgt = kl * sl;
  un = std::min<uint32_t>(un, u32(ceil_div(uint64_t(w.cols / 32), rgt)));  // no more than a row's blocks
  un = std::max(un, 1u);
  // Workgroup memory per row group: the d and the terms of each token of every row and chunk block.
  const uint64_t smem_limit = caps_.workgroup_storage;
  const auto group_bytes = [&](uint32_t u) { return uint64_t(1 + tt) * tr * rgt * u * 4; };
  while (un > 1 && group_bytes(un) > smem_limit) --un;
  need(group_bytes(un) <= smem_limit, op,
       std::to_string(group_bytes(un)) + " bytes of workgroup memory for a row group, the adapter allows " +
           std::to_string(smem_limit));
  uint32_t wg = std::min(std::max(kBatchedMvWg, rgt), max_wg_) / rgt * rgt;
  while (wg > rgt && wg / rgt * group_bytes(un) > smem_limit) wg -= rgt;
  const uint64_t groups = ceil_div(uint64_t(rows), uint64_t(wg / rgt) * tr);
  need(groups <= ctx_.limits().max_compute_workgroups_per_dimension, op, "too many rows");
  const bool q4 = w.type == TensorType::Q4_0, i2f = false;
  std::string prelude = "const TT: u32 = " + std::to_string(tt) + "u;\nconst KL: u32 = " + std::to_string(kl) +
                        "u;\nconst SL: u32 = " + std::to_string(sl) + "u;\nconst UN: u32 = " + std::to_string(un) +
                        "u;\nconst WG: u32 = " + std::to_string(wg) + "u;\nconst TR: u32 = " + std::to_string(tr) +
                        "u;\nconst Q4: bool = " + (q4 ? "true" : "false") +
                        ";\nconst I2F: bool = " + (i2f ? "true" : "false") +
                        ";\nconst ROPE: bool = " + (rope ? "true" : "false") +
                        ";\nconst P_BINDING: u32 = " + (rope ? "10" : "6") + "u;\n";
  Kernel k = kernel("llm/batched_q8_mv/" + str(w.type) + "/" + shape_tag({tt, kl, sl, un, wg, tr}) +
                        (i2f ? "/i2f" : "") + (rope ? "/rope" : ""),
                    {"llm/common.wgsl", rope ? "llm/linear_batched_rope.wgsl" : "llm/linear_batched_norope.wgsl",
                     "llm/linear_batched_q8_mv.wgsl"},
                    {}, false, "main", prelude);
  b.dispatch(k, std::move(args), prm, {u32(groups), 1, 1});
}

// ---- elementwise ---------------------------------------------------------------------------

void LlmOps::swiglu(Batch& b, const Tensor& gate, int64_t g_stride, int64_t g_off, const Tensor& up, int64_t u_stride,
                    int64_t u_off, const Tensor& out, int n_tokens, int n, int64_t out_stride) const {
  const std::string op = "swiglu";
  if (out_stride < 0) out_stride = n;
  need(n_tokens > 0 && n > 0, op, "empty");
  need_elems(gate, (n_tokens - 1) * g_stride + g_off + n, op, "gate");
  need_elems(up, (n_tokens - 1) * u_stride + u_off + n, op, "up");
  need_elems(out, (n_tokens - 1) * out_stride + n, op, "out");
  Kernel k = kernel("llm/swiglu", {"llm/common.wgsl", "llm/swiglu.wgsl"}, {}, false);
  b.dispatch(k, {gate, up, out},
             Params(u32(n_tokens), u32(n), u32(g_stride), u32(g_off), u32(u_stride), u32(u_off), u32(out_stride)),
             groups_1d(ctx_, ceil_div(uint64_t(n_tokens) * uint64_t(n), 256)));
}

void LlmOps::add(Batch& b, const Tensor& x, const Tensor& y, int64_t n) const {
  need_elems(x, n, "add", "x");
  need_elems(y, n, "add", "y");
  Kernel k = kernel("llm/axpby", {"llm/common.wgsl", "llm/axpby.wgsl"}, {}, false);
  b.dispatch(k, {x, y}, Params(u32(n), 1.f, 1.f), groups_1d(ctx_, ceil_div(uint64_t(n), 256)));
}

void LlmOps::scale(Batch& b, const Tensor& y, int64_t n, float s) const {
  need_elems(y, n, "scale", "y");
  Kernel k = kernel("llm/axpby", {"llm/common.wgsl", "llm/axpby.wgsl"}, {}, false);
  b.dispatch(k, {dummy_, y}, Params(u32(n), s, 0.f), groups_1d(ctx_, ceil_div(uint64_t(n), 256)));
}

// ---- KV cache and attention ----------------------------------------------------------------

void LlmOps::kv_append(Batch& b, const KvLayer& c, const Tensor& k_src, int64_t k_off, const Tensor& v_src,
                       int64_t v_off, int64_t src_stride, int pos0, int n_tokens) const {
  const std::string op = "kv_append";
  const int64_t row = int64_t(c.n_kv_heads) * c.head_dim;
  need(n_tokens > 0 && pos0 >= 0 && pos0 + n_tokens <= c.max_ctx, op,
       "positions " + std::to_string(pos0) + "+" + std::to_string(n_tokens) + " past max_ctx " +
           std::to_string(c.max_ctx));
  need_elems(k_src, (n_tokens - 1) * src_stride + k_off + row, op, "k_src");
  need_elems(v_src, (n_tokens - 1) * src_stride + v_off + row, op, "v_src");
  need_elems(c.k, c.offset + row * c.max_ctx, op, "k cache");
  need_elems(c.v, c.offset + row * c.max_ctx, op, "v cache");
  Kernel k = kernel("llm/kv_append", {"llm/common.wgsl", "llm/kv_append.wgsl"}, {}, false);
  b.dispatch(k, {k_src, v_src, c.k, c.v},
             Params(u32(n_tokens), u32(c.n_kv_heads), u32(c.head_dim), u32(c.max_ctx), u32(pos0), u32(src_stride),
                    u32(k_off), u32(v_off), c.offset),
             groups_1d(ctx_, ceil_div(uint64_t(n_tokens) * uint64_t(row), 256)));
}

void LlmOps::rope_kv_append(Batch& b, const Tensor& qkv, const RopeTable& table, const KvLayer& c,
                            const RopeKvArgs& a) const {
  const std::string op = "rope_kv_append";
  const int hd = c.head_dim;
  need(a.n_tokens > 0 && a.n_heads > 0 && c.n_kv_heads > 0, op, "empty");
  need(hd > 0 && hd % 2 == 0 && table.head_dim == hd, op,
       "the rope table's head_dim " + std::to_string(table.head_dim) + " is not the cache's " + std::to_string(hd));
  const int64_t q_len = int64_t(a.n_heads) * hd, kv_len = int64_t(c.n_kv_heads) * hd;
  const int64_t q_off = a.q_offset;
  const int64_t k_off = a.k_offset < 0 ? q_off + q_len : a.k_offset;
  const int64_t v_off = a.v_offset < 0 ? k_off + kv_len : a.v_offset;
  const int64_t stride = a.stride < 0 ? q_len + 2 * kv_len : a.stride;
  need(q_off >= 0 && q_off + q_len <= stride && k_off + kv_len <= stride && v_off + kv_len <= stride, op,
       "q/k/v heads past the stride " + std::to_string(stride));
  auto apart = [&](int64_t o) { return o + kv_len <= q_off || o >= q_off + q_len; };
  need(apart(k_off) && apart(v_off), op, "the query heads overlap the key or value heads");
  need(a.cache_rows || (a.pos0 >= 0 && a.pos0 + a.n_tokens <= c.max_ctx), op,
       "positions " + std::to_string(a.pos0) + "+" + std::to_string(a.n_tokens) + " past max_ctx " +
           std::to_string(c.max_ctx));
  need(!a.cache_rows || a.positions, op, "cache rows come with the positions buffer");
  if (a.positions) {
    need_elems(a.positions, int64_t(a.n_tokens) * (a.cache_rows ? 2 : 1), op, "positions");
  } else {
    need(a.pos0 + a.n_tokens <= table.max_pos, op,
         "positions " + std::to_string(a.pos0) + ".." + std::to_string(a.pos0 + a.n_tokens - 1) + " past the table's " +
             std::to_string(table.max_pos));
  }
  need_elems(qkv, (a.n_tokens - 1) * stride + std::max({q_off + q_len, k_off + kv_len, v_off + kv_len}), op, "qkv");
  need_elems(c.k, c.offset + kv_len * c.max_ctx, op, "k cache");
  need_elems(c.v, c.offset + kv_len * c.max_ctx, op, "v cache");
  Kernel k = kernel("llm/rope_kv_append", {"llm/common.wgsl", "llm/rope_kv_append.wgsl"}, {}, false);
  uint64_t work = uint64_t(a.n_tokens) * uint64_t(a.n_heads + 2 * c.n_kv_heads) * uint64_t(hd / 2);
  b.dispatch(k, {qkv, table.cos_sin, a.positions ? a.positions : table.cos_sin, c.k, c.v},
             Params(u32(a.n_tokens), u32(a.n_heads), u32(c.n_kv_heads), u32(hd), u32(stride), u32(q_off), u32(k_off),
                    u32(v_off), u32(a.pos0), detail::rope_flags(a), u32(table.max_pos), u32(c.max_ctx), c.offset),
             groups_1d(ctx_, ceil_div(work, 256)));
}

namespace {
constexpr uint32_t kPagedPrefillBq = 16;  // paged_attn.wgsl: query rows per workgroup for prefill chunks
// flash_decode.wgsl (decode attention without subgroups): keys per block, halved until the block
// fits the adapter's workgroup memory.
constexpr uint32_t kDecodeBlockKeys = 32;
constexpr uint32_t kPagedBk = 16;  // paged_attn.wgsl: BK, keys per block
struct AttnShape {
  uint32_t tpq, bk;
};
AttnShape attn_shape(int hd) {
  uint32_t hd4 = uint32_t(hd) / 4, tpq = 0;
  for (uint32_t t : {8u, 4u, 16u, 2u, 1u, 32u})
    if (hd4 % t == 0 && hd4 / t <= 4) {
      tpq = t;
      break;
    }
  if (!tpq)
    for (uint32_t t = 1; t <= hd4; ++t)
      if (hd4 % t == 0 && hd4 / t <= 4) {
        tpq = t;
        break;
      }
  return {tpq, tpq * ((16 + tpq - 1) / tpq)};
}
}  // namespace

Kernel LlmOps::attn_kernel(int hd, int bq) const {
  auto s = attn_shape(hd);
  return kernel("llm/flash_attn/hd" + std::to_string(hd) + "/bq" + std::to_string(bq),
                {"llm/common.wgsl", "llm/flash_attn.wgsl"}, {{"HD", hd}, {"TPQ", s.tpq}, {"BQ", bq}, {"BK", s.bk}},
                false);
}

Kernel LlmOps::attn_tiled_pf_kernel(int hd) const {
  // flash_attn_tiled_pf.wgsl: 64 rows x 64 keys per workgroup of 256 invocations, 4 x 4 scores
  // each, 32 KiB; up to 4 output vec4s per row and invocation, V chunks of at most 4 vec4s each.
  if (hd % 4 != 0 || hd > 256 || caps_.workgroup_storage < 32768 || max_wg_ < 256) return {};
  // A row's 16 invocations in one subgroup where the adapter has them (of a power-of-two size;
  // session 8: 11% off the kernel), else through workgroup memory. Scores by exp2 (EXP2: 6%) and
  // each staged chunk loaded into registers while the previous one is computed (PF).
  const uint32_t hd4 = uint32_t(hd) / 4, no = (hd4 + 15) / 16, e2 = 1;
  const bool sg = subgroups_ && (sg_size_ & (sg_size_ - 1)) == 0;
  uint32_t vk = 64;
  while (vk > 1 && vk * hd4 > 1024) vk /= 2;
  const uint32_t pf = 1;
  std::vector<std::pair<std::string, double>> c{{"HD", hd}, {"NO", no}, {"VK", vk}, {"EXP2", e2}, {"PF", pf}};
  if (sg) c.push_back({"SGS", sg_size_});
  return kernel(
      "llm/flash_attn_tiled_pf/hd" + std::to_string(hd) + (e2 ? "/exp2" : "") + (sg ? "/sg" : "") + (pf ? "" : "/nopf"),
      {"llm/flash_attn_tiled_pf.wgsl", sg ? "llm/flash_attn_pf_rows_sg.wgsl" : "llm/flash_attn_pf_rows_wm.wgsl"},
      std::move(c), sg);
}

LlmOps::DecodeShape LlmOps::decode_shape(int hd, int G) const {
  // flash_decode.wgsl: G <= 8 heads and NJ <= 2 V vec4s per invocation in registers, G * BK
  // scores over at most 4 per invocation, the key groups' sums fitting the K/V rows' memory.
  const uint32_t hd4 = uint32_t(hd) / 4, g = uint32_t(G), nj = ceil_div(hd4, 32);
  const uint32_t limit = caps_.workgroup_storage;
  const uint32_t wg = std::clamp<uint32_t>(tuning.attn_dec_wg, 32, max_wg_) / 32 * 32, kq = wg / 32;
  auto bytes = [&](uint32_t k) { return (g * hd4 + k * (2 * hd4 + 1)) * 16 + (g * k + g) * 4; };
  uint32_t bk = kDecodeBlockKeys;
  while (bk > 1 && bytes(bk) > limit) bk /= 2;
  const bool fits =
      g <= 8 && nj <= 2 && g * bk <= 4 * wg && kq <= bk && kq * g * hd4 <= bk * (2 * hd4 + 1) && bytes(bk) <= limit;
  if (!fits) return {0, 0, 0};
  return {wg, bk, nj};
}

LlmOps::DecodeSgShape LlmOps::decode_sg_shape(int hd, int G) const {
  // flash_decode_sg.wgsl: key groups of tpk lanes inside one subgroup; per lane G * NV query and
  // output vec4s and 2 * u * NV (4 * with the prefetch) K/V vec4s in registers; the subgroups'
  // sums (padded to NV * tpk vec4s per head) and (m, l) in workgroup memory.
  if (!subgroups_ || tuning.attn_dec_tpk == 0 || (tuning.attn_dec_tpk & (tuning.attn_dec_tpk - 1)) != 0)
    return {0, 0, 0, false};
  const uint32_t hd4 = uint32_t(hd) / 4, g = uint32_t(G), sgs = sg_size_;
  const uint32_t tpk = std::min(tuning.attn_dec_tpk, sgs), nv = ceil_div(hd4, tpk);
  const uint32_t u = std::clamp<uint32_t>(tuning.attn_dec_u, 1, 8);
  const bool pf = true;  // the next step's keys loaded while this one is computed
  if (g * nv > 32 || u * nv * (pf ? 4 : 2) > 64) return {0, 0, 0, false};
  const uint32_t limit = caps_.workgroup_storage;
  auto bytes = [&](uint32_t wg) { return (wg / sgs) * g * (nv * tpk * 16 + 8); };
  uint32_t wg = std::clamp<uint32_t>(tuning.attn_dec_wg, sgs, max_wg_) / sgs * sgs;
  while (wg > sgs && bytes(wg) > limit) wg = std::max(sgs, wg / 2 / sgs * sgs);
  if (wg < sgs || bytes(wg) > limit) return {0, 0, 0, false};
  return {wg, tpk, u, pf};
}

namespace {
struct AttnDims {
  int hd, G;
  int64_t qs, os;
  float scale;
};
// out: null when the op writes partials only (attention_decode_q8).
AttnDims attn_check(const KvLayer& c, const Tensor& q, const Tensor* out, const AttentionArgs& a,
                    const std::string& op) {
  AttnDims d;
  d.hd = c.head_dim;
  need(d.hd > 0 && d.hd % 4 == 0, op, "head_dim must be a multiple of 4, not " + std::to_string(d.hd));
  need(a.n_heads > 0 && c.n_kv_heads > 0 && a.n_heads % c.n_kv_heads == 0, op,
       "n_heads " + std::to_string(a.n_heads) + " is not a multiple of n_kv_heads " + std::to_string(c.n_kv_heads));
  need(a.n_tokens > 0 && a.start >= 0 && a.start + a.n_tokens <= c.max_ctx, op,
       "positions past max_ctx " + std::to_string(c.max_ctx));
  d.G = a.n_heads / c.n_kv_heads;
  d.qs = a.q_stride < 0 ? int64_t(a.n_heads) * d.hd : a.q_stride;
  d.os = a.o_stride < 0 ? int64_t(a.n_heads) * d.hd : a.o_stride;
  need(d.qs % 4 == 0 && a.q_offset % 4 == 0 && c.offset % 4 == 0, op,
       "q stride/offset and cache offset must be multiples of 4");
  need_elems(q, (a.n_tokens - 1) * d.qs + a.q_offset + int64_t(a.n_heads) * d.hd, op, "q");
  if (out) need_elems(*out, (a.n_tokens - 1) * d.os + a.o_offset + int64_t(a.n_heads) * d.hd, op, "out");
  need_elems(c.k, c.offset + int64_t(c.n_kv_heads) * c.max_ctx * d.hd, op, "k cache");
  need_elems(c.v, c.offset + int64_t(c.n_kv_heads) * c.max_ctx * d.hd, op, "v cache");
  d.scale = a.scale != 0 ? a.scale : float(1.0 / std::sqrt(double(d.hd)));
  return d;
}
}  // namespace

void LlmOps::attention(Batch& b, const KvLayer& c, const Tensor& q, const Tensor& out, const AttentionArgs& a) const {
  if (a.n_tokens == 1)
    attention_decode(b, c, q, out, a);
  else
    attention_prefill(b, c, q, out, a);
}

void LlmOps::attention_prefill(Batch& b, const KvLayer& c, const Tensor& q, const Tensor& out,
                               const AttentionArgs& a) const {
  auto d = attn_check(c, q, &out, a, "attention_prefill");
  // flash_attn_tiled_pf.wgsl where it runs, else flash_attn.wgsl.
  if (Kernel k = attn_tiled_pf_kernel(d.hd)) {
    const uint32_t kv_len = u32(a.start + a.n_tokens);
    const Groups g{ceil_div(uint64_t(a.n_tokens) * uint64_t(d.G), 64), u32(c.n_kv_heads), 1};
    b.dispatch(k, {q, Arg(c.k), Arg(c.v), out},
               Params(u32(a.n_tokens), u32(a.n_heads), u32(c.n_kv_heads), u32(c.max_ctx), u32(a.start), u32(d.qs),
                      u32(a.q_offset), u32(d.os), u32(a.o_offset), c.offset, d.scale, kv_len, 1u, 0u, 0u),
               g);
    return;
  }
  const uint32_t bq = 16;
  Kernel k = attn_kernel(d.hd, bq);
  uint32_t total = u32(a.start + a.n_tokens);
  b.dispatch(k, {q, Arg(c.k), Arg(c.v), out, dummy_},
             Params(u32(a.n_tokens), u32(a.n_heads), u32(c.n_kv_heads), u32(c.max_ctx), u32(a.start), u32(d.qs),
                    u32(a.q_offset), u32(d.os), u32(a.o_offset), c.offset, d.scale, total, 1u, 0u, 0u),
             {ceil_div(uint64_t(a.n_tokens) * uint64_t(d.G), bq), u32(c.n_kv_heads), 1});
}

uint32_t LlmOps::attention_decode_pass(Batch& b, const KvLayer& c, const Tensor& q, const Tensor* out,
                                       const AttentionArgs& a, Tensor& part) const {
  const std::string op = "attention_decode";
  auto d = attn_check(c, q, out, a, op);
  need(a.n_tokens == 1, op, "one token at a time");
  // flash_decode_sg.wgsl where it runs (subgroups, its schedule fits), else flash_decode.wgsl
  // (where its schedule fits), else flash_attn.wgsl with one row per query head of the kv head.
  const DecodeSgShape sgs = decode_sg_shape(d.hd, d.G);
  const DecodeShape ds = !sgs.wg ? decode_shape(d.hd, d.G) : DecodeShape{0, 0, 0};
  Kernel k;
  uint32_t bk = 0, bq = 1;
  if (sgs.wg) {
    const auto cu = prelude_u32;
    const std::string prelude = cu("HD", u32(d.hd)) + cu("G", u32(d.G)) + cu("TPK", sgs.tpk) + cu("U", sgs.u) +
                                cu("WG", sgs.wg) + cu("SGS", sg_size_) + prelude_bool("PF", sgs.pf);
    k = kernel("llm/flash_decode_sg/hd" + std::to_string(d.hd) + "/g" + std::to_string(d.G) + "/wg" +
                   std::to_string(sgs.wg) + "/tpk" + std::to_string(sgs.tpk) + "/u" + std::to_string(sgs.u) +
                   (sgs.pf ? "/pf" : ""),
               {"llm/flash_decode_sg.wgsl"}, {}, true, "main", prelude);
    bk = sgs.wg / sgs.tpk * sgs.u;
  } else if (ds.wg) {
    k = kernel("llm/flash_decode/hd" + std::to_string(d.hd) + "/g" + std::to_string(d.G) + "/wg" +
                   std::to_string(ds.wg) + "/bk" + std::to_string(ds.bk),
               {"llm/flash_decode.wgsl"}, {{"HD", d.hd}, {"G", d.G}, {"WG", ds.wg}, {"BK", ds.bk}, {"NJ", ds.nj}},
               false);
    bk = ds.bk;
  } else {
    while (bq < uint32_t(d.G)) bq *= 2;
    auto s = attn_shape(d.hd);
    need(bq * s.tpq <= max_wg_, op, "GQA group too large");
    k = attn_kernel(d.hd, int(bq));
    bk = s.bk;
  }
  const bool dyn = bool(a.start_from);
  if (dyn) need_elems(a.start_from, 1, op, "start_from");
  // Splits: a.splits, else tuning.attn_dec_wgs workgroups' worth over the KV heads; with a
  // fixed position, no more than the keys fill (blocks of BK), with a position read on the GPU,
  // as many as the whole cache would fill.
  const uint32_t kv_len = dyn ? u32(c.max_ctx) : u32(a.start + 1);
  uint32_t splits = a.splits > 0 ? u32(a.splits) : decode_splits(c.n_kv_heads);
  const uint32_t split_len = split_keys(kv_len, splits, bk);
  if (!dyn || a.splits <= 0) splits = ceil_div(kv_len, split_len);
  need(splits <= kMaxDecodeSplits, op,
       std::to_string(splits) + " splits (at most " + std::to_string(kMaxDecodeSplits) + ")");
  Groups g = sgs.wg || ds.wg ? Groups{splits, u32(c.n_kv_heads), 1}
                             : Groups{ceil_div(uint64_t(d.G), bq), u32(c.n_kv_heads), splits};
  const Tensor& pos = dyn ? a.start_from : dummy_;
  const uint32_t flag_dyn = dyn ? 1u : 0u;
  if (splits == 1 && out && !dyn) {
    b.dispatch(k, {q, Arg(c.k), Arg(c.v), *out, pos},
               Params(1u, u32(a.n_heads), u32(c.n_kv_heads), u32(c.max_ctx), u32(a.start), u32(d.qs), u32(a.q_offset),
                      u32(d.os), u32(a.o_offset), c.offset, d.scale, split_len, 1u, 0u, flag_dyn),
               g);
    return 1;
  }
  part = make_tensor(ctx_, {int64_t(a.n_heads) * splits * (d.hd + 2)});
  b.dispatch(k, {q, Arg(c.k), Arg(c.v), part, pos},
             Params(1u, u32(a.n_heads), u32(c.n_kv_heads), u32(c.max_ctx), u32(a.start), u32(d.qs), u32(a.q_offset), 0u,
                    0u, c.offset, d.scale, split_len, splits, 1u, flag_dyn),
             g);
  return splits;
}

void LlmOps::attention_decode(Batch& b, const KvLayer& c, const Tensor& q, const Tensor& out,
                              const AttentionArgs& a) const {
  Tensor part;
  const uint32_t splits = attention_decode_pass(b, c, q, &out, a, part);
  if (!part) return;
  const int hd = c.head_dim;
  combine_partials(b, part, out, 1, a.n_heads, splits, hd, a.o_stride < 0 ? int64_t(a.n_heads) * hd : a.o_stride,
                   a.o_offset);
}

DecodePartials LlmOps::attention_decode_partials(Batch& b, const KvLayer& c, const Tensor& q,
                                                 const AttentionArgs& a) const {
  DecodePartials p;
  p.splits = attention_decode_pass(b, c, q, nullptr, a, p.part);
  p.n_heads = a.n_heads;
  p.head_dim = c.head_dim;
  return p;
}

void LlmOps::attention_combine(Batch& b, const DecodePartials& p, const Tensor& out, int64_t o_offset) const {
  const std::string op = "attention_combine";
  need(p.part && p.splits > 0 && p.n_heads > 0 && p.head_dim > 0, op, "no partials");
  need_elems(p.part, int64_t(p.n_heads) * p.splits * (p.head_dim + 2), op, "partials");
  need_elems(out, o_offset + int64_t(p.n_heads) * p.head_dim, op, "out");
  combine_partials(b, p.part, out, 1, p.n_heads, p.splits, p.head_dim, int64_t(p.n_heads) * p.head_dim, o_offset);
}

bool LlmOps::combine_prefix(const DecodePartials& p) const {
  return tuning.matvec_combine >= 2 && p.splits >= kCombinePrefixSplits;
}

bool LlmOps::fuses_combine(TensorType t, const DecodePartials& p) const {
  if (!tuning.matvec_combine || !p.part || p.head_dim <= 0 || p.head_dim % 4 != 0) return false;
  if (!float_weights(t)) return false;
  // The whole of x staged (column ranges, where the matvec splits, take less).
  return stages_x(t, int64_t(p.n_heads) * p.head_dim, combine_bytes(p));
}

void LlmOps::combine_linear(Batch& b, const DecodePartials& p, const GpuWeight& w, const Tensor& y,
                            const LinearOptions& o) const {
  const std::string op = "combine_linear " + str(w.type);
  need(!o.bias && o.x_stride < 0, op, "takes no bias and no x stride");
  need(p.part && p.n_heads > 0 && p.head_dim > 0, op, "no partials");
  need(w.cols == int64_t(p.n_heads) * p.head_dim, op,
       "a weight of " + std::to_string(w.cols) + " columns for " + std::to_string(p.n_heads) + " heads of " +
           std::to_string(p.head_dim));
  need(fuses_combine(w.type, p), op, "cannot fold the combine here (matvec_combine, matvec_xs 2, workgroup memory)");
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

void LlmOps::combine_partials(Batch& b, const Tensor& part, const Tensor& out, int n_tokens, int n_heads,
                              uint32_t splits, int hd, int64_t o_stride, int64_t o_offset) const {
  // kCombineSp invocations per element, halved until the workgroup (a head) fits.
  uint32_t sp = kCombineSp;
  while (sp > 1 && uint64_t(hd) * sp > max_wg_) sp /= 2;
  need(uint32_t(hd) <= max_wg_, "attention", "head_dim " + std::to_string(hd) + " (a workgroup per head)");
  Kernel kc = kernel("llm/attn_combine/" + std::to_string(hd) + "x" + std::to_string(sp),
                     {"llm/common.wgsl", "llm/attn_combine.wgsl"}, {{"HD", hd}, {"SP", sp}}, false);
  b.dispatch(kc, {part, out}, Params(u32(n_tokens), u32(n_heads), splits, u32(hd), u32(o_stride), u32(o_offset)),
             groups_1d(ctx_, uint64_t(n_tokens) * uint64_t(n_heads)));
}

// ---- paged attention (serving) -------------------------------------------------------------

PagedAttentionPlan LlmOps::plan_paged_attention(const std::vector<PagedSequence>& seqs, const PagedAttentionArgs& a,
                                                int n_blocks) const {
  const std::string op = "paged_attention";
  need(!seqs.empty(), op, "no sequences");
  need(a.head_dim > 0 && a.head_dim % 4 == 0, op, "head_dim must be a multiple of 4");
  need(a.n_heads > 0 && a.n_kv_heads > 0 && a.n_heads % a.n_kv_heads == 0, op,
       "n_heads " + std::to_string(a.n_heads) + " is not a multiple of n_kv_heads " + std::to_string(a.n_kv_heads));
  need(a.block > 0, op, "block must be positive");
  need(a.split_len >= 16 && a.split_len % 16 == 0, op,
       "split_len " + std::to_string(a.split_len) + " is not a positive multiple of 16");
  PagedAttentionPlan pl;
  pl.args = a;
  pl.n_seqs = int(seqs.size());
  const uint32_t G = u32(a.n_heads / a.n_kv_heads);
  while (pl.decode_bq < G) pl.decode_bq *= 2;
  std::vector<uint32_t> tables, sq, dec_items, pre_items, pos;
  int tok = 0, max_pos = 0;
  for (size_t s = 0; s < seqs.size(); ++s) {
    const auto& q = seqs[s];
    need(q.tok0 == tok && q.n_tokens > 0 && q.pos0 >= 0, op,
         "sequence " + std::to_string(s) + ": tokens must follow each other (tok0 " + std::to_string(q.tok0) +
             ", expected " + std::to_string(tok) + ")");
    const int64_t need_blocks = (int64_t(q.pos0) + q.n_tokens + a.block - 1) / a.block;
    need(int64_t(q.blocks.size()) >= need_blocks, op,
         "sequence " + std::to_string(s) + ": " + std::to_string(q.blocks.size()) + " blocks for " +
             std::to_string(q.pos0 + q.n_tokens) + " positions");
    sq.insert(sq.end(), {u32(tok), u32(q.n_tokens), u32(q.pos0), u32(tables.size())});
    for (int64_t i = 0; i < need_blocks; ++i) {
      const int32_t blk = q.blocks[size_t(i)];
      need(blk >= 0 && blk < n_blocks, op,
           "sequence " + std::to_string(s) + ": block " + std::to_string(blk) + " outside the pool of " +
               std::to_string(n_blocks));
      tables.push_back(u32(blk));
    }
    const uint32_t rows = u32(q.n_tokens) * G;
    if (q.n_tokens == 1) {
      dec_items.insert(dec_items.end(), {u32(s), 0u});
    } else {
      for (uint32_t r = 0; r < rows; r += kPagedPrefillBq) pre_items.insert(pre_items.end(), {u32(s), r});
    }
    tok += q.n_tokens;
    max_pos = std::max(max_pos, q.pos0 + q.n_tokens - 1);
  }
  pl.n_tokens = tok;
  pos.resize(size_t(2 * tok));
  for (const auto& q : seqs)
    for (int t = 0; t < q.n_tokens; ++t) {
      const int p = q.pos0 + t;
      pos[size_t(q.tok0 + t)] = u32(p);
      pos[size_t(tok + q.tok0 + t)] = u32(q.blocks[size_t(p / a.block)]) * u32(a.block) + u32(p % a.block);
    }
  pl.decode_items = u32(dec_items.size() / 2);
  pl.prefill_items = u32(pre_items.size() / 2);
  dec_items.insert(dec_items.end(), pre_items.begin(), pre_items.end());
  pl.n_splits = u32(max_pos / a.split_len + 1);
  auto up = [&](const std::vector<uint32_t>& v) {
    return make_tensor(ctx_, {int64_t(v.size())}, DType::U32, std::as_bytes(std::span(v)));
  };
  pl.tables = up(tables);
  pl.seqs = up(sq);
  pl.items = up(dec_items);
  pl.positions = up(pos);
  pl.partials = make_tensor(ctx_, {int64_t(tok) * a.n_heads * pl.n_splits * (a.head_dim + 2)});
  return pl;
}

void LlmOps::paged_attention(Batch& b, const KvLayer& c, const Tensor& q, const Tensor& out,
                             const PagedAttentionPlan& pl) const {
  const std::string op = "paged_attention";
  const PagedAttentionArgs& a = pl.args;
  const int hd = a.head_dim;
  const int64_t os = a.o_stride < 0 ? int64_t(a.n_heads) * hd : a.o_stride;
  need_elems(out, (pl.n_tokens - 1) * os + a.o_offset + int64_t(a.n_heads) * hd, op, "out");
  paged_attention_partials(b, c, q, pl, op);
  Kernel kc = kernel("llm/paged_attn_combine", {"llm/common.wgsl", "llm/paged_attn_combine.wgsl"}, {}, false);
  b.dispatch(kc, {pl.partials, pl.positions, out},
             Params(u32(pl.n_tokens), u32(a.n_heads), pl.n_splits, u32(hd), u32(os), u32(a.o_offset), u32(a.split_len)),
             groups_1d(ctx_, ceil_div(uint64_t(pl.n_tokens) * uint64_t(a.n_heads) * uint64_t(hd), 128)));
}

void LlmOps::paged_attention_q8(Batch& b, const KvLayer& c, const Tensor& q, const Q8Act& out,
                                const PagedAttentionPlan& pl) const {
  const std::string op = "paged_attention_q8";
  const PagedAttentionArgs& a = pl.args;
  const int hd = a.head_dim;
  need(paged_attention_q8_takes(hd), op,
       "head_dim " + std::to_string(hd) + " (a multiple of 32, at most " + std::to_string(max_wg_) + ")");
  need(out.cols == int64_t(a.n_heads) * hd, op,
       "out has " + std::to_string(out.cols) + " columns for " + std::to_string(a.n_heads) + " heads");
  need(a.o_stride < 0 && a.o_offset == 0, op, "the output's heads back to back (no o_stride or o_offset)");
  need_q8(out, pl.n_tokens, op, "out");
  paged_attention_partials(b, c, q, pl, op);
  Kernel kc = kernel("llm/paged_attn_combine_q8/" + std::to_string(hd),
                     {"llm/common.wgsl", "llm/paged_attn_combine_q8.wgsl"}, {{"HD", hd}}, false);
  b.dispatch(kc, {pl.partials, pl.positions, out.qs, out.ds},
             Params(u32(pl.n_tokens), u32(a.n_heads), pl.n_splits, u32(hd), u32(a.split_len)),
             groups_1d(ctx_, uint64_t(pl.n_tokens) * uint64_t(a.n_heads)));
}

bool LlmOps::paged_attention_q8_takes(int head_dim) const {
  return head_dim > 0 && head_dim % 32 == 0 && uint32_t(head_dim) <= max_wg_;
}

void LlmOps::paged_attention_partials(Batch& b, const KvLayer& c, const Tensor& q, const PagedAttentionPlan& pl,
                                      const std::string& op) const {
  const PagedAttentionArgs& a = pl.args;
  need(c.head_dim == a.head_dim && c.n_kv_heads == a.n_kv_heads && c.offset == 0, op,
       "the cache's heads do not match the plan's");
  need(c.max_ctx % a.block == 0, op, "the cache's rows are not whole blocks");
  const int hd = a.head_dim;
  const int64_t qs = a.q_stride < 0 ? int64_t(a.n_heads) * hd : a.q_stride;
  need(qs % 4 == 0 && a.q_offset % 4 == 0, op, "q stride and offset must be multiples of 4");
  need_elems(q, (pl.n_tokens - 1) * qs + a.q_offset + int64_t(a.n_heads) * hd, op, "q");
  need_elems(c.k, int64_t(c.n_kv_heads) * c.max_ctx * hd, op, "k cache");
  need_elems(c.v, int64_t(c.n_kv_heads) * c.max_ctx * hd, op, "v cache");
  const float scale = a.scale != 0 ? a.scale : float(1.0 / std::sqrt(double(hd)));
  const auto s = attn_shape(hd);
  need(16 % s.tpq == 0, op,
       "head_dim " + std::to_string(hd) + " needs " + std::to_string(s.tpq) + " invocations per row");
  // Decode rows take more invocations per row (the most up to 32 that divide head_dim / 4 and fit
  // the workgroup): each output element and score is still computed by one invocation in the same
  // order, so results do not change (docs/serving.md: 8 per row without the prefetch one stream
  // 95 t/s against 173, the prefetch off 154).
  const uint32_t hd4 = uint32_t(hd) / 4;
  uint32_t dec_tpq = s.tpq;
  while (dec_tpq * 2 <= 32 && hd4 % (dec_tpq * 2) == 0 && pl.decode_bq * dec_tpq * 2 <= max_wg_) dec_tpq *= 2;
  // Decode rows load the next key block while they compute this one, where every invocation's
  // share of a block fits its 4 registers (head_dim <= rows x invocations).
  const bool dec_pf = uint64_t(kPagedBk) * hd4 <= 4ull * pl.decode_bq * dec_tpq;
  auto dispatch = [&](uint32_t bq, uint32_t tpq, bool pf, uint32_t item0, uint32_t n_items) {
    if (n_items == 0) return;
    need(bq * tpq <= max_wg_, op, "GQA group too large");
    const uint32_t kp = 1;  // key rows padded by a vec4 against bank conflicts (serving session 7: 0 lost 9%)
    Kernel k =
        kernel("llm/paged_attn/hd" + std::to_string(hd) + "/bq" + std::to_string(bq) + "/tpq" + std::to_string(tpq) +
                   (pf ? "/pf" : "") + (kp ? "/kp" : ""),
               {"llm/paged_attn.wgsl"}, {{"HD", hd}, {"TPQ", tpq}, {"BQ", bq}, {"PF", pf ? 1 : 0}, {"KP", kp}}, false);
    b.dispatch(k, {q, Arg(c.k), Arg(c.v), pl.tables, pl.seqs, pl.items, pl.partials},
               Params(u32(a.n_heads), u32(a.n_kv_heads), u32(c.max_ctx), u32(a.block), u32(qs), u32(a.q_offset), scale,
                      u32(a.split_len), pl.n_splits, item0),
               {n_items, u32(a.n_kv_heads), pl.n_splits});
  };
  dispatch(pl.decode_bq, dec_tpq, dec_pf, 0, pl.decode_items);
  dispatch(kPagedPrefillBq, s.tpq, false, pl.decode_items, pl.prefill_items);
}

// ---- argmax / top-k ------------------------------------------------------------------------

namespace {
constexpr uint32_t kSelectWG = 256, kSelectCH = 2048;
}  // namespace

void LlmOps::select_pass(Batch& b, const Tensor& vals, const Tensor& ids, bool have_ids, int64_t count, int k, int rows,
                         int64_t in_stride, int64_t out_stride, const Tensor& out_v, const Tensor& out_i) const {
  Kernel kern = kernel("llm/topk", {"llm/common.wgsl", "llm/select_order.wgsl", "llm/topk.wgsl"},
                       {{"WG", kSelectWG}, {"CH", kSelectCH}}, false);
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
  Kernel k = kernel("llm/row_lse", {"llm/common.wgsl", "llm/row_lse.wgsl"}, {{"WG", kSelectWG}}, false);
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
      "llm/next_token/" + str(table.type),
      {"llm/common.wgsl", "llm/weights/" + str(table.type) + ".wgsl", "llm/select_order.wgsl", "llm/next_token.wgsl"},
      {{"WG", kSelectWG}}, false);
  b.dispatch(k, {table.data, table.scales, c.vals, c.ids, out, pos, x},
             Params(u32(c.count), c.have_ids ? 1u : 0u, u32(table.cols), u32(table.rows)), Groups{});
}

}  // namespace wgc::llm
