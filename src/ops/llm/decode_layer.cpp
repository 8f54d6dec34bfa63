// LlmOps::decode_layer: one decoder layer of one token in one dispatch (layer_decode.wgsl), and
// the scratch its steps hand over through.
#include "ops/llm/decode_layer.h"

#include "ops/llm/llm_ops.h"
#include "ops/llm/op_checks.h"
#include "util/error.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace wgc::llm {

namespace {

using detail::need;
using detail::need_elems;
using detail::str;
using detail::u32;

// layer_decode.wgsl's fixed shape: 256 invocations, row groups of 32 taking two rows (or one RoPE
// pair, or a gate row and its up row) each.
constexpr uint32_t kWG = 256, kRowsPerItem = 16, kPairsPerItem = 8;
constexpr uint32_t kSentinel = 0x7FA5A5A5u;  // layer_decode.wgsl's SENTINEL
constexpr uint32_t kMaxHeadDim = 128, kMaxGroup = 8;

uint32_t round4(uint64_t n) { return u32((n + 3) / 4 * 4); }
// Keys per attention block: K and V rows of a block fit beside a 16 KB x tile.
uint32_t block_keys(int head_dim) { return head_dim <= 64 ? 32u : 16u; }
// Floats of x staged at once: the whole input of QKV, o and gate|up (one tile); the down
// projection's in tiles of the same size.
uint32_t x_tile(const LayerScratch& s) {
  const int64_t cols = std::max<int64_t>(s.hidden, int64_t(s.n_heads) * s.head_dim);
  return u32((cols + 7) / 8 * 8);
}
uint64_t shared_bytes(const LayerScratch& s) {
  const uint64_t hd4 = uint64_t(s.head_dim) / 4, g = uint64_t(s.n_heads / s.n_kv_heads), bk = block_keys(s.head_dim);
  const uint64_t sm = std::max<uint64_t>(x_tile(s) / 4, bk * (2 * hd4 + 1));
  return 16 * sm + 4 * kWG + 4 * (2 * uint64_t(s.n_heads) * s.splits + s.n_heads) + 16 * g * hd4 + 4 * g * bk + 4 * 24 +
         4;
}

}  // namespace

uint32_t layer_region(int li, int n_layers) {
  if (n_layers % 2 == 1 && li == n_layers - 1) return 2;
  return uint32_t(li % 2);
}

LayerScratch make_layer_scratch(const Context& ctx, int n_layers, int64_t hidden, int64_t ffn, int n_heads,
                                int n_kv_heads, int head_dim, int max_ctx, uint32_t splits, uint32_t block) {
  const std::string op = "layer scratch";
  need(n_layers >= 2 && hidden > 0 && ffn > 0 && n_heads > 0 && n_kv_heads > 0 && head_dim > 0 && max_ctx > 0 &&
           splits > 0 && block > 0,
       op, "a model of at least two layers");
  LayerScratch s;
  s.hidden = hidden;
  s.ffn = ffn;
  s.n_heads = n_heads;
  s.n_kv_heads = n_kv_heads;
  s.head_dim = head_dim;
  s.max_ctx = max_ctx;
  s.split_len = split_keys(uint64_t(max_ctx), splits, block);
  s.splits = ceil_div(uint64_t(max_ctx), s.split_len);
  s.regions = n_layers % 2 == 1 ? 3 : 2;
  s.xin = 0;
  s.cnt = round4(uint64_t(hidden));
  s.q = s.cnt + 8;  // the ticket counter, the four steps' counters, padding
  s.k = s.q + u32(uint64_t(n_heads) * head_dim);
  s.v = s.k + u32(uint64_t(n_kv_heads) * head_dim);
  s.part = round4(s.v + uint64_t(n_kv_heads) * head_dim);
  s.x2 = round4(s.part + uint64_t(n_heads) * s.splits * (head_dim + 2));
  s.act = round4(s.x2 + uint64_t(hidden));
  s.end = round4(s.act + uint64_t(ffn));
  s.region_words = s.end;
  s.err = s.regions * s.region_words;
  std::vector<uint32_t> init(size_t(s.err) + 4, 0u);
  for (uint32_t r = 0; r < s.regions; ++r)
    std::fill(init.begin() + r * s.region_words + s.q, init.begin() + r * s.region_words + s.end, kSentinel);
  s.words = make_tensor(ctx, {int64_t(init.size())}, DType::U32, std::as_bytes(std::span(init)));
  return s;
}

