#include "llm/model/llama_batched.h"

#include "llm/model/gpu_layer.h"
#include "llm/model/layer_split.h"
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
      if (s.rows < 1 || size_t(s.rows) > s.tokens.size())
        throw Error(which + "rows " + std::to_string(s.rows) + " (1.." + std::to_string(s.tokens.size()) +
                    ", the new tokens)");
      tokens += int64_t(s.tokens.size());
      rows += s.wants_logits() ? s.rows : 0;
    }
    if (opt.swa_blocks > 0)
      for (size_t i = 0; i < seqs.size(); ++i) check_swa_table(seqs[i], what + "sequence " + std::to_string(i) + ": ");
    if (tokens > opt.max_tokens)
      throw Error(what + std::to_string(tokens) + " tokens, at most " + std::to_string(opt.max_tokens));
    if (rows > opt.max_rows)
      throw Error(what + std::to_string(rows) + " rows of logits wanted, at most " + std::to_string(opt.max_rows));
  }

  // The sliding layers' table of s (BatchedOptions::swa_blocks): covering its positions, in the
  // pool, -1 only for blocks that end before the window of its first token.
  void check_swa_table(const StepSequence& s, const std::string& which) const {
    const int64_t B = opt.block_tokens, end = int64_t(s.pos0) + int64_t(s.tokens.size());
    const int64_t need = (end + B - 1) / B;
    if (int64_t(s.swa_blocks.size()) < need)
      throw Error(which + std::to_string(s.swa_blocks.size()) + " sliding-window blocks for " + std::to_string(end) +
                  " positions");
    const int64_t lo = std::max<int64_t>(0, int64_t(s.pos0) - window + 1);  // the first key a token sees
    for (int64_t b = 0; b < need; ++b) {
      const int32_t blk = s.swa_blocks[size_t(b)];
      if (blk == -1 && (b + 1) * B <= lo) continue;
      if (blk < 0 || blk >= opt.swa_blocks)
        throw Error(which + "sliding-window block " + std::to_string(blk) + " (positions " + std::to_string(b * B) +
                    ".." + std::to_string((b + 1) * B - 1) + ") outside the pool of " + std::to_string(opt.swa_blocks) +
                    (blk == -1 ? " (freed, but the window from position " + std::to_string(lo) + " reads it)" : ""));
    }
  }

  BatchedOptions opt;
  int window = 0;                 // the sliding-window layers' (swa_blocks)
  int last_k = 0, last_rows = 0;  // of the step submitted last: feed_row reads its top_ids
};

namespace {

// One micro-batch's results, read back from the last device.
struct GpuPart {
  std::vector<StepSequence> rows;  // per row of logits, its sequence, in order (their spans unused)
  int k = 0;
  Readback vals, ids, lse;
  std::vector<Readback> full;
};

struct GpuPending final : BatchedLlama::Pending::Impl {
  std::vector<Batch> batches;  // kept until collected (their readbacks)
  std::vector<GpuPart> parts;  // one per micro-batch, in order
};

// The GPU serving engine over the model's stages (layer_split.h): one GPU is one stage; a model
// split by layers over several GPUs is one stage per GPU, each with the KV pool of its layers. A
// step splits its sequences into micro-batches (one per GPU by default) and records them stage
// by stage: while the host waits for micro-batch m's hidden state to cross to the next GPU, the
// GPU before runs micro-batch m + 1, so the GPUs work at once. The kernels are batch-invariant,
// so the micro-batches change no logit.
struct GpuBatched final : BatchedLlama::Impl {
  // One device's share.
  struct Dev {
    ModelStage st;
    std::vector<KvLayer> pool;                    // per layer of the stage: [n_kv][blocks * block_tokens][hd]
    std::vector<bool> swa;                        // per layer: in the sliding-window pool (swa_blocks)
    GpuActs acts;                                 // the 8-bit copies where the plan quantizes (BatchedQ8)
    Tensor ids;                                   // first
    Tensor last, logits, top_vals, top_ids, lse;  // last
    GpuPlan plan;
    const LlamaWeights& w() const { return *st.w; }
    const LlmOps& ops() const { return *st.ops; }
  };
  std::vector<Dev> devs;
  LinearVersion lin = LinearVersion::Auto;
  uint64_t kv_total = 0;
  // The top ids of the previous step's micro-batches (row0, rows, k): a split resolves feed_row
  // on the host, since the argmax is on the last GPU and the tokens go into the first.
  struct PrevPart {
    Readback ids;
    int row0 = 0, rows = 0, k = 0;
  };
  std::vector<PrevPart> prev;

