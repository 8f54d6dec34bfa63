// LlmOps' KV-cache appends and attention over a contiguous cache: prefill
// (flash_attn_tiled_pf.wgsl, else flash_attn.wgsl), decode in splits (flash_decode_sg.wgsl, else
// flash_decode.wgsl, else flash_attn.wgsl) and the splits' combine.
#include "ops/llm/llm_ops.h"
#include "ops/llm/op_checks.h"
#include "util/error.h"

#include <algorithm>
#include <cmath>

namespace wgc::llm {

namespace {

using detail::kCombineSp;
using detail::kv_read_file;
using detail::kv_row_file;
using detail::kv_store_file;
using detail::kv_tag;
using detail::kv_unit;
using detail::need;
using detail::need_elems;
using detail::need_kv;
using detail::prelude_bool;
using detail::prelude_u32;
using detail::ring_tag;
using detail::u32;

}  // namespace

void LlmOps::kv_append(Batch& b, const KvLayer& c, const Tensor& k_src, int64_t k_off, const Tensor& v_src,
                       int64_t v_off, int64_t src_stride, int pos0, int n_tokens) const {
  const std::string op = "kv_append";
  const int64_t row = int64_t(c.n_kv_heads) * c.head_dim;
  need(n_tokens > 0 && pos0 >= 0 && (c.ring ? n_tokens <= c.max_ctx : pos0 + n_tokens <= c.max_ctx), op,
       "positions " + std::to_string(pos0) + "+" + std::to_string(n_tokens) + " past max_ctx " +
           std::to_string(c.max_ctx));
  need_elems(k_src, (n_tokens - 1) * src_stride + k_off + row, op, "k_src");
  need_elems(v_src, (n_tokens - 1) * src_stride + v_off + row, op, "v_src");
  need_kv(c, op);
  // f32: one invocation per value (kv_append.wgsl); packed: per unit of words (kv_append_packed.wgsl).
  const bool packed = c.type != KvType::F32;
  Kernel k = packed ? kernel({"llm/kv_append" + kv_tag(c.type),
                              {"llm/common.wgsl", "llm/kv_append_packed.wgsl", kv_store_file(c.type)}})
                    : kernel({"llm/kv_append", {"llm/common.wgsl", "llm/kv_append.wgsl"}});
  const uint64_t work = packed ? 2 * uint64_t(row) / kv_unit(c.type) : uint64_t(row);
  b.dispatch(k, {k_src, v_src, c.k, c.v},
             Params(u32(n_tokens), u32(c.n_kv_heads), u32(c.head_dim), u32(c.max_ctx), u32(pos0), u32(src_stride),
                    u32(k_off), u32(v_off), c.offset),
             groups_1d(ctx_, ceil_div(uint64_t(n_tokens) * work, 256)));
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
  need(a.cache_rows || (a.pos0 >= 0 && (c.ring ? a.n_tokens <= c.max_ctx : a.pos0 + a.n_tokens <= c.max_ctx)), op,
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
  need_kv(c, op);
  // f32: one invocation per pair (rope_kv_append.wgsl); packed: the key and value heads per unit
  // of words (rope_kv_append_packed.wgsl).
  const bool packed = c.type != KvType::F32;
  Kernel k = packed ? kernel({"llm/rope_kv_append" + kv_tag(c.type),
                              {"llm/common.wgsl", "llm/rope_kv_append_packed.wgsl", kv_store_file(c.type)}})
                    : kernel({"llm/rope_kv_append", {"llm/common.wgsl", "llm/rope_kv_append.wgsl"}});
  const uint64_t kv_work = packed ? 2 * uint64_t(kv_len) / kv_unit(c.type) : uint64_t(c.n_kv_heads) * uint64_t(hd);
  uint64_t work = uint64_t(a.n_tokens) * (uint64_t(a.n_heads) * uint64_t(hd / 2) + kv_work);
  b.dispatch(k, {qkv, table.cos_sin, a.positions ? a.positions : table.cos_sin, c.k, c.v},
             Params(u32(a.n_tokens), u32(a.n_heads), u32(c.n_kv_heads), u32(hd), u32(stride), u32(q_off), u32(k_off),
                    u32(v_off), u32(a.pos0), detail::rope_flags(a), u32(table.max_pos), u32(c.max_ctx), c.offset),
             groups_1d(ctx_, ceil_div(work, 256)));
}

namespace {
// flash_decode.wgsl (decode attention without subgroups): keys per block, halved until the block
// fits the adapter's workgroup memory.
constexpr uint32_t kDecodeBlockKeys = 32;

std::string hd_tag(int hd) { return "/hd" + std::to_string(hd); }

// flash_attn.wgsl's variant: head_dim and query rows per workgroup (its invocations per row and
// keys per block follow from head_dim: detail::attn_shape).
struct FlashAttnVariant {
  int hd = 0;
  uint32_t bq = 0;
  KvType kv = KvType::F32;
  bool ring = false;
  KernelSpec spec() const {
    const detail::AttnShape s = detail::attn_shape(hd);
    return {"llm/flash_attn" + hd_tag(hd) + "/bq" + std::to_string(bq) + kv_tag(kv) + ring_tag(ring),
            {"llm/common.wgsl", "llm/flash_attn.wgsl", kv_read_file(kv), kv_row_file(ring)},
            "",
            {{"HD", hd}, {"TPQ", s.tpq}, {"BQ", bq}, {"BK", s.bk}}};
  }
};

// flash_attn_tiled_pf.wgsl's variant: head_dim, output vec4s per row and invocation (NO), keys per V
// chunk (VK), the row groups in subgroups of sgs lanes (0: through workgroup memory); scores by
// exp2 (EXP2) and each staged chunk prefetched into registers (PF).
struct TiledPfVariant {
  int hd = 0;
  uint32_t no = 0, vk = 0, sgs = 0;
  KvType kv = KvType::F32;
  bool ring = false;
  KernelSpec spec() const {
    KernelSpec s{
        "llm/flash_attn_tiled_pf" + hd_tag(hd) + "/exp2" + (sgs ? "/sg" : "") + kv_tag(kv) + ring_tag(ring),
        {"llm/flash_attn_tiled_pf.wgsl", sgs ? "llm/flash_attn_pf_rows_sg.wgsl" : "llm/flash_attn_pf_rows_wm.wgsl",
         kv_read_file(kv), kv_row_file(ring)},
        "",
        {{"HD", hd}, {"NO", no}, {"VK", vk}, {"EXP2", 1}, {"PF", 1}},
        sgs != 0};
    if (sgs) s.constants.push_back({"SGS", sgs});
    return s;
  }
};

// flash_decode.wgsl's variant: head_dim, query heads per KV head and its schedule.
struct FlashDecodeVariant {
  int hd = 0, g = 0;
  uint32_t wg = 0, bk = 0, nj = 0;
  KvType kv = KvType::F32;
  bool ring = false;
  KernelSpec spec() const {
    return {"llm/flash_decode" + hd_tag(hd) + "/g" + std::to_string(g) + "/wg" + std::to_string(wg) + "/bk" +
                std::to_string(bk) + kv_tag(kv) + ring_tag(ring),
            {"llm/flash_decode.wgsl", kv_read_file(kv), kv_row_file(ring)},
            "",
            {{"HD", hd}, {"G", g}, {"WG", wg}, {"BK", bk}, {"NJ", nj}}};
  }
};

// flash_decode_sg.wgsl's variant: head_dim, query heads per KV head, its schedule (key groups of
// tpk lanes, u keys per step, wg invocations, the next step's keys prefetched) and subgroup size.
struct FlashDecodeSgVariant {
  int hd = 0, g = 0;
  uint32_t tpk = 0, u = 0, wg = 0, sgs = 0;
  bool pf = false;
  KvType kv = KvType::F32;
  bool ring = false;
  KernelSpec spec() const {
    const auto cu = prelude_u32;
    return {"llm/flash_decode_sg" + hd_tag(hd) + "/g" + std::to_string(g) + "/wg" + std::to_string(wg) + "/tpk" +
                std::to_string(tpk) + "/u" + std::to_string(u) + (pf ? "/pf" : "") + kv_tag(kv) + ring_tag(ring),
            {"llm/flash_decode_sg.wgsl", kv_read_file(kv), kv_row_file(ring)},
            cu("HD", u32(hd)) + cu("G", u32(g)) + cu("TPK", tpk) + cu("U", u) + cu("WG", wg) + cu("SGS", sgs) +
                prelude_bool("PF", pf),
            {},
            true};
  }
};

}  // namespace

Kernel LlmOps::attn_kernel(int hd, int bq, KvType kv, bool ring) const {
  return kernel(FlashAttnVariant{hd, u32(bq), kv, ring}.spec());
}

Kernel LlmOps::attn_tiled_pf_kernel(int hd, KvType kv, bool ring) const {
  // flash_attn_tiled_pf.wgsl: 64 rows x 64 keys per workgroup of 256 invocations, 4 x 4 scores
  // each, 32 KiB; up to 4 output vec4s per row and invocation, V chunks of at most 4 vec4s each.
  if (hd % 4 != 0 || hd > 256 || caps_.workgroup_storage < 32768 || max_wg_ < 256) return {};
  // A row's 16 invocations in one subgroup where the adapter has them (of a power-of-two size;
  // session 8: 11% off the kernel), else through workgroup memory. Scores by exp2 (EXP2: 6%) and
  // each staged chunk loaded into registers while the previous one is computed (PF).
  const uint32_t hd4 = uint32_t(hd) / 4, no = (hd4 + 15) / 16;
  const bool sg = subgroups_ && (sg_size_ & (sg_size_ - 1)) == 0;
  uint32_t vk = 64;
  while (vk > 1 && vk * hd4 > 1024) vk /= 2;
  return kernel(TiledPfVariant{hd, no, vk, sg ? sg_size_ : 0, kv, ring}.spec());
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
  need(a.window >= 0, op, "window " + std::to_string(a.window) + " is negative");
  need(a.n_tokens > 0 && a.start >= 0 && (c.ring || a.start + a.n_tokens <= c.max_ctx), op,
       "positions past max_ctx " + std::to_string(c.max_ctx));
  // A ring holds the last max_ctx positions: the pass's keys (its window and its tokens) must fit.
  need(!c.ring || (a.window > 0 && int64_t(a.window) + a.n_tokens - 1 <= c.max_ctx), op,
       "a ring cache of " + std::to_string(c.max_ctx) + " rows does not hold a window of " + std::to_string(a.window) +
           " and " + std::to_string(a.n_tokens) + " new tokens");
  need(a.softcap >= 0 && std::isfinite(a.softcap), op, "soft-cap " + std::to_string(a.softcap));
  d.G = a.n_heads / c.n_kv_heads;
  d.qs = a.q_stride < 0 ? int64_t(a.n_heads) * d.hd : a.q_stride;
  d.os = a.o_stride < 0 ? int64_t(a.n_heads) * d.hd : a.o_stride;
  need(d.qs % 4 == 0 && a.q_offset % 4 == 0 && c.offset % 4 == 0, op,
       "q stride/offset and cache offset must be multiples of 4");
  need_kv(c, op);
  need_elems(q, (a.n_tokens - 1) * d.qs + a.q_offset + int64_t(a.n_heads) * d.hd, op, "q");
  if (out) need_elems(*out, (a.n_tokens - 1) * d.os + a.o_offset + int64_t(a.n_heads) * d.hd, op, "out");
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
  if (Kernel k = attn_tiled_pf_kernel(d.hd, c.type, c.ring)) {
    const uint32_t kv_len = u32(a.start + a.n_tokens);
    const Groups g{ceil_div(uint64_t(a.n_tokens) * uint64_t(d.G), 64), u32(c.n_kv_heads), 1};
    b.dispatch(k, {q, Arg(c.k), Arg(c.v), out},
               Params(u32(a.n_tokens), u32(a.n_heads), u32(c.n_kv_heads), u32(c.max_ctx), u32(a.start), u32(d.qs),
                      u32(a.q_offset), u32(d.os), u32(a.o_offset), c.offset, d.scale, kv_len, 1u, 0u, 0u, u32(a.window),
                      a.softcap),
               g);
    return;
  }
  const uint32_t bq = 16;
  Kernel k = attn_kernel(d.hd, bq, c.type, c.ring);
  uint32_t total = u32(a.start + a.n_tokens);
  b.dispatch(k, {q, Arg(c.k), Arg(c.v), out, dummy_},
             Params(u32(a.n_tokens), u32(a.n_heads), u32(c.n_kv_heads), u32(c.max_ctx), u32(a.start), u32(d.qs),
                    u32(a.q_offset), u32(d.os), u32(a.o_offset), c.offset, d.scale, total, 1u, 0u, 0u, u32(a.window),
                    a.softcap),
             {ceil_div(uint64_t(a.n_tokens) * uint64_t(d.G), bq), u32(c.n_kv_heads), 1});
}

uint32_t LlmOps::decode_splits(int n_kv_heads) const {
  return std::clamp<uint32_t>(tuning.attn_dec_wgs / u32(std::max(1, n_kv_heads)), 1, kMaxDecodeSplits);
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
    k = kernel(FlashDecodeSgVariant{d.hd, d.G, sgs.tpk, sgs.u, sgs.wg, sg_size_, sgs.pf, c.type, c.ring}.spec());
    bk = sgs.wg / sgs.tpk * sgs.u;
  } else if (ds.wg) {
    k = kernel(FlashDecodeVariant{d.hd, d.G, ds.wg, ds.bk, ds.nj, c.type, c.ring}.spec());
    bk = ds.bk;
  } else {
    while (bq < uint32_t(d.G)) bq *= 2;
    auto s = detail::attn_shape(d.hd);
    need(bq * s.tpq <= max_wg_, op, "GQA group too large");
    k = attn_kernel(d.hd, int(bq), c.type, c.ring);
    bk = s.bk;
  }
  const bool dyn = bool(a.start_from);
  if (dyn) need_elems(a.start_from, 1, op, "start_from");
  // Splits: a.splits, else tuning.attn_dec_wgs workgroups' worth over the KV heads; with a
  // fixed position, no more than the keys fill (blocks of BK), with a position read on the GPU,
  // as many as the whole cache would fill.
  // The splits cover the keys from the sliding window's first (flash_attn_range.wgsl's key_range:
  // exactly for the decode kernels, rounded down to a block for flash_attn.wgsl); with the
  // position read on the GPU, no more than the window (and a block) or the whole cache.
  const uint32_t align = sgs.wg || ds.wg ? 1 : bk;
  const int lo = a.window > 0 ? std::max(0, a.start + 1 - a.window) : 0;
  const uint32_t first = u32(lo) / align * align;
  const uint32_t kv_len = dyn ? (a.window > 0 ? std::min(u32(c.max_ctx), u32(a.window) + align) : u32(c.max_ctx))
                              : u32(a.start + 1) - first;
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
    b.dispatch(
        k, {q, Arg(c.k), Arg(c.v), *out, pos},
        Params(1u, u32(a.n_heads), u32(c.n_kv_heads), u32(c.max_ctx), u32(a.start), u32(d.qs), u32(a.q_offset),
               u32(d.os), u32(a.o_offset), c.offset, d.scale, split_len, 1u, 0u, flag_dyn, u32(a.window), a.softcap),
        g);
    return 1;
  }
  part = make_tensor(ctx_, {int64_t(a.n_heads) * splits * (d.hd + 2)});
  b.dispatch(k, {q, Arg(c.k), Arg(c.v), part, pos},
             Params(1u, u32(a.n_heads), u32(c.n_kv_heads), u32(c.max_ctx), u32(a.start), u32(d.qs), u32(a.q_offset), 0u,
                    0u, c.offset, d.scale, split_len, splits, 1u, flag_dyn, u32(a.window), a.softcap),
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

void LlmOps::combine_partials(Batch& b, const Tensor& part, const Tensor& out, int n_tokens, int n_heads,
                              uint32_t splits, int hd, int64_t o_stride, int64_t o_offset) const {
  // kCombineSp invocations per element, halved until the workgroup (a head) fits.
  uint32_t sp = kCombineSp;
  while (sp > 1 && uint64_t(hd) * sp > max_wg_) sp /= 2;
  need(uint32_t(hd) <= max_wg_, "attention", "head_dim " + std::to_string(hd) + " (a workgroup per head)");
  Kernel kc = kernel({"llm/attn_combine/" + std::to_string(hd) + "x" + std::to_string(sp),
                      {"llm/common.wgsl", "llm/attn_combine.wgsl"},
                      "",
                      {{"HD", hd}, {"SP", sp}}});
  b.dispatch(kc, {part, out}, Params(u32(n_tokens), u32(n_heads), splits, u32(hd), u32(o_stride), u32(o_offset)),
             groups_1d(ctx_, uint64_t(n_tokens) * uint64_t(n_heads)));
}

}  // namespace wgc::llm