bool layer_scratch_failed(const Context& ctx, const LayerScratch& s) {
  Batch b(ctx);
  Readback r = b.read(s.words, uint64_t(s.err) * 4, 4);
  b.run();
  return r.value<uint32_t>() != 0;
}

uint32_t LlmOps::decode_splits(int n_kv_heads) const {
  return std::clamp<uint32_t>(tuning.attn_dec_wgs / u32(std::max(1, n_kv_heads)), 1, kMaxDecodeSplits);
}

LayerScratch LlmOps::make_decode_layer_scratch(int n_layers, int64_t hidden, int64_t ffn, int n_heads, int n_kv_heads,
                                               int head_dim, int max_ctx) const {
  return make_layer_scratch(ctx_, n_layers, hidden, ffn, n_heads, n_kv_heads, head_dim, max_ctx,
                            decode_splits(n_kv_heads), block_keys(head_dim));
}

std::string LlmOps::decode_layer_unfit(const LayerScratch& s, TensorType t) const {
  if (t != TensorType::F16 && t != TensorType::BF16) return "weights of type " + str(t) + " (F16 or BF16)";
  if (s.head_dim % 8 != 0 || s.head_dim > int(kMaxHeadDim)) return "head_dim " + std::to_string(s.head_dim);
  if (s.n_heads % s.n_kv_heads != 0 || s.n_heads / s.n_kv_heads > int(kMaxGroup))
    return std::to_string(s.n_heads) + " query heads over " + std::to_string(s.n_kv_heads) + " kv heads";
  if (s.hidden % 4 != 0 || s.ffn % 4 != 0) return "hidden and ffn sizes not multiples of 4";
  if (caps_.storage_buffers < 10) return "fewer than 10 storage buffers per stage";
  if (ctx_.limits().max_compute_invocations_per_workgroup < kWG) return "workgroups of fewer than 256 invocations";
  if (shared_bytes(s) > caps_.workgroup_storage) return std::to_string(shared_bytes(s)) + " bytes of workgroup memory";
  return {};
}

