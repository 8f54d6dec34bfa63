#include "llm/model/llama_batched.h"

#include "llm/model/gpu_layer.h"
#include "llm/model/llama_cpu.h"
#include "llm/model/llama_weights.h"
#include "util/error.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <string>

namespace wgc::llm {

// A submitted step, until collected.
struct BatchedLlama::Pending::Impl {
  virtual ~Impl() = default;
};

// The two engines' serving forward: the GPU one (one submit per step) and the CPU one.
struct BatchedLlama::Impl {
  explicit Impl(BatchedOptions o) : opt(o) {
    const std::string what = "wgc: serving engine: ";
    if (opt.max_tokens < 1 || opt.max_rows < 1 || opt.max_rows > opt.max_tokens)
      throw Error(what + "max_tokens " + std::to_string(opt.max_tokens) + " and max_rows " +
                  std::to_string(opt.max_rows) + " (need 1 <= max_rows <= max_tokens)");
    if (opt.block_tokens < 1 || opt.blocks < 1)
      throw Error(what + "the KV pool needs blocks (" + std::to_string(opt.blocks) + " of " +
                  std::to_string(opt.block_tokens) + " tokens)");
    if (opt.split_len < 16 || opt.split_len % 16)
      throw Error(what + "split_len " + std::to_string(opt.split_len) + " is not a positive multiple of 16");
  }
  virtual ~Impl() = default;
  virtual int max_pos() const = 0;
  virtual int64_t vocab() const = 0;
  virtual uint64_t kv_bytes() const = 0;
  virtual bool overlaps() const = 0;
  virtual std::unique_ptr<Pending::Impl> submit(std::span<const StepSequence> seqs) = 0;
  virtual std::vector<StepLogits> collect(Pending::Impl& p) = 0;

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
        if (id < 0 || id >= vocab())
          throw Error(which + "token id " + std::to_string(id) + " is outside the vocabulary (0.." +
                      std::to_string(vocab() - 1) + ")");
      if (s.pos0 < 0 || int64_t(s.pos0) + int64_t(s.tokens.size()) > max_pos())
        throw Error(which + "positions " + std::to_string(s.pos0) + "+" + std::to_string(s.tokens.size()) +
                    " past the context of " + std::to_string(max_pos()));
      if (s.top_k < 0 || s.top_k > 64 || s.top_k > vocab())
        throw Error(which + "top_k " + std::to_string(s.top_k) + " (0..64)");
      tokens += int64_t(s.tokens.size());
      rows += s.wants_logits() ? 1 : 0;
    }
    if (tokens > opt.max_tokens)
      throw Error(what + std::to_string(tokens) + " tokens, at most " + std::to_string(opt.max_tokens));
    if (rows > opt.max_rows)
      throw Error(what + std::to_string(rows) + " sequences want logits, at most " + std::to_string(opt.max_rows));
  }

  BatchedOptions opt;
  int last_k = 0, last_rows = 0;  // of the step submitted last: feed_row reads its top_ids
};

namespace {

struct GpuPending final : BatchedLlama::Pending::Impl {
  std::optional<Batch> batch;      // kept until collected (its readbacks)
  std::vector<StepSequence> rows;  // the sequences with logits, in order (their spans unused)
  int k = 0;
  Readback vals, ids, lse;
  std::vector<Readback> full;
};

struct GpuBatched final : BatchedLlama::Impl {
  Context ctx;
  const LlamaWeights& w;
  const LlmOps& ops;
  const RopeTable& rope;
  const RopeTable* sliding_rope;
  LinearVersion lin = LinearVersion::Auto;
  std::vector<KvLayer> pool;  // per layer: [n_kv][blocks * block_tokens][hd]
  uint64_t kv_total = 0;
  GpuActs acts;  // the 8-bit copies where the plan quantizes (BatchedQ8)
  Tensor ids, last, logits, top_vals, top_ids, lse;
  GpuPlan plan;

