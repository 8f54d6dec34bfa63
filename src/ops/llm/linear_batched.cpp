// LlmOps' serving linears (the batched engine's): linear_batched.wgsl (f32 activations, any
// weight type) and linear_batched_q8.wgsl (8-bit activations, Q4_0 / Q8_0; with its small-step
// form linear_batched_q8_mv.wgsl and its RoPE epilogue), whose results do not depend on the batch.
#include "ops/llm/llm_ops.h"
#include "ops/llm/op_checks.h"
#include "util/error.h"

#include <algorithm>
#include <initializer_list>

namespace wgc::llm {

namespace {

using detail::need;
using detail::need_elems;
using detail::prelude_bool;
using detail::prelude_u32;
using detail::shape_tag;
using detail::str;
using detail::u32;

}  // namespace

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

std::string prelude_u32s(std::initializer_list<std::pair<const char*, uint32_t>> v) {
  std::string s;
  for (auto [name, value] : v) s += prelude_u32(name, value);
  return s;
}

// linear_batched.wgsl's variant: tokens per workgroup, its invocations, lanes per row group, x tile.
struct BatchedVariant {
  TensorType type = TensorType::F32;
  uint32_t tt = 0, wg = 0, kl = 0, xt = 0;
  KernelSpec spec() const {
    return {"llm/batched/" + str(type) + "/" + shape_tag({tt, wg, kl, xt}),
            {"llm/common.wgsl", "llm/weights/" + str(type) + ".wgsl", "llm/linear_batched.wgsl"},
            prelude_u32s({{"TT", tt}, {"WG", wg}, {"KL", kl}, {"XT", xt}})};
  }
};

// linear_batched_q8.wgsl's variant: tokens per workgroup (one token group: TG), its invocations,
// lanes and rows per row group, x tile, Q4_0 or Q8_0, the ROPE epilogue; each lane loads its next
// weight block before it multiplies the current one (PF, one block at a time: UN).
struct BatchedQ8Variant {
  bool q4 = false, rope = false;
  TensorType type = TensorType::Q8_0;
  uint32_t tt = 0, wg = 0, kl = 0, tr = 0, xt = 0;
  KernelSpec spec() const {
    return {"llm/batched_q8/" + str(type) + "/" + shape_tag({tt, 1, wg, kl, tr, xt}) + "/pf" + (rope ? "/rope" : ""),
            {"llm/common.wgsl", rope ? "llm/linear_batched_rope.wgsl" : "llm/linear_batched_norope.wgsl",
             "llm/linear_batched_q8.wgsl"},
            prelude_u32s({{"TT", tt}, {"TG", 1}, {"WG", wg}, {"KL", kl}, {"TR", tr}, {"XT", xt}}) +
                prelude_bool("Q4", q4) + prelude_bool("PF", true) + prelude_u32("UN", 1) + prelude_bool("I2F", false) +
                prelude_bool("ROPE", rope) + prelude_u32("P_BINDING", rope ? 10 : 6)};
  }
};

// linear_batched_q8_mv.wgsl's variant (steps of at most batched_mv_n tokens): tokens, lanes,
// invocations per lane, blocks per load, invocations, rows per row group, Q4_0 or Q8_0, ROPE.
struct BatchedQ8MvVariant {
  bool q4 = false, rope = false;
  TensorType type = TensorType::Q8_0;
  uint32_t tt = 0, kl = 0, sl = 0, un = 0, wg = 0, tr = 0;
  KernelSpec spec() const {
    return {"llm/batched_q8_mv/" + str(type) + "/" + shape_tag({tt, kl, sl, un, wg, tr}) + (rope ? "/rope" : ""),
            {"llm/common.wgsl", rope ? "llm/linear_batched_rope.wgsl" : "llm/linear_batched_norope.wgsl",
             "llm/linear_batched_q8_mv.wgsl"},
            prelude_u32s({{"TT", tt}, {"KL", kl}, {"SL", sl}, {"UN", un}, {"WG", wg}, {"TR", tr}}) +
                prelude_bool("Q4", q4) + prelude_bool("I2F", false) + prelude_bool("ROPE", rope) +
                prelude_u32("P_BINDING", rope ? 10 : 6)};
  }
};

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
  while (xt % (kl * detail::chunk_elems(w.type)) != 0) xt += 256;
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
  Kernel k = kernel(BatchedVariant{w.type, tt, wg, kl, xt}.spec());
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

LlmOps::ServingFusions LlmOps::serving_fusions(int head_dim) const {
  ServingFusions f;
  f.rope = head_dim > 0 && head_dim % 2 == 0 && caps_.storage_buffers >= 10;
  f.paged_q8 = head_dim > 0 && head_dim % 32 == 0 && uint32_t(head_dim) <= max_wg_;
  return f;
}

void LlmOps::linear_batched_q8_rope(Batch& b, const GpuWeight& w, const Q8Act& x, const Tensor& qkv, int n_tokens,
                                    const RopeTable& table, const KvLayer& c, const RopeKvArgs& a,
                                    const Tensor& bias) const {
  const std::string op = "linear_batched_q8_rope " + str(w.type);
  const int hd = c.head_dim;
  need(serving_fusions(hd).rope, op,
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
  need(a.cache_rows || (c.ring ? n_tokens <= c.max_ctx : int64_t(a.pos0) + n_tokens <= c.max_ctx), op,
       "positions " + std::to_string(a.pos0) + "+" + std::to_string(n_tokens) + " past max_ctx " +
           std::to_string(c.max_ctx));
  need(a.positions || int64_t(a.pos0) + n_tokens <= table.max_pos, op,
       "positions past the table's " + std::to_string(table.max_pos));
  detail::need_f32_kv(c, op);
  detail::need_kv(c, op);
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
  const uint64_t tiles = ceil_div(uint64_t(n_tokens), tt);
  const uint32_t wg = batched_wg(tiles, rows, tr);
  const uint64_t shared = smem(1, wg);
  need(shared <= smem_limit, op,
       std::to_string(shared) + " bytes of workgroup memory, the adapter allows " + std::to_string(smem_limit));
  const uint32_t bn = wg / kl * tr;
  const uint64_t row_tiles = ceil_div(uint64_t(rows), bn);
  need(row_tiles <= ctx_.limits().max_compute_workgroups_per_dimension, op, "too many rows");
  BatchedQ8Variant bv;
  bv.q4 = w.type == TensorType::Q4_0;
  bv.rope = rope != nullptr;
  bv.type = w.type;
  bv.tt = tt;
  bv.wg = wg;
  bv.kl = kl;
  bv.tr = tr;
  bv.xt = xt;
  Kernel k = kernel(bv.spec());
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
  Kernel k = kernel(BatchedQ8MvVariant{w.type == TensorType::Q4_0, rope, w.type, tt, kl, sl, un, wg, tr}.spec());
  b.dispatch(k, std::move(args), prm, {u32(groups), 1, 1});
}

}  // namespace wgc::llm