  GpuBatched(LlamaModel& m, BatchedOptions o) : Impl(o) {
    const std::string what = "wgc: serving engine: ";
    if (opt.micro_batches < 0) throw Error(what + "micro_batches " + std::to_string(opt.micro_batches) + " (>= 0)");
    const std::vector<ModelStage> stages = m.stages();
    const Context& ctx0 = stages.front().ctx;
    lin = opt.linear != LinearVersion::Auto ? opt.linear
          : ctx0.adapter().is_cpu()         ? LinearVersion::Naive
                                            : LinearVersion::BatchedQ8;
    const LlamaWeights& w0 = *stages.front().w;
    const int64_t slots = int64_t(opt.blocks) * opt.block_tokens;
    if (opt.swa_blocks < 0) throw Error(what + "swa_blocks " + std::to_string(opt.swa_blocks) + " (>= 0)");
    if (opt.swa_blocks > 0) {
      if (!w0.cfg.sliding_window || *w0.cfg.sliding_window <= 0)
        throw Error(what + "swa_blocks: the model has no sliding-window layers");
      window = int(std::min<int64_t>(*w0.cfg.sliding_window, INT32_MAX));
      if (int64_t(opt.swa_blocks) * opt.block_tokens >= (int64_t(1) << 31))
        throw Error(what + "a sliding-window pool of " + std::to_string(opt.swa_blocks) + " blocks (use fewer)");
    }
    const int64_t swa_slots = int64_t(opt.swa_blocks) * opt.block_tokens;
    // The pool stores the model's cache type (EngineOptions::cache_type).
    const KvType kv_type = m.cache_type();
    if (std::string why; !kv_type_fits(kv_type, int(w0.hd), &why)) throw Error(what + why);
    const uint64_t layer_bytes = uint64_t(kv_words(kv_type, slots * w0.nkv * w0.hd)) * 4;
    const int64_t T = opt.max_tokens, R = opt.max_rows;
    // The layers whose matrices are all Q4_0 / Q8_0 quantize their activations once, in the
    // RMSNorm and the SwiGLU (rms_norm_q8 with a fixed workgroup, swiglu_q8), for every linear
    // of the layer: fewer dispatches than quantizing before each linear (the plan's Serve rules).
    const bool q8 =
        lin == LinearVersion::BatchedQ8 && w0.hidden % 32 == 0 && (w0.nh * w0.hd) % 32 == 0 && w0.ffn % 32 == 0;
    for (const ModelStage& st : stages) {
      const Context& ctx = st.ctx;
      const LlamaWeights& w = *st.w;
      if (layer_bytes > ctx.limits().max_storage_buffer_binding_size || slots >= (int64_t(1) << 31))
        throw Error(what + "a KV pool of " + std::to_string(opt.blocks) + " blocks x " +
                    std::to_string(opt.block_tokens) + " tokens needs " + std::to_string(layer_bytes) +
                    " bytes per layer for K (and as much for V); the device binds at most " +
                    std::to_string(ctx.limits().max_storage_buffer_binding_size) + " (use fewer blocks)");
      Dev d;
      d.st = st;
      for (size_t l = 0; l < w.layers.size(); ++l) {
        const bool swa = opt.swa_blocks > 0 && layer_window(w.cfg, w.first_layer + int(l)) > 0;
        d.swa.push_back(swa);
        d.pool.push_back(make_kv_layer(ctx, int(w.nkv), int(swa ? swa_slots : slots), int(w.hd), kv_type));
        kv_total += 2 * uint64_t(kv_words(kv_type, int64_t(swa ? swa_slots : slots) * w.nkv * w.hd)) * 4;
      }
      if (st.first) d.ids = make_tensor(ctx, {T}, DType::U32);
      d.acts.x = make_tensor(ctx, {T, w.hidden});
      d.acts.h = make_tensor(ctx, {T, w.hidden});
      d.acts.qkv = make_tensor(ctx, {T, w.qkv_dim});
      d.acts.attn = make_tensor(ctx, {T, w.nh * w.hd});
      d.acts.gu = make_tensor(ctx, {T, 2 * w.ffn});
      d.acts.act = make_tensor(ctx, {T, w.ffn});
      d.acts.moe = make_moe_acts(ctx, w, int(T));
      if (st.last) {
        d.last = make_tensor(ctx, {R, w.hidden});
        d.logits = make_tensor(ctx, {R, w.vocab});
        d.top_vals = make_tensor(ctx, {R * 64});
        d.top_ids = make_tensor(ctx, {R * 64}, DType::U32);
        d.lse = make_tensor(ctx, {R});
      }
      if (q8) {
        d.acts.hq = make_q8_act(ctx, int(T), w.hidden);
        d.acts.attnq = make_q8_act(ctx, int(T), w.nh * w.hd);
        d.acts.actq = make_q8_act(ctx, int(T), w.ffn);
      }
      d.plan = plan_gpu(*st.ops, w, PlanMode::Serve, false, opt.plan_off, kv_type, q8);
      devs.push_back(std::move(d));
    }
  }