  GpuBatched(LlamaModel& m, BatchedOptions o)
      : Impl(o), ctx(m.context()), w(m.weights()), ops(m.ops()), rope(m.rope()), sliding_rope(m.sliding_rope()) {
    const std::string what = "wgc: serving engine: ";
    lin = opt.linear != LinearVersion::Auto ? opt.linear
          : ctx.adapter().is_cpu()          ? LinearVersion::Naive
                                            : LinearVersion::BatchedQ8;
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
      kv_total += 2 * layer_bytes;
    }
    const int64_t T = opt.max_tokens, R = opt.max_rows;
    ids = make_tensor(ctx, {T}, DType::U32);
    acts.x = make_tensor(ctx, {T, w.hidden});
    acts.h = make_tensor(ctx, {T, w.hidden});
    acts.qkv = make_tensor(ctx, {T, w.qkv_dim});
    acts.attn = make_tensor(ctx, {T, w.nh * w.hd});
    acts.gu = make_tensor(ctx, {T, 2 * w.ffn});
    acts.act = make_tensor(ctx, {T, w.ffn});
    acts.moe = make_moe_acts(ctx, w, int(T));
    last = make_tensor(ctx, {R, w.hidden});
    logits = make_tensor(ctx, {R, w.vocab});
    top_vals = make_tensor(ctx, {R * 64});
    top_ids = make_tensor(ctx, {R * 64}, DType::U32);
    lse = make_tensor(ctx, {R});
    // The layers whose matrices are all Q4_0 / Q8_0 quantize their activations once, in the
    // RMSNorm and the SwiGLU (rms_norm_q8 with a fixed workgroup, swiglu_q8), for every linear
    // of the layer: fewer dispatches than quantizing before each linear (the plan's Serve rules).
    const bool q8 = lin == LinearVersion::BatchedQ8 && w.hidden % 32 == 0 && (w.nh * w.hd) % 32 == 0 && w.ffn % 32 == 0;
    if (q8) {
      acts.hq = make_q8_act(ctx, int(T), w.hidden);
      acts.attnq = make_q8_act(ctx, int(T), w.nh * w.hd);
      acts.actq = make_q8_act(ctx, int(T), w.ffn);
    }
    plan = plan_gpu(ops, w, PlanMode::Serve, false, opt.plan_off, q8);
  }

  int max_pos() const override { return rope.max_pos; }
  int64_t vocab() const override { return w.vocab; }
  uint64_t kv_bytes() const override { return kv_total; }
  bool overlaps() const override { return true; }

  std::unique_ptr<BatchedLlama::Pending::Impl> submit(std::span<const StepSequence> seqs) override {
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
    const PagedAttentionPlan paged = ops.plan_paged_attention(ps, pa, opt.blocks);
    upload(ctx, ids, std::as_bytes(std::span(tok_ids)));

    Batch b(ctx);
    for (size_t i = 0; i < seqs.size(); ++i)
      if (seqs[i].feed_row >= 0)
        b.copy(top_ids, uint64_t(seqs[i].feed_row) * uint64_t(last_k) * 4, ids, uint64_t(ps[i].tok0) * 4, 4);
    ops.embedding(b, w.embed, ids, acts.x, n);
    if (w.cfg.embedding_scale != 1.0) ops.scale(b, acts.x, int64_t(n) * w.hidden, float(w.cfg.embedding_scale));
    GpuPass pass;
    pass.n = n;
    pass.serve = true;
    pass.sliding_rope = sliding_rope;
    pass.lin = lin;
    pass.rope.n_tokens = n;  // q|k|v back to back in each qkv row
    pass.rope.n_heads = int(w.nh);
    pass.rope.stride = w.qkv_dim;
    pass.rope.positions = paged.positions;
    pass.rope.cache_rows = true;
    pass.paged = &paged;
    for (size_t li = 0; li < w.layers.size(); ++li)
      record_layer(ops, b, plan.layers[li], w, int(li), pool[li], rope, acts, pass);

    // The final norm and the logits, only of each wanting sequence's last token.
    std::vector<size_t> want;
    int k = 0;
    bool any_lse = false;
    const uint64_t row_bytes = uint64_t(w.hidden) * 4;
    for (size_t i = 0; i < seqs.size(); ++i) {
      if (!seqs[i].wants_logits()) continue;
      const uint64_t src = uint64_t(ps[i].tok0 + ps[i].n_tokens - 1) * row_bytes;
      b.copy(acts.x, src, acts.h, uint64_t(want.size()) * row_bytes, row_bytes);
      want.push_back(i);
      k = std::max(k, seqs[i].top_k);
      any_lse |= seqs[i].logsumexp;
    }
    auto pending = std::make_unique<GpuPending>();
    GpuPending& p = *pending;
    p.k = k;
    for (size_t i : want) p.rows.push_back(seqs[i]);
    last_k = k;
    last_rows = int(want.size());
    if (want.empty()) {
      b.submit();
      p.batch = std::move(b);
      return pending;
    }
    const int m = int(want.size());
    for (const Step& st : plan.output) {  // the wanted rows are side by side in h
      if (st.op == Op::Norm && !st.q8_out)
        ops.rms_norm(b, acts.h, w.norm, last, m, int(w.hidden), w.eps);
      else if (st.op == Op::Linear && !st.q8_in)
        record_linear(ops, b, w.output_group, last, logits, m, w.vocab, false, lin);
      else if (st.op == Op::Softcap)
        ops.softcap(b, logits, int64_t(m) * w.vocab, float(w.cfg.final_logit_softcap));
      else
        throw Error("wgc: the serving engine's output plan has a step it does not run: " + to_string(st));
    }
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
    return pending;
  }

