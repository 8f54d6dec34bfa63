#include "llm/model/llama_batched.h"

#include "llm/model/llama_weights.h"
#include "util/error.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>

namespace wgc::llm {

struct BatchedLlama::Pending::Impl {
  std::optional<Batch> batch;      // kept until collected (its readbacks)
  std::vector<StepSequence> rows;  // the sequences with logits, in order (their spans unused)
  int k = 0;
  Readback vals, ids, lse;
  std::vector<Readback> full;
};

struct BatchedLlama::Impl {
  Context ctx;
  const LlamaWeights& w;
  const LlmOps& ops;
  const RopeTable& rope;
  BatchedOptions opt;
  LinearVersion lin = LinearVersion::Auto;
  std::vector<KvLayer> pool;  // per layer: [n_kv][blocks * block_tokens][hd]
  uint64_t kv_bytes = 0;
  Tensor ids, x, h, qkv, attn, gu, act, last, logits, top_vals, top_ids, lse;

  Impl(LlamaModel& m, BatchedOptions o) : ctx(m.context()), w(m.weights()), ops(m.ops()), rope(m.rope()), opt(o) {
    const std::string what = "wgc: serving engine: ";
    if (opt.max_tokens < 1 || opt.max_rows < 1 || opt.max_rows > opt.max_tokens)
      throw Error(what + "max_tokens " + std::to_string(opt.max_tokens) + " and max_rows " +
                  std::to_string(opt.max_rows) + " (need 1 <= max_rows <= max_tokens)");
    if (opt.block_tokens < 1 || opt.blocks < 1)
      throw Error(what + "the KV pool needs blocks (" + std::to_string(opt.blocks) + " of " +
                  std::to_string(opt.block_tokens) + " tokens)");
    if (opt.split_len < 16 || opt.split_len % 16)
      throw Error(what + "split_len " + std::to_string(opt.split_len) + " is not a positive multiple of 16");
    lin = opt.linear != LinearVersion::Auto ? opt.linear
          : ctx.adapter().is_cpu()          ? LinearVersion::Naive
                                            : LinearVersion::Batched;
    const int64_t slots = int64_t(opt.blocks) * opt.block_tokens;
    const uint64_t layer_bytes = uint64_t(slots) * uint64_t(w.nkv) * uint64_t(w.hd) * 4;
    if (layer_bytes > ctx.limits().max_storage_buffer_binding_size || slots >= (int64_t(1) << 31))
      throw Error(what + "a KV pool of " + std::to_string(opt.blocks) + " blocks x " +
                  std::to_string(opt.block_tokens) + " tokens needs " + std::to_string(layer_bytes) +
                  " bytes per layer for K (and as much for V); the device binds at most " +
                  std::to_string(ctx.limits().max_storage_buffer_binding_size) + " (use fewer blocks)");
    for (size_t l = 0; l < w.layers.size(); ++l) {
      KvLayer c;
      c.k = make_tensor(ctx, {slots * w.nkv * w.hd});
      c.v = make_tensor(ctx, {slots * w.nkv * w.hd});
      c.n_kv_heads = int(w.nkv);
      c.max_ctx = int(slots);
      c.head_dim = int(w.hd);
      pool.push_back(c);
      kv_bytes += 2 * layer_bytes;
    }
    const int64_t T = opt.max_tokens, R = opt.max_rows;
    ids = make_tensor(ctx, {T}, DType::U32);
    x = make_tensor(ctx, {T, w.hidden});
    h = make_tensor(ctx, {T, w.hidden});
    qkv = make_tensor(ctx, {T, w.qkv_dim});
    attn = make_tensor(ctx, {T, w.nh * w.hd});
    gu = make_tensor(ctx, {T, 2 * w.ffn});
    act = make_tensor(ctx, {T, w.ffn});
    last = make_tensor(ctx, {R, w.hidden});
    logits = make_tensor(ctx, {R, w.vocab});
    top_vals = make_tensor(ctx, {R * 64});
    top_ids = make_tensor(ctx, {R * 64}, DType::U32);
    lse = make_tensor(ctx, {R});
  }

