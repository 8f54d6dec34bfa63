// LlmOps' core: the adapter's capabilities, the pipeline cache (every kernel family's KernelSpec
// compiled once), the RoPE table and KV cache, and the small ops (embedding, RMSNorm, RoPE).
// Each kernel family has its own source: linear.cpp, matvec.cpp, matvec_kx.cpp, linear_q8.cpp,
// linear_batched.cpp, attention.cpp, paged_attention.cpp, elementwise.cpp, selection.cpp.
#include "ops/llm/llm_ops.h"
#include "ops/llm/op_checks.h"

#include "cpu/llm/rope_table.h"

#include "util/error.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace wgc::llm {

namespace {

using detail::need;
using detail::need_elems;
using detail::str;
using detail::u32;

constexpr uint64_t kRegTileMinGroups = 256;  // choose_linear: tiles from which RegTile runs

// embedding.wgsl for a table of type t (the embedding's weights kernel).
KernelSpec embedding_spec(TensorType t) {
  return {"llm/embedding/" + str(t), {"llm/common.wgsl", "llm/weights/" + str(t) + ".wgsl", "llm/embedding.wgsl"}};
}

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

// ---- RoPE table ----------------------------------------------------------------------------------

RopeTable make_rope_table(const Context& ctx, std::span<const double> inv, int head_dim, int max_pos, double factor) {
  if (max_pos <= 0) throw Error("wgc: rope table: max_pos must be positive");
  if (head_dim <= 0 || head_dim % 2) throw Error("wgc: rope: head_dim must be even, not " + std::to_string(head_dim));
  if (inv.empty() || inv.size() > size_t(head_dim / 2))
    throw Error("wgc: rope table: " + std::to_string(inv.size()) + " frequencies for head_dim " +
                std::to_string(head_dim) + " (1 to head_dim / 2)");
  const std::vector<float> cs = rope_cos_sin(inv, max_pos, factor, size_t(head_dim / 2));  // partial: padded
  RopeTable t;
  t.cos_sin = make_tensor(ctx, {int64_t(cs.size())}, cs);
  t.head_dim = head_dim;
  t.max_pos = max_pos;
  return t;
}

// ---- KV cache ------------------------------------------------------------------------------

namespace {
// Values per u32 word of the offset between layers (KvLayer::offset / this = the layer's first word).
int64_t kv_offset_unit(KvType t) { return t == KvType::F32 ? 1 : t == KvType::F16 ? 2 : 4; }

void check_kv_shape(KvType t, int64_t values, int head_dim) {
  std::string why;
  if (!kv_type_fits(t, head_dim, &why)) throw Error("wgc: kv cache: " + why);
  if (values <= 0 || kv_words(t, values) * kv_offset_unit(t) >= (int64_t(1) << 32))
    throw Error("wgc: kv cache of " + std::to_string(values) + " values");
}
}  // namespace

KvLayer KvCache::layer(int i) const {
  if (i < 0 || i >= n_layers || rows.size() != size_t(n_layers) || offsets.size() != size_t(n_layers))
    throw Error("wgc: kv cache: no layer " + std::to_string(i) + " (make_kv_cache makes the layers)");
  KvLayer l;
  l.k = k;
  l.v = v;
  l.n_kv_heads = n_kv_heads;
  l.max_ctx = rows[size_t(i)];
  l.head_dim = head_dim;
  l.type = type;
  l.ring = l.max_ctx < max_ctx;
  l.offset = offsets[size_t(i)];
  return l;
}

KvCache make_kv_cache(const Context& ctx, int n_layers, int n_kv_heads, int max_ctx, int head_dim, KvType type,
                      std::span<const int> layer_rows) {
  KvCache c;
  if (!layer_rows.empty() && int64_t(layer_rows.size()) != n_layers)
    throw Error("wgc: kv cache: " + std::to_string(layer_rows.size()) + " layer sizes for " + std::to_string(n_layers) +
                " layers");
  int64_t values = 0, words = 0;
  for (int i = 0; i < n_layers; ++i) {
    const int rows = layer_rows.empty() ? max_ctx : layer_rows[size_t(i)];
    if (rows < 1 || rows > max_ctx)
      throw Error("wgc: kv cache: layer " + std::to_string(i) + " of " + std::to_string(rows) + " rows (1.." +
                  std::to_string(max_ctx) + ")");
    const int64_t layer = int64_t(n_kv_heads) * rows * head_dim;
    c.rows.push_back(rows);
    c.offsets.push_back(uint32_t(std::min<int64_t>(words * kv_offset_unit(type), UINT32_MAX)));
    values += layer;
    words += kv_words(type, layer);
  }
  check_kv_shape(type, values, head_dim);  // before the offsets are used: the words fit 32 bits
  c.k = make_tensor(ctx, {words});
  c.v = make_tensor(ctx, {words});
  c.n_layers = n_layers;
  c.n_kv_heads = n_kv_heads;
  c.max_ctx = max_ctx;
  c.head_dim = head_dim;
  c.type = type;
  return c;
}

KvLayer make_kv_layer(const Context& ctx, int n_kv_heads, int n_slots, int head_dim, KvType type) {
  KvLayer c;
  c.n_kv_heads = n_kv_heads;
  c.max_ctx = n_slots;
  c.head_dim = head_dim;
  c.type = type;
  check_kv_shape(type, c.values(), head_dim);
  c.k = make_tensor(ctx, {kv_words(type, c.values())});
  c.v = make_tensor(ctx, {kv_words(type, c.values())});
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

Kernel LlmOps::kernel(const KernelSpec& s) const {
  if (auto it = kernels_.find(s.key); it != kernels_.end()) return it->second;
  KernelCode code;
  if (s.subgroups) code.wgsl = "enable subgroups;\n";
  code.wgsl += s.prelude;
  for (auto& f : s.files) code.wgsl += embedded_kernel(f).wgsl;
  code.constants = s.constants;
  code.entry = s.entry;
  code.label = s.key;
  dump_kernel(code, tuning == LlmTuning{});
  Kernel k = compile(ctx_, code);
  kernels_.emplace(s.key, k);
  return k;
}

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
                     " rows per workgroup, 8x4 per invocation, vec4 shared-memory reads of x and dequantized W"});
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