void LlmOps::decode_layer(Batch& b, const LayerScratch& s, const KvLayer& c, const DecodeLayerArgs& a) const {
  const GpuWeight& wqkv = *a.qkv;
  const std::string op = "decode_layer " + str(wqkv.type);
  const std::string unfit = decode_layer_unfit(s, wqkv.type);
  need(unfit.empty(), op, "cannot run " + unfit);
  const int64_t hd = s.head_dim, nh = s.n_heads, nkv = s.n_kv_heads, hidden = s.hidden, ffn = s.ffn;
  need(c.head_dim == hd && c.n_kv_heads == nkv && c.max_ctx == s.max_ctx, op, "a cache of another shape");
  need(a.rope && a.rope->head_dim == hd, op, "a RoPE table of another head_dim");
  auto check = [&](const GpuWeight& w, int64_t rows, int64_t cols, const char* name) {
    need(w.type == wqkv.type && w.rows == rows && w.cols == cols, op,
         std::string(name) + ": " + std::to_string(w.rows) + " x " + std::to_string(w.cols) + " " + str(w.type) +
             ", expected " + std::to_string(rows) + " x " + std::to_string(cols) + " " + str(wqkv.type));
  };
  check(wqkv, (nh + 2 * nkv) * hd, hidden, "qkv");
  check(*a.o, hidden, nh * hd, "o");
  check(*a.gate_up, 2 * ffn, hidden, "gate|up");
  check(*a.down, hidden, ffn, "down");
  need_elems(a.norms, int64_t(std::max(a.ln1, a.ln2)) + hidden, op, "norms");
  need_elems(a.positions, 2, op, "positions");
  need_elems(c.k, c.offset + nkv * hd * c.max_ctx, op, "k cache");
  need_elems(c.v, c.offset + nkv * hd * c.max_ctx, op, "v cache");
  need(a.region >= 0 && a.next >= 0 && uint32_t(a.region) < s.regions && uint32_t(a.next) < s.regions &&
           a.region != a.next,
       op, "regions " + std::to_string(a.region) + " and " + std::to_string(a.next));

  const uint32_t g = u32(nh / nkv), bk = block_keys(int(hd));
  const std::string half = wqkv.type == TensorType::BF16 ? "bf16x4" : "f16x4";
  const std::string prelude = "fn half4(a: u32, b: u32) -> vec4<f32> { return " + half + "(a, b); }\n";
  const uint32_t lb = std::clamp(tuning.layer_lb, 1u, 4u), pf = std::clamp(tuning.layer_pf, 1u, 4u);
  const std::string key = "llm/layer_decode/" + str(wqkv.type) + "/hd" + std::to_string(hd) + "/g" + std::to_string(g) +
                          "/x" + std::to_string(x_tile(s)) + "/h" + std::to_string(nh) + "/s" +
                          std::to_string(s.splits) + "/lb" + std::to_string(lb) + "/pf" + std::to_string(pf) +
                          (tuning.layer_poll ? "/poll" : "") + (subgroups_ ? "/sg" : "/wg");
  std::vector<std::pair<std::string, double>> k = {
      {"HD", double(hd)}, {"G", g},           {"BK", bk},
      {"XT", x_tile(s)},  {"NH", double(nh)}, {"NS", s.splits},
      {"LB", lb},         {"PF", pf},         {"POLL", tuning.layer_poll ? 1.0 : 0.0}};
  if (subgroups_) k.push_back({"SG", sg_size_});
  Kernel kern = kernel(key,
                       {"llm/common.wgsl", "llm/rope_pair.wgsl",
                        subgroups_ ? "llm/reduce_sg.wgsl" : "llm/reduce_wg.wgsl", "llm/layer_decode.wgsl"},
                       k, subgroups_, "main", prelude);

  const uint32_t base = u32(a.region) * s.region_words, next = u32(a.next) * s.region_words;
  const uint32_t end_a = ceil_div(uint64_t(nh + 2 * nkv) * hd / 2, kPairsPerItem);
  const uint32_t end_b = end_a + u32(nkv) * s.splits;
  const uint32_t end_c = end_b + ceil_div(uint64_t(hidden), kRowsPerItem);
  const uint32_t end_d = end_c + ceil_div(uint64_t(ffn), kPairsPerItem);
  const uint32_t n_items = end_d + ceil_div(uint64_t(hidden), kRowsPerItem);
  // SwiftShader (CPU adapters) runs a few workgroups per worker thread as fibers with no fairness
  // between them: a workgroup spinning on a word can starve the started one that would write it
  // (seen at 3 workgroups on 2 cores). One workgroup takes every item in order and never waits.
  const uint32_t dflt = ctx_.adapter().is_cpu() ? 1 : n_items;
  const uint32_t wgs = std::min(tuning.layer_wgs ? tuning.layer_wgs : dflt, n_items);
  Params prm(u32(hidden), u32(ffn), u32(nh), u32(nkv), s.splits, s.split_len, u32(c.max_ctx), u32(a.rope->max_pos),
             c.offset, a.ln1, a.ln2, a.interleaved ? 2u : 0u, base + s.xin, base + s.cnt, base + s.q, base + s.k,
             base + s.v, base + s.part, base + s.x2, base + s.act, next + s.xin, next + s.cnt, next + s.q, next + s.end,
             end_a, end_b, end_c, end_d, n_items, s.err, tuning.layer_spin_max, a.eps,
             float(1.0 / std::sqrt(double(hd))));
  b.dispatch(
      kern,
      {wqkv.data, a.o->data, a.gate_up->data, a.down->data, a.norms, a.rope->cos_sin, c.k, c.v, s.words, a.positions},
      prm, groups_1d(ctx_, wgs));
}

}  // namespace wgc::llm