  void check(std::span<const StepSequence> seqs) const {
    const std::string what = "wgc: serving step: ";
    if (seqs.empty()) throw Error(what + "no sequences");
    int64_t tokens = 0, rows = 0;
    for (size_t i = 0; i < seqs.size(); ++i) {
      const auto& s = seqs[i];
      const std::string which = what + "sequence " + std::to_string(i) + ": ";
      if (s.tokens.empty()) throw Error(which + "no tokens");
      if (s.feed_row >= 0 && (s.tokens.size() != 1 || s.feed_row >= last_rows || last_k < 1))
        throw Error(which + "feed_row " + std::to_string(s.feed_row) +
                    ": one token from a row of the previous step that asked for top_k >= 1 (it had " +
                    std::to_string(last_rows) + " rows, top_k " + std::to_string(last_k) + ")");
      for (int32_t id : s.tokens)
        if (id < 0 || id >= w.vocab)
          throw Error(which + "token id " + std::to_string(id) + " is outside the vocabulary (0.." +
                      std::to_string(w.vocab - 1) + ")");
      if (s.pos0 < 0 || int64_t(s.pos0) + int64_t(s.tokens.size()) > rope.max_pos)
        throw Error(which + "positions " + std::to_string(s.pos0) + "+" + std::to_string(s.tokens.size()) +
                    " past the context of " + std::to_string(rope.max_pos));
      if (s.top_k < 0 || s.top_k > 64 || s.top_k > w.vocab)
        throw Error(which + "top_k " + std::to_string(s.top_k) + " (0..64)");
      tokens += int64_t(s.tokens.size());
      rows += s.wants_logits() ? 1 : 0;
    }
    if (tokens > opt.max_tokens)
      throw Error(what + std::to_string(tokens) + " tokens, at most " + std::to_string(opt.max_tokens));
    if (rows > opt.max_rows)
      throw Error(what + std::to_string(rows) + " sequences want logits, at most " + std::to_string(opt.max_rows));
  }

  int last_k = 0, last_rows = 0;  // of the step submitted last: feed_row reads its top_ids

  Pending::Impl submit(std::span<const StepSequence> seqs) {
    check(seqs);
    std::vector<PagedSequence> ps;
    std::vector<uint32_t> tok_ids;
    for (const auto& s : seqs) {
      PagedSequence p;
      p.tok0 = int(tok_ids.size());
      p.n_tokens = int(s.tokens.size());
      p.pos0 = s.pos0;
      p.blocks.assign(s.blocks.begin(), s.blocks.end());
      ps.push_back(std::move(p));
      tok_ids.insert(tok_ids.end(), s.tokens.begin(), s.tokens.end());
    }
    const int n = int(tok_ids.size());
    PagedAttentionArgs pa;
    pa.n_heads = int(w.nh);
    pa.n_kv_heads = int(w.nkv);
    pa.head_dim = int(w.hd);
    pa.block = opt.block_tokens;
    pa.split_len = opt.split_len;
    pa.q_stride = w.qkv_dim;
    PagedAttentionPlan plan = ops.plan_paged_attention(ps, pa, opt.blocks);
    upload(ctx, ids, std::as_bytes(std::span(tok_ids)));

    Batch b(ctx);
    for (size_t i = 0; i < seqs.size(); ++i)
      if (seqs[i].feed_row >= 0)
        b.copy(top_ids, uint64_t(seqs[i].feed_row) * uint64_t(last_k) * 4, ids, uint64_t(ps[i].tok0) * 4, 4);
    ops.embedding(b, w.embed, ids, x, n);
    for (size_t li = 0; li < w.layers.size(); ++li) {
      const auto& L = w.layers[li];
      ops.rms_norm(b, x, L.ln1, h, n, int(w.hidden), w.eps);
      record_linear(ops, b, L.qkv, h, qkv, n, w.qkv_dim, false, lin);
      if (w.cfg.qk_norm) {
        ops.head_rms_norm(b, qkv, L.q_norm, n, int(w.nh), int(w.hd), w.qkv_dim, 0, w.eps);
        ops.head_rms_norm(b, qkv, L.k_norm, n, int(w.nkv), int(w.hd), w.qkv_dim, w.nh * w.hd, w.eps);
      }
      RopeKvArgs ra;  // q|k|v back to back in each qkv row
      ra.n_tokens = n;
      ra.n_heads = int(w.nh);
      ra.stride = w.qkv_dim;
      ra.positions = plan.positions;
      ra.cache_rows = true;
      ops.rope_kv_append(b, qkv, rope, pool[li], ra);
      ops.paged_attention(b, pool[li], qkv, attn, plan);
      record_linear(ops, b, L.o, attn, x, n, w.hidden, true, lin);
      ops.rms_norm(b, x, L.ln2, h, n, int(w.hidden), w.eps);
      record_linear(ops, b, L.gate_up, h, gu, n, 2 * w.ffn, false, lin);
      ops.swiglu(b, gu, 2 * w.ffn, 0, gu, 2 * w.ffn, w.ffn, act, n, int(w.ffn));
      record_linear(ops, b, L.down, act, x, n, w.hidden, true, lin);
    }

    // The final norm and the logits, only of each wanting sequence's last token.
    std::vector<size_t> want;
    int k = 0;
    bool any_lse = false;
    const uint64_t row_bytes = uint64_t(w.hidden) * 4;
    for (size_t i = 0; i < seqs.size(); ++i) {
      if (!seqs[i].wants_logits()) continue;
      const uint64_t src = uint64_t(ps[i].tok0 + ps[i].n_tokens - 1) * row_bytes;
      b.copy(x, src, h, uint64_t(want.size()) * row_bytes, row_bytes);
      want.push_back(i);
      k = std::max(k, seqs[i].top_k);
      any_lse |= seqs[i].logsumexp;
    }
    Pending::Impl p;
    p.k = k;
    for (size_t i : want) p.rows.push_back(seqs[i]);
    last_k = k;
    last_rows = int(want.size());
    if (want.empty()) {
      b.submit();
      p.batch = std::move(b);
      return p;
    }
    const int m = int(want.size());
    ops.rms_norm(b, h, w.norm, last, m, int(w.hidden), w.eps);
    LinearGroup out_group;
    out_group.parts = {w.output()};
    out_group.rows = {w.vocab};
    record_linear(ops, b, out_group, last, logits, m, w.vocab, false, lin);
    if (k > 0) {
      ops.topk_rows(b, logits, m, w.vocab, k, top_vals, top_ids);
      p.vals = b.read(top_vals, 0, uint64_t(m) * uint64_t(k) * 4);
      p.ids = b.read(top_ids, 0, uint64_t(m) * uint64_t(k) * 4);
    }
    if (any_lse) {
      ops.row_logsumexp(b, logits, m, w.vocab, lse);
      p.lse = b.read(lse, 0, uint64_t(m) * 4);
    }
    p.full.resize(want.size());
    const uint64_t vocab_bytes = uint64_t(w.vocab) * 4;
    for (size_t r = 0; r < want.size(); ++r)
      if (seqs[want[r]].full) p.full[r] = b.read(logits, r * vocab_bytes, vocab_bytes);
    b.submit();
    p.batch = std::move(b);
    return p;
  }