void LlmOps::precompile(const std::vector<TensorType>& types, const std::vector<int>& head_dims, bool ring) {
  // Compile on first use is the common path; this only warms the map (pipelines compile in Dawn's
  // cache, so a later compile() of the same code is cheap).
  for (auto t : types) {
    linear_kernel("naive", t);
    linear_kernel("matmul", t);
    linear_kernel("regtile", t);
    matvec_kernel(t, subgroups_ ? LinearVersion::Subgroup : LinearVersion::Shared, 0);
    kernel(embedding_spec(t));
  }
  for (int hd : head_dims)
    for (bool r : {false, true}) {
      if (r && !ring) break;
      attn_tiled_pf_kernel(hd, KvType::F32, r);
      attn_kernel(hd, 16, KvType::F32, r);
      for (int bq : {1, 2, 4, 8}) attn_kernel(hd, bq, KvType::F32, r);
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
  Kernel k = kernel(embedding_spec(table.type));
  uint64_t work = uint64_t(n_tokens) * uint64_t((table.cols + 3) / 4);
  b.dispatch(k, {table.data, table.scales, ids, out},
             Params(u32(n_tokens), u32(table.cols), u32(out_stride), u32(table.rows)),
             groups_1d(ctx_, ceil_div(work, 256)));
}

// ---- rms_norm ------------------------------------------------------------------------------

void LlmOps::rms_norm(Batch& b, const Tensor& x, const Tensor& w, const Tensor& y, int rows, int n, float eps,
                      RmsNormVersion v) const {
  rms_norm_pass(b, x, w, y, rows, n, eps, v, false);
}

void LlmOps::rms_norm_add(Batch& b, const Tensor& x, const Tensor& w, const Tensor& y, int rows, int n,
                          float eps) const {
  rms_norm_pass(b, x, w, y, rows, n, eps, RmsNormVersion::Auto, true);
}

void LlmOps::rms_norm_pass(Batch& b, const Tensor& x, const Tensor& w, const Tensor& y, int rows, int n, float eps,
                           RmsNormVersion v, bool accumulate) const {
  const std::string op = accumulate ? "rms_norm_add" : "rms_norm";
  need(rows > 0 && n > 0, op, "empty");
  need_elems(x, int64_t(rows) * n, op, "x");
  need_elems(y, int64_t(rows) * n, op, "y");
  need_elems(w, n, op, "w");
  bool sg = v == RmsNormVersion::Subgroup || (v == RmsNormVersion::Auto && subgroups_);
  need(!sg || subgroups_, op, "this adapter has no usable subgroups");
  uint32_t wg = std::min<uint32_t>(256, detail::pow2_floor(max_wg_));
  std::vector<std::pair<std::string, double>> c = {{"WG", wg}};
  if (sg) c.push_back({"SG", sg_size_});
  Kernel k = kernel({std::string("llm/rms_norm/") + (sg ? "sg" : "wg"),
                     {"llm/common.wgsl", sg ? "llm/reduce_sg.wgsl" : "llm/reduce_wg.wgsl", "llm/rms_norm.wgsl"},
                     "",
                     c,
                     sg});
  b.dispatch(k, {x, w, y}, Params(u32(rows), u32(n), u32(n), u32(n), eps, accumulate ? 1u : 0u),
             groups_1d(ctx_, u32(rows)));
}

void LlmOps::head_rms_norm(Batch& b, const Tensor& x, const Tensor& w, int n_tokens, int n_heads, int head_dim,
                           int64_t stride, int64_t offset, float eps) const {
  const std::string op = "head_rms_norm";
  need(n_tokens > 0 && n_heads > 0 && head_dim > 0, op, "empty");
  need(stride >= int64_t(n_heads) * head_dim, op, "stride shorter than the heads");
  need_elems(x, (n_tokens - 1) * stride + offset + int64_t(n_heads) * head_dim, op, "x");
  need_elems(w, head_dim, op, "w");
  constexpr uint32_t kWG = 64;  // head vectors are 64-256 long
  Kernel k = kernel({"llm/head_norm", {"llm/head_norm.wgsl"}, "", {{"WG", kWG}}});
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
  Kernel k = kernel({"llm/rope", {"llm/common.wgsl", "llm/rope.wgsl"}});
  uint64_t work = uint64_t(a.n_tokens) * uint64_t(a.n_heads) * uint64_t(hd / 2);
  b.dispatch(k, {x, table.cos_sin, a.positions ? a.positions : table.cos_sin},
             Params(u32(a.n_tokens), u32(a.n_heads), u32(hd), u32(stride), u32(a.offset), u32(a.pos0), flags,
                    u32(table.max_pos)),
             groups_1d(ctx_, ceil_div(work, 256)));
}

}  // namespace wgc::llm