  const LlamaWeights& w0() const { return devs.front().w(); }
  int max_pos() const override { return devs.front().st.rope->max_pos; }
  int64_t vocab() const override { return w0().vocab; }
  uint64_t kv_bytes() const override { return kv_total; }
  bool overlaps() const override { return true; }

  // The sequences [begin, end) of each micro-batch: contiguous runs of about equal tokens, one
  // per device unless BatchedOptions::micro_batches says.
  std::vector<std::pair<size_t, size_t>> micro_batches(std::span<const StepSequence> seqs) const {
    const size_t want = opt.micro_batches > 0 ? size_t(opt.micro_batches) : devs.size();
    const size_t n = std::min(want, seqs.size());
    int64_t total = 0;
    for (const auto& s : seqs) total += int64_t(s.tokens.size());
    std::vector<std::pair<size_t, size_t>> r;
    size_t begin = 0;
    int64_t done = 0;
    for (size_t m = 0; m < n; ++m) {
      size_t end = begin + 1;  // at least one sequence, and one left for each later micro-batch
      done += int64_t(seqs[begin].tokens.size());
      const int64_t goal = total * int64_t(m + 1) / int64_t(n);
      while (end < seqs.size() - (n - 1 - m) && done + int64_t(seqs[end].tokens.size()) <= goal)
        done += int64_t(seqs[end++].tokens.size());
      if (m == n - 1) end = seqs.size();
      r.push_back({begin, end});
      begin = end;
    }
    return r;
  }

  // The token a split's feed_row asks for: the argmax of that row of the previous step (waits
  // for that micro-batch's readback only).
  int32_t fed_token(int row) const {
    for (const PrevPart& p : prev)
      if (row >= p.row0 && row < p.row0 + p.rows && p.k >= 1)
        return int32_t(p.ids.value<uint32_t>(size_t((row - p.row0) * p.k)));
    throw Error("wgc: serving step: feed_row " + std::to_string(row) +
                " is not a row of the previous step that asked for top_k >= 1");
  }

