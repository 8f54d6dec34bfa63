// LlmOps' paged attention (the serving engine's): every new token of a batch's sequences over its
// own blocks of a shared cache, prefill and decode rows in one pass (paged_attn.wgsl), then the
// splits' combine (paged_attn_combine.wgsl, or its form writing the o projection's 8-bit input).
#include "ops/llm/llm_ops.h"
#include "ops/llm/op_checks.h"
#include "util/error.h"

#include <algorithm>
#include <cmath>
#include <span>

namespace wgc::llm {

namespace {

using detail::kv_read_file;
using detail::kv_tag;
using detail::need;
using detail::need_elems;
using detail::need_kv;
using detail::need_q8;
using detail::u32;

constexpr uint32_t kPagedPrefillBq = 16;  // paged_attn.wgsl: query rows per workgroup for prefill chunks
constexpr uint32_t kPagedBk = 16;         // paged_attn.wgsl: BK, keys per block

}  // namespace

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
  need(a.window >= 0, op, "window " + std::to_string(a.window) + " is negative");
  need(a.softcap >= 0 && std::isfinite(a.softcap), op, "soft-cap " + std::to_string(a.softcap));
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
  Kernel kc = kernel({"llm/paged_attn_combine", {"llm/common.wgsl", "llm/paged_attn_combine.wgsl"}});
  b.dispatch(kc, {pl.partials, pl.positions, out},
             Params(u32(pl.n_tokens), u32(a.n_heads), pl.n_splits, u32(hd), u32(os), u32(a.o_offset), u32(a.split_len)),
             groups_1d(ctx_, ceil_div(uint64_t(pl.n_tokens) * uint64_t(a.n_heads) * uint64_t(hd), 128)));
}

void LlmOps::paged_attention_q8(Batch& b, const KvLayer& c, const Tensor& q, const Q8Act& out,
                                const PagedAttentionPlan& pl) const {
  const std::string op = "paged_attention_q8";
  const PagedAttentionArgs& a = pl.args;
  const int hd = a.head_dim;
  need(serving_fusions(hd).paged_q8, op,
       "head_dim " + std::to_string(hd) + " (a multiple of 32, at most " + std::to_string(max_wg_) + ")");
  need(out.cols == int64_t(a.n_heads) * hd, op,
       "out has " + std::to_string(out.cols) + " columns for " + std::to_string(a.n_heads) + " heads");
  need(a.o_stride < 0 && a.o_offset == 0, op, "the output's heads back to back (no o_stride or o_offset)");
  need_q8(out, pl.n_tokens, op, "out");
  paged_attention_partials(b, c, q, pl, op);
  Kernel kc = kernel({"llm/paged_attn_combine_q8/" + std::to_string(hd),
                      {"llm/common.wgsl", "llm/paged_attn_combine_q8.wgsl"},
                      "",
                      {{"HD", hd}}});
  b.dispatch(kc, {pl.partials, pl.positions, out.qs, out.ds},
             Params(u32(pl.n_tokens), u32(a.n_heads), pl.n_splits, u32(hd), u32(a.split_len)),
             groups_1d(ctx_, uint64_t(pl.n_tokens) * uint64_t(a.n_heads)));
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
  need_kv(c, op);
  const float scale = a.scale != 0 ? a.scale : float(1.0 / std::sqrt(double(hd)));
  const auto s = detail::attn_shape(hd);
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
    Kernel k = kernel({"llm/paged_attn/hd" + std::to_string(hd) + "/bq" + std::to_string(bq) + "/tpq" +
                           std::to_string(tpq) + (pf ? "/pf" : "") + (kp ? "/kp" : "") + kv_tag(c.type),
                       {"llm/paged_attn.wgsl", kv_read_file(c.type)},
                       "",
                       {{"HD", hd}, {"TPQ", tpq}, {"BQ", bq}, {"PF", pf ? 1 : 0}, {"KP", kp}}});
    b.dispatch(k, {q, Arg(c.k), Arg(c.v), pl.tables, pl.seqs, pl.items, pl.partials},
               Params(u32(a.n_heads), u32(a.n_kv_heads), u32(c.max_ctx), u32(a.block), u32(qs), u32(a.q_offset), scale,
                      u32(a.split_len), pl.n_splits, item0, u32(a.window), a.softcap),
               {n_items, u32(a.n_kv_heads), pl.n_splits});
  };
  dispatch(pl.decode_bq, dec_tpq, dec_pf, 0, pl.decode_items);
  dispatch(kPagedPrefillBq, s.tpq, false, pl.decode_items, pl.prefill_items);
}
}  // namespace wgc::llm