  std::vector<StepLogits> collect(BatchedLlama::Pending::Impl& pi) override {
    auto& p = static_cast<GpuPending&>(pi);
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
    // A timed batch (WGC_PROFILE) reads its timestamps in wait(), which also waits for a step
    // submitted after this one: profiles lose the pipelining.
    if (!p.rows.empty() && p.batch->timed()) p.batch->wait();
    return out;
  }
};

// ---- the CPU engine ------------------------------------------------------------------------------

struct CpuPending final : BatchedLlama::Pending::Impl {
  std::vector<StepLogits> out;
};

struct CpuBatched final : BatchedLlama::Impl {
  std::shared_ptr<const CpuWeights> w;
  int positions = 0;
  CpuForward fwd;
  CpuKvCache pool;
  std::vector<int32_t> last_best;  // the argmax of each row of the step before (for feed_row)
  std::vector<float> logits;

  CpuBatched(LlamaModel& m, BatchedOptions o)
      : Impl(o),
        w(m.cpu_weights()),
        positions(m.max_ctx()),
        fwd(w, m.cpu_threads(), o.max_tokens, m.max_ctx()),
        pool(*w, checked_slots(o)) {
    if (o.linear != LinearVersion::Auto)
      throw Error(
          "wgc: serving engine: the linear kernel version is a GPU engine option; this model runs on the "
          "CPU engine (use Auto)");
  }
  static int64_t checked_slots(const BatchedOptions& o) {
    const int64_t slots = int64_t(o.blocks) * o.block_tokens;
    if (slots >= (int64_t(1) << 31))
      throw Error("wgc: serving engine: a KV pool of " + std::to_string(o.blocks) + " blocks x " +
                  std::to_string(o.block_tokens) + " tokens (use fewer blocks)");
    return slots;
  }

  int max_pos() const override { return positions; }
  int64_t vocab() const override { return w->vocab; }
  uint64_t kv_bytes() const override { return pool.bytes(); }
  bool overlaps() const override { return false; }