  std::vector<StepLogits> collect(Pending::Impl& p) {
    std::vector<StepLogits> out(p.rows.size());
    if (p.rows.empty()) p.batch->wait();
    for (size_t r = 0; r < p.rows.size(); ++r) {
      const StepSequence& s = p.rows[r];
      StepLogits& o = out[r];
      if (s.top_k > 0) {
        auto vals = p.vals.wait();
        auto idb = p.ids.wait();
        o.top_logits.resize(size_t(s.top_k));
        o.top_ids.resize(size_t(s.top_k));
        std::memcpy(o.top_logits.data(), vals.data() + r * size_t(p.k) * 4, size_t(s.top_k) * 4);
        std::memcpy(o.top_ids.data(), idb.data() + r * size_t(p.k) * 4, size_t(s.top_k) * 4);
      }
      if (s.logsumexp) o.logsumexp = p.lse.value<float>(r);
      if (s.full) {
        o.logits.resize(size_t(w.vocab));
        p.full[r].wait(std::as_writable_bytes(std::span(o.logits)));
      }
    }
    return out;
  }
};

BatchedLlama::Pending::Pending() = default;
BatchedLlama::Pending::~Pending() = default;
BatchedLlama::Pending::Pending(Pending&&) noexcept = default;
BatchedLlama::Pending& BatchedLlama::Pending::operator=(Pending&&) noexcept = default;

BatchedLlama::BatchedLlama(LlamaModel& model, BatchedOptions o) : impl_(std::make_unique<Impl>(model, o)) {}
BatchedLlama::~BatchedLlama() = default;
const BatchedOptions& BatchedLlama::options() const { return impl_->opt; }
int BatchedLlama::max_ctx() const { return impl_->rope.max_pos; }
uint64_t BatchedLlama::kv_bytes() const { return impl_->kv_bytes; }
std::vector<StepLogits> BatchedLlama::step(std::span<const StepSequence> seqs) {
  Pending p = submit(seqs);
  return collect(p);
}
BatchedLlama::Pending BatchedLlama::submit(std::span<const StepSequence> seqs) {
  Pending p;
  p.impl_ = std::make_unique<Pending::Impl>(impl_->submit(seqs));
  return p;
}
std::vector<StepLogits> BatchedLlama::collect(Pending& p) {
  if (!p) throw Error("wgc: serving step: collect of a step that was not submitted (or collected already)");
  auto out = impl_->collect(*p.impl_);
  p.impl_.reset();
  return out;
}

}  // namespace wgc::llm