  std::unique_ptr<BatchedLlama::Pending::Impl> submit(std::span<const StepSequence> seqs) override {
    check(seqs);
    const auto mbs = micro_batches(seqs);
    // feed_row copies on the GPU where the previous step's top ids are still in top_ids: one GPU,
    // one micro-batch then and now. Else through the host.
    const bool host_feed = devs.size() > 1 || mbs.size() > 1 || prev.size() > 1;
    auto pending = std::make_unique<GpuPending>();
    GpuPending& p = *pending;
    p.parts.resize(mbs.size());
    std::vector<HiddenCrossing> cross(mbs.size());
    std::vector<PrevPart> now;
    int rows_before = 0;
    for (Dev& d : devs) {
      const LlamaWeights& w = d.w();
      const LlmOps& ops = d.ops();
      for (size_t mi = 0; mi < mbs.size(); ++mi) {
        const auto seq_mb = seqs.subspan(mbs[mi].first, mbs[mi].second - mbs[mi].first);
        std::vector<PagedSequence> ps, ps_swa;
        std::vector<uint32_t> tok_ids;
        for (const auto& s : seq_mb) {
          PagedSequence q;
          q.tok0 = int(tok_ids.size());
          q.n_tokens = int(s.tokens.size());
          q.pos0 = s.pos0;
          q.blocks.assign(s.blocks.begin(), s.blocks.end());
          ps.push_back(q);
          if (opt.swa_blocks > 0) {  // a freed block (-1) only holds keys read and masked: any block will do
            q.blocks.assign(s.swa_blocks.begin(), s.swa_blocks.end());
            for (int32_t& b : q.blocks) b = std::max(b, 0);
            ps_swa.push_back(std::move(q));
          }
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
        const PagedAttentionPlan paged_swa =
            opt.swa_blocks > 0 ? ops.plan_paged_attention(ps_swa, pa, opt.swa_blocks) : PagedAttentionPlan{};

        Batch b(d.st.ctx);
        if (d.st.first) {
          if (host_feed)  // e.g. the previous step's argmax crossing from the last GPU to the first
            for (size_t i = 0; i < seq_mb.size(); ++i)
              if (seq_mb[i].feed_row >= 0) tok_ids[size_t(ps[i].tok0)] = uint32_t(fed_token(seq_mb[i].feed_row));
          upload(d.st.ctx, d.ids, std::as_bytes(std::span(tok_ids)));
          if (!host_feed)
            for (size_t i = 0; i < seq_mb.size(); ++i)
              if (seq_mb[i].feed_row >= 0)
                b.copy(d.top_ids, uint64_t(seq_mb[i].feed_row) * uint64_t(last_k) * 4, d.ids, uint64_t(ps[i].tok0) * 4,
                       4);
          record_embedding(ops, b, w, d.ids, d.acts.x, n);
        } else {
          cross[mi].write(d.st.ctx, d.acts.x);
        }
        GpuPass pass;
        pass.n = n;
        pass.serve = true;
        pass.sliding_rope = d.st.sliding_rope;
        pass.lin = lin;
        pass.rope.n_tokens = n;  // q|k|v back to back in each qkv row
        pass.rope.n_heads = int(w.nh);
        pass.rope.stride = w.qkv_dim;
        pass.rope.positions = paged.positions;
        pass.rope.cache_rows = true;
        pass.paged = &paged;
        GpuPass pass_swa = pass;  // the sliding-window layers' pool: its table and cache rows
        pass_swa.rope.positions = paged_swa.positions;
        pass_swa.paged = &paged_swa;
        for (size_t li = 0; li < w.layers.size(); ++li)
          record_layer(ops, b, d.plan.layers[li], w, int(li), d.pool[li], *d.st.rope, d.acts,
                       d.swa[li] ? pass_swa : pass);
        if (!d.st.last) {
          cross[mi].read(b, d.acts.x, uint64_t(n) * uint64_t(w.hidden) * 4);
        } else {
          GpuPart& part = p.parts[mi];
          record_output(d, b, seq_mb, ps, part);
          now.push_back({part.ids, rows_before, int(part.rows.size()), part.k});
          rows_before += int(part.rows.size());
        }
        b.submit();
        p.batches.push_back(std::move(b));
      }
    }
    int k = 0;
    for (const GpuPart& part : p.parts) k = std::max(k, part.k);
    last_k = k;
    last_rows = rows_before;
    prev = std::move(now);
    return pending;
  }

  // The final norm and the logits of each wanting sequence's last `rows` tokens of a micro-batch,
  // with what the sequences ask read back.
  void record_output(Dev& d, Batch& b, std::span<const StepSequence> seqs, const std::vector<PagedSequence>& ps,
                     GpuPart& part) {
    const LlamaWeights& w = d.w();
    const LlmOps& ops = d.ops();
    std::vector<size_t> want;
    int k = 0;
    bool any_lse = false;
    const uint64_t row_bytes = uint64_t(w.hidden) * 4;
    for (size_t i = 0; i < seqs.size(); ++i) {
      if (!seqs[i].wants_logits()) continue;
      for (int r = seqs[i].rows; r >= 1; --r) {
        const uint64_t src = uint64_t(ps[i].tok0 + ps[i].n_tokens - r) * row_bytes;
        b.copy(d.acts.x, src, d.acts.h, uint64_t(want.size()) * row_bytes, row_bytes);
        want.push_back(i);
      }
      k = std::max(k, seqs[i].top_k);
      any_lse |= seqs[i].logsumexp;
    }
    part.k = k;
    for (size_t i : want) part.rows.push_back(seqs[i]);
    if (want.empty()) return;
    const int m = int(want.size());
    for (const Step& st : d.plan.output) {  // the wanted rows are side by side in h
      if (st.op == Op::Norm && !st.q8_out)
        ops.rms_norm(b, d.acts.h, w.norm, d.last, m, int(w.hidden), w.eps);
      else if (st.op == Op::Linear && !st.q8_in)
        record_linear(ops, b, w.output_group, d.last, d.logits, m, w.vocab, false, lin);
      else if (st.op == Op::Softcap)
        ops.softcap(b, d.logits, int64_t(m) * w.vocab, float(w.cfg.final_logit_softcap));
      else
        throw Error("wgc: the serving engine's output plan has a step it does not run: " + to_string(st));
    }
    if (k > 0) {
      ops.topk_rows(b, d.logits, m, w.vocab, k, d.top_vals, d.top_ids);
      part.vals = b.read(d.top_vals, 0, uint64_t(m) * uint64_t(k) * 4);
      part.ids = b.read(d.top_ids, 0, uint64_t(m) * uint64_t(k) * 4);
    }
    if (any_lse) {
      ops.row_logsumexp(b, d.logits, m, w.vocab, d.lse);
      part.lse = b.read(d.lse, 0, uint64_t(m) * 4);
    }
    part.full.resize(want.size());
    const uint64_t vocab_bytes = uint64_t(w.vocab) * 4;
    for (size_t r = 0; r < want.size(); ++r)
      if (seqs[want[r]].full) part.full[r] = b.read(d.logits, r * vocab_bytes, vocab_bytes);
  }

  std::vector<StepLogits> collect(BatchedLlama::Pending::Impl& pi) override {
    auto& p = static_cast<GpuPending&>(pi);
    std::vector<StepLogits> out;
    bool any_rows = false;
    for (GpuPart& part : p.parts) {
      any_rows |= !part.rows.empty();
      for (size_t r = 0; r < part.rows.size(); ++r) {
        const StepSequence& s = part.rows[r];
        StepLogits& o = out.emplace_back();
        if (s.top_k > 0) {
          auto vals = part.vals.wait();
          auto idb = part.ids.wait();
          o.top_logits.resize(size_t(s.top_k));
          o.top_ids.resize(size_t(s.top_k));
          std::memcpy(o.top_logits.data(), vals.data() + r * size_t(part.k) * 4, size_t(s.top_k) * 4);
          std::memcpy(o.top_ids.data(), idb.data() + r * size_t(part.k) * 4, size_t(s.top_k) * 4);
        }
        if (s.logsumexp) o.logsumexp = part.lse.value<float>(r);
        if (s.full) {
          o.logits.resize(size_t(vocab()));
          part.full[r].wait(std::as_writable_bytes(std::span(o.logits)));
        }
      }
    }
    // A timed batch (WGC_PROFILE) reads its timestamps in wait(), which also waits for a step
    // submitted after this one: profiles lose the pipelining.
    for (Batch& b : p.batches)
      if (!any_rows || b.timed()) b.wait();
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
    if (o.swa_blocks != 0)
      throw Error(
          "wgc: serving engine: swa_blocks (a pool of the sliding-window layers' own) is a GPU engine option; the "
          "CPU engine keeps every position of every layer (use 0)");
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
      cs[i].rows = s.rows;
      k = std::max(k, s.top_k);
    }
    const int64_t m = fwd.step(cs, pool, opt.block_tokens, false, logits);
    auto p = std::make_unique<CpuPending>();
    last_best.clear();
    const size_t V = size_t(w->vocab);
    int64_t r = 0;
    for (const StepSequence& s : seqs)
      for (int sr = 0; s.wants_logits() && sr < s.rows; ++sr) {
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