  std::unique_ptr<BatchedLlama::Pending::Impl> submit(std::span<const StepSequence> seqs) override {
    check(seqs);
    std::vector<int32_t> fed(seqs.size());
    std::vector<CpuSequence> cs(seqs.size());
    int k = 0;
    for (size_t i = 0; i < seqs.size(); ++i) {
      const StepSequence& s = seqs[i];
      const std::string which = "wgc: serving step: sequence " + std::to_string(i) + ": ";
      const int64_t need = (int64_t(s.pos0) + int64_t(s.tokens.size()) + opt.block_tokens - 1) / opt.block_tokens;
      if (int64_t(s.blocks.size()) < need)
        throw Error(which + std::to_string(s.blocks.size()) + " blocks for " +
                    std::to_string(s.pos0 + int64_t(s.tokens.size())) + " positions");
      for (int64_t b = 0; b < need; ++b)
        if (s.blocks[size_t(b)] < 0 || s.blocks[size_t(b)] >= opt.blocks)
          throw Error(which + "block " + std::to_string(s.blocks[size_t(b)]) + " outside the pool of " +
                      std::to_string(opt.blocks));
      cs[i].tokens = s.tokens;
      if (s.feed_row >= 0) {
        fed[i] = last_best[size_t(s.feed_row)];
        cs[i].tokens = std::span<const int32_t>(&fed[i], 1);
      }
      cs[i].pos0 = s.pos0;
      cs[i].blocks = s.blocks;
      cs[i].logits = s.wants_logits();
      k = std::max(k, s.top_k);
    }
    const int64_t m = fwd.step(cs, pool, opt.block_tokens, false, logits);
    auto p = std::make_unique<CpuPending>();
    last_best.clear();
    const size_t V = size_t(w->vocab);
    int64_t r = 0;
    for (const StepSequence& s : seqs) {
      if (!s.wants_logits()) continue;
      const float* row = logits.data() + size_t(r++) * V;
      StepLogits o;
      // The best k, best first (ties: the lower id, as the GPU's top-k).
      std::vector<int32_t> ids(V);
      for (size_t i = 0; i < V; ++i) ids[i] = int32_t(i);
      const size_t kk = size_t(std::max(s.top_k, 1));
      std::partial_sort(ids.begin(), ids.begin() + std::ptrdiff_t(kk), ids.end(),
                        [&](int32_t a, int32_t b) { return row[a] > row[b] || (row[a] == row[b] && a < b); });
      last_best.push_back(ids[0]);
      for (int i = 0; i < s.top_k; ++i) {
        o.top_ids.push_back(ids[size_t(i)]);
        o.top_logits.push_back(row[ids[size_t(i)]]);
      }
      if (s.logsumexp) {
        const float mx = *std::max_element(row, row + V);
        double sum = 0;
        for (size_t i = 0; i < V; ++i) sum += std::exp(double(row[i]) - double(mx));
        o.logsumexp = float(double(mx) + std::log(sum));
      }
      if (s.full) o.logits.assign(row, row + V);
      p->out.push_back(std::move(o));
    }
    (void)m;
    last_k = k;
    last_rows = int(p->out.size());
    return p;
  }

  std::vector<StepLogits> collect(BatchedLlama::Pending::Impl& p) override {
    return std::move(static_cast<CpuPending&>(p).out);
  }
};

std::unique_ptr<BatchedLlama::Impl> make_batched(LlamaModel& model, BatchedOptions o) {
  if (model.device() == Device::Cpu) return std::make_unique<CpuBatched>(model, o);
  return std::make_unique<GpuBatched>(model, o);
}

}  // namespace

BatchedLlama::Pending::Pending() = default;
BatchedLlama::Pending::~Pending() = default;
BatchedLlama::Pending::Pending(Pending&&) noexcept = default;
BatchedLlama::Pending& BatchedLlama::Pending::operator=(Pending&&) noexcept = default;

BatchedLlama::BatchedLlama(LlamaModel& model, BatchedOptions o) : impl_(make_batched(model, o)) {}
BatchedLlama::~BatchedLlama() = default;
const BatchedOptions& BatchedLlama::options() const { return impl_->opt; }
int BatchedLlama::max_ctx() const { return impl_->max_pos(); }
uint64_t BatchedLlama::kv_bytes() const { return impl_->kv_bytes(); }
bool BatchedLlama::overlaps() const { return impl_->overlaps(); }
std::vector<StepLogits> BatchedLlama::step(std::span<const StepSequence> seqs) {
  Pending p = submit(seqs);
  return collect(p);
}
BatchedLlama::Pending BatchedLlama::submit(std::span<const StepSequence> seqs) {
  Pending p;
  p.impl_ = impl_->submit(seqs);
  return p;
}
std::vector<StepLogits> BatchedLlama::collect(Pending& p) {
  if (!p) throw Error("wgc: serving step: collect of a step that was not submitted (or collected already)");
  auto out = impl_->collect(*p.impl_);
  p.impl_.reset();
  return out;
}

}  // namespace wgc::llm
