#include "llm/model/llama.h"

#include "cpu/llm/cpu_features.h"
#include "llm/model/llama_cpu.h"
#include "llm/model/llama_engine.h"
#include "llm/model/llama_weights.h"
#include "util/error.h"

#include <chrono>
#include <cmath>
#include <cstring>
#include <deque>
#include <optional>
#include <string>

namespace wgc::llm {

namespace {

// EngineOptions::max_ctx resolved (llama_engine.h), checked against the device and the host before
// the weights are uploaded (ModelConfig::validate bounds the file's to 32 bits).
int gpu_context_length(const Context& ctx, const ModelFile& f, const EngineOptions& o) {
  const int max_ctx = resolve_max_ctx(f.config(), o);
  check_llama_context(ctx, f.config(), max_ctx, f.path().string());
  return max_ctx;
}

// The GPU engine: one submit per forward step.
class GpuEngine final : public LlamaEngine {
 public:
  Context ctx;
  EngineOptions opt;
  LlmOps ops;
  int max_ctx = 0;  // before `w`: checked before the weights are uploaded
  LlamaWeights w;
  const ModelConfig& cfg;
  int64_t hidden = 0, nh = 0, nkv = 0, hd = 0, ffn = 0, vocab = 0, qkv_dim = 0;
  float eps = 1e-5f;
  const std::vector<LlamaLayer>& layers;
  RopeTable rope;
  KvCache kv;

  // Activations for up to opt.max_batch tokens (q8: the 8-bit copies of the projections' inputs).
  Tensor ids, x, h, qkv, attn, gu, act, last, logit_buf, logits1, out_id, top_vals, top_ids;
  Q8Act xq, aq, fq;
  int64_t logits_rows = 0;
  // Single-token steps: recordings (made on first use) of the embedding of out_id's token into
  // x; of the layers and the output projection into logits1, the token's position read from pos
  // (u32 [2]: position, cache row); and of the argmax of logits1 into out_id, or next_token's
  // (tuning.next_token: the argmax that also leaves the next step's embedding in x and advances
  // pos). x_next: the work submitted last ended with next_token, so x holds out_id's embedding;
  // pos_on_gpu: what pos holds once the work submitted and the uploads queued so far have run
  // (-1: not known).
  Tensor pos;
  Recording step_embed, step, step_argmax, step_next;
  bool x_next = false;
  int pos_on_gpu = -1;
  // One-token steps as one dispatch per layer (tuning.layer_decode, decode_layer): its scratch
  // (for the attention's splits of lscr_wgs) and every layer's two norm weights side by side,
  // made on first use; layer_used: a step ran them since the error word was last checked.
  LayerScratch lscr;
  uint32_t lscr_wgs = 0;
  Tensor layer_norms;
  bool layer_used = false;

  GpuEngine(const Context& c, const ModelFile& f, EngineOptions o)
      : ctx(c),
        opt(o),
        ops(c),
        max_ctx(gpu_context_length(c, f, o)),
        w(upload_llama_weights(c, f, o.rope_theta, o.rope_scaling)),
        cfg(w.cfg),
        layers(w.layers) {
    ops.tuning = opt.tuning;
    hidden = w.hidden;
    nh = w.nh;
    nkv = w.nkv;
    hd = w.hd;
    ffn = w.ffn;
    vocab = w.vocab;
    eps = w.eps;
    qkv_dim = w.qkv_dim;
    max_ctx_ = max_ctx;
    opt.max_batch = std::max(1, std::min(opt.max_batch, max_ctx_));
    max_batch_ = opt.max_batch;
    ops.precompile(w.types, {int(hd)});

    rope = make_llama_rope(ctx, cfg, max_ctx_);
    kv = make_kv_cache(ctx, int(cfg.n_layers), int(nkv), max_ctx_, int(hd));

    const int64_t B = opt.max_batch;
    ids = make_tensor(ctx, {B}, DType::U32);
    x = make_tensor(ctx, {B, hidden});
    h = make_tensor(ctx, {B, hidden});
    qkv = make_tensor(ctx, {B, qkv_dim});
    attn = make_tensor(ctx, {B, nh * hd});
    gu = make_tensor(ctx, {B, 2 * ffn});
    act = make_tensor(ctx, {B, ffn});
    last = make_tensor(ctx, {hidden});
    logits1 = make_tensor(ctx, {vocab});
    out_id = make_tensor(ctx, {1}, DType::U32);
    top_vals = make_tensor(ctx, {64});
    top_ids = make_tensor(ctx, {64}, DType::U32);
    pos = make_tensor(ctx, {2}, DType::U32);
    bool any_q8 = q8(output());
    for (const auto& L : layers) any_q8 = any_q8 || q8(L.qkv) || q8(L.o) || q8(L.gate_up) || q8(L.down);
    if (any_q8) {  // quantized weights have whole blocks of 32 along their inputs
      xq = make_q8_act(ctx, int(B), hidden);
      aq = make_q8_act(ctx, int(B), nh * hd);
      fq = make_q8_act(ctx, int(B), ffn);
    }
  }

  bool q8(const LinearGroup& g) const { return opt.q8_activations && group_q8(g); }
  // gate|up as one weight without bias, for the fused f32 gate|up + SwiGLU matvec (GPU adapters).
  bool fused_gate_up(const LlamaLayer& L) const {
    return ops.tuning.matvec_swiglu && !ctx.adapter().is_cpu() && L.gate_up.parts.size() == 1 &&
           L.gate_up.biases.empty() && ffn % std::max<int64_t>(1, ops.tuning.swiglu_wg_rows / 2) == 0;
  }
  bool q8(const GpuWeight& g) const { return opt.q8_activations && supports_q8(g.type); }

  // y[t, off + ...] = group x (each part writing its rows side by side), optionally accumulating.
  void linear(Batch& b, const LinearGroup& g, const Tensor& in, const Tensor& y, int n, int64_t y_stride,
              bool accumulate) {
    record_linear(ops, b, g, in, y, n, y_stride, accumulate);
  }

  // A single token goes to out_id, where every one-token pass reads it (the recorded step's
  // argmax leaves the next step's token there: no copy between steps); more go to ids.
  void upload_ids(std::span<const int32_t> tokens) {
    x_next = false;
    std::vector<uint32_t> u(tokens.begin(), tokens.end());
    upload(ctx, u.size() == 1 ? out_id : ids, std::as_bytes(std::span(u)));
  }

  // Whether one-token steps run one dispatch per layer (tuning.layer_decode, where the model's
  // layers fit decode_layer); makes the scratch and the norms' copy the first time.
  bool layer_steps() {
    if (!ops.tuning.layer_decode || layers.size() < 2 || cfg.qk_norm) return false;
    const TensorType t = layers[0].qkv.parts.empty() ? TensorType::F32 : layers[0].qkv.parts[0].type;
    for (const auto& L : layers)
      for (const LinearGroup* g : {&L.qkv, &L.o, &L.gate_up, &L.down})
        if (g->parts.size() != 1 || !g->biases.empty() || g->parts[0].type != t) return false;
    if (!lscr.words || lscr_wgs != ops.tuning.attn_dec_wgs) {
      lscr = ops.make_decode_layer_scratch(int(layers.size()), hidden, ffn, int(nh), int(nkv), int(hd), max_ctx_);
      lscr_wgs = ops.tuning.attn_dec_wgs;
    }
    if (!ops.decode_layer_unfit(lscr, t).empty()) return false;
    if (!layer_norms) {
      layer_norms = make_tensor(ctx, {int64_t(layers.size()) * 2 * hidden});
      Batch b(ctx);
      const uint64_t bytes = uint64_t(hidden) * 4;
      for (size_t li = 0; li < layers.size(); ++li) {
        b.copy(layers[li].ln1, 0, layer_norms, 2 * li * bytes, bytes);
        b.copy(layers[li].ln2, 0, layer_norms, (2 * li + 1) * bytes, bytes);
      }
      b.run();
    }
    return true;
  }
  // The layers of a one-token step at the position in `pos`, one dispatch each; the residual
  // stream starts and ends in the scratch's first words.
  void record_layer_steps(Batch& b) {
    record_embedding(b, 1, lscr.words);
    const int nl = int(layers.size());
    for (int li = 0; li < nl; ++li) {
      const LlamaLayer& L = layers[size_t(li)];
      DecodeLayerArgs a;
      a.qkv = &L.qkv.parts[0];
      a.o = &L.o.parts[0];
      a.gate_up = &L.gate_up.parts[0];
      a.down = &L.down.parts[0];
      a.norms = layer_norms;
      a.ln1 = uint32_t(2 * li * hidden);
      a.ln2 = uint32_t((2 * li + 1) * hidden);
      a.eps = eps;
      a.rope = &rope;
      a.positions = pos;
      a.region = int(layer_region(li, nl));
      a.next = int(layer_region((li + 1) % nl, nl));
      ops.decode_layer(b, lscr, kv.layer(li), a);
    }
    layer_used = true;
  }
  // After steps that ran decode_layer: an error if one of its waits gave up (wrong logits).
  void check_layer_steps() {
    if (!layer_used) return;
    layer_used = false;
    if (layer_scratch_failed(ctx, lscr))
      throw Error(
          "wgc: a one-dispatch decoder layer gave up waiting for its own work items (this GPU does not keep "
          "running workgroups running); its tokens are wrong. Run with --tuning layer_decode=0.");
  }

  // Records the layers for n tokens at n_past_ whose ids are in `ids` (one: in out_id, see
  // upload_ids); returns the tensor that holds the residual stream after them (x, or the layer
  // steps' scratch). dyn (one token): the position comes from `pos` when the batch runs (for
  // recordings). embed false: x already holds the tokens' embeddings (the layer steps always
  // embed into their scratch).
  const Tensor& record_layers(Batch& b, int n, bool dyn = false, bool embed = true) {
    x_next = false;
    if (dyn && n == 1 && layer_steps()) {
      record_layer_steps(b);
      return lscr.words;
    }
    if (embed) record_embedding(b, n, x);
    const bool fuse_norm_q8 = n == 1 && fuses_norm_q8(), fuse_norm_f32 = n == 1 && fuses_norm_f32();
    for (size_t li = 0; li < layers.size(); ++li) {
      auto& L = layers[li];
      KvLayer cache = kv.layer(int(li));
      RopeKvArgs ra;  // q|k|v back to back in each qkv row
      ra.n_tokens = n;
      ra.n_heads = int(nh);
      ra.stride = qkv_dim;
      ra.pos0 = n_past_;
      if (dyn) {  // pos holds the position and the cache row
        ra.positions = pos;
        ra.cache_rows = true;
      }
      // One token: RoPE and the cache append in the QKV matvec (no head norms between them), one
      // dispatch per part (Q4_K_M: q|k, then v of another type).
      const bool qkv_rope = q8(L.qkv) && fuse_norm_q8 && ops.tuning.mvq_rope && !cfg.qk_norm && L.qkv.biases.empty() &&
                            ops.fuses_rope_q8(hidden);
      // The same with f32 activations (F16, BF16, F32 weights) on GPUs.
      const bool qkv_rope32 = !q8(L.qkv) && fuse_norm_f32 && ops.tuning.matvec_rope && !cfg.qk_norm &&
                              L.qkv.parts.size() == 1 && L.qkv.biases.empty() && ops.fuses_rope(hidden);
      if (qkv_rope) {
        int64_t row0 = 0;
        for (const GpuWeight& part : L.qkv.parts) {
          ops.rms_norm_qkv_rope_q8(b, x, L.ln1, eps, part, qkv, rope, cache, ra, row0);
          row0 += part.rows;
        }
      } else if (qkv_rope32) {
        ops.rms_norm_qkv_rope(b, x, L.ln1, eps, L.qkv.parts[0], qkv, rope, cache, ra);
      } else if (q8(L.qkv) && fuse_norm_q8) {
        record_rms_norm_linear_q8(ops, b, L.qkv, x, L.ln1, eps, qkv, qkv_dim, false);
      } else if (q8(L.qkv)) {
        ops.rms_norm_q8(b, x, L.ln1, xq, n, eps);
        record_linear_q8(ops, b, L.qkv, xq, qkv, n, qkv_dim, false);
      } else if (fuse_norm_f32 && L.qkv.biases.empty()) {
        record_rms_norm_linear(ops, b, L.qkv, x, L.ln1, eps, qkv, qkv_dim, false);
      } else {
        ops.rms_norm(b, x, L.ln1, h, n, int(hidden), eps);
        linear(b, L.qkv, h, qkv, n, qkv_dim, false);
      }
      if (cfg.qk_norm) {
        ops.head_rms_norm(b, qkv, L.q_norm, n, int(nh), int(hd), qkv_dim, 0, eps);
        ops.head_rms_norm(b, qkv, L.k_norm, n, int(nkv), int(hd), qkv_dim, nh * hd, eps);
      }
      if (!qkv_rope && !qkv_rope32) ops.rope_kv_append(b, qkv, rope, cache, ra);
      AttentionArgs aa;
      aa.n_tokens = n;
      aa.n_heads = int(nh);
      aa.start = n_past_;
      aa.q_stride = qkv_dim;
      if (dyn) aa.start_from = pos;
      if (q8(L.o)) {
        if (n == 1 && hd % 32 == 0) {
          ops.attention_decode_q8(b, cache, qkv, aq, aa);
        } else {
          ops.attention(b, cache, qkv, attn, aa);
          ops.quantize_q8(b, attn, aq, n);
        }
        record_linear_q8(ops, b, L.o, aq, x, n, hidden, true);
      } else if (n == 1 && fuse_norm_f32 && L.o.parts.size() == 1 && L.o.biases.empty() && ops.tuning.matvec_combine) {
        // One token: the attention's combine pass folded into the o projection where it fits.
        const DecodePartials dp = ops.attention_decode_partials(b, cache, qkv, aa);
        LinearOptions lo;
        lo.accumulate = true;
        if (ops.fuses_combine(L.o.parts[0].type, dp)) {
          ops.combine_linear(b, dp, L.o.parts[0], x, lo);
        } else {
          ops.attention_combine(b, dp, attn);
          linear(b, L.o, attn, x, n, hidden, true);
        }
      } else {
        ops.attention(b, cache, qkv, attn, aa);
        linear(b, L.o, attn, x, n, hidden, true);
      }
      const bool gu8 = q8(L.gate_up);
      // One token: gate|up, SwiGLU and quantization at once (and the RMSNorm before them).
      const bool swiglu8 =
          gu8 && q8(L.down) && n == 1 && L.gate_up.parts.size() == 1 && L.gate_up.biases.empty() && ffn % 32 == 0;
      // The same with f32 activations on a GPU (on CPU adapters the one-output-per-invocation
      // kernels are far faster than the cooperative matvec).
      const bool swiglu32 = !gu8 && !q8(L.down) && n == 1 && fused_gate_up(L);
      if (swiglu8 && fuse_norm_q8)
        ops.rms_norm_swiglu_q8(b, x, L.ln2, eps, L.gate_up.parts[0], fq);
      else if (swiglu32 && fuse_norm_f32)
        ops.rms_norm_swiglu(b, x, L.ln2, eps, L.gate_up.parts[0], act);
      else if (gu8)
        ops.rms_norm_q8(b, x, L.ln2, xq, n, eps);
      else
        ops.rms_norm(b, x, L.ln2, h, n, int(hidden), eps);
      if (q8(L.down)) {
        if (swiglu8) {
          if (!fuse_norm_q8) ops.linear_swiglu_q8(b, L.gate_up.parts[0], xq, fq);
        } else {
          if (gu8)
            record_linear_q8(ops, b, L.gate_up, xq, gu, n, 2 * ffn, false);
          else
            linear(b, L.gate_up, h, gu, n, 2 * ffn, false);
          ops.swiglu_q8(b, gu, 2 * ffn, ffn, fq, n);
        }
        record_linear_q8(ops, b, L.down, fq, x, n, hidden, true);
      } else {
        if (swiglu32) {
          if (!fuse_norm_f32) ops.linear_swiglu(b, L.gate_up.parts[0], h, act);
        } else {
          if (gu8)
            record_linear_q8(ops, b, L.gate_up, xq, gu, n, 2 * ffn, false);
          else
            linear(b, L.gate_up, h, gu, n, 2 * ffn, false);
          ops.swiglu(b, gu, 2 * ffn, 0, gu, 2 * ffn, ffn, act, n, int(ffn));
        }
        linear(b, L.down, act, x, n, hidden, true);
      }
    }
    return x;
  }

  const GpuWeight& output() const { return w.output(); }
  // One-token steps: the RMSNorms go into the 8-bit matvecs after them (tuning.mvq_norm), or on
  // GPUs into the f32-activation matvecs (tuning.matvec_norm; CPU adapters run other kernels).
  bool fuses_norm_q8() const { return ops.tuning.mvq_norm && ops.fuses_norm_q8(hidden); }
  bool fuses_norm_f32() const { return ops.tuning.matvec_norm && !ctx.adapter().is_cpu() && ops.fuses_norm(hidden); }

  void ensure_logits(int64_t rows) {
    if (logits_rows >= rows) return;
    logit_buf = make_tensor(ctx, {rows, vocab});
    logits_rows = rows;
  }

  // Runs all but the last chunk of a long prompt; returns the last chunk.
  std::span<const int32_t> prefill_chunks(std::span<const int32_t> tokens) {
    check_tokens(tokens);
    while (int64_t(tokens.size()) > opt.max_batch) {
      auto chunk = tokens.first(size_t(opt.max_batch));
      Batch b(ctx);
      upload_ids(chunk);
      record_layers(b, int(chunk.size()));
      b.run();
      n_past_ += int(chunk.size());
      tokens = tokens.subspan(chunk.size());
    }
    return tokens;
  }

  // The final norm and the output projection of token n - 1 (of the residual stream in res) into
  // logits1.
  void record_output(Batch& b, int n, const Tensor& res) {
    // The norm stays a pass of its own here: the output projection's thousands of workgroups
    // would each redo it (for 8B: 8,016 x 16 KB of reads), one dispatch costs less.
    if (q8(output())) {
      ops.rms_norm_q8(b, res, w.norm, xq, 1, eps, hidden, (n - 1) * hidden);
      ops.linear_q8(b, output(), xq, logits1, 1);
    } else if (n == 1 && fuses_norm_f32() && ops.tuning.matvec_out_norm) {
      ops.rms_norm_linear(b, res, w.norm, eps, output(), logits1);  // one token: no copy, no norm pass
    } else {
      b.copy(res, uint64_t(n - 1) * uint64_t(hidden) * 4, last, 0, uint64_t(hidden) * 4);
      ops.rms_norm(b, last, w.norm, h, 1, int(hidden), eps);
      ops.linear(b, output(), h, logits1, 1);
    }
  }

  // Records the last chunk (ids already uploaded) and the logits of its last position into
  // logits1; one token replays the single-token step (its position uploaded here).
  void record_last(Batch& b, int n) {
    if (n == 1) {
      set_position(n_past_);
      replay_step(b);
      return;
    }
    record_output(b, n, record_layers(b, n));
  }
  // The same and the argmax of those logits into out_id, submitted; returns its readback.
  // next_token's effects (x, pos) count from the submit on: a batch dropped before it ran none.
  Readback submit_argmax(Batch& b, int n) {
    record_last(b, n);
    const bool next = replay_argmax(b);
    Readback r = b.read(out_id, 0, 4);
    b.submit();
    if (next) {
      x_next = true;
      if (pos_on_gpu >= 0) ++pos_on_gpu;
    }
    return r;
  }

  // The token id an argmax readback holds (checked: a GPU gone wrong must not feed the host
  // an id past the vocabulary).
  int32_t argmax_token(const Readback& r) const {
    const uint32_t id = r.value<uint32_t>();
    if (id >= uint64_t(vocab))
      throw Error("wgc: the GPU's argmax gave token id " + std::to_string(id) + ", past the vocabulary of " +
                  std::to_string(vocab));
    return int32_t(id);
  }

  // The embeddings of n tokens into out: one token's id is in out_id, more are in ids (upload_ids).
  void record_embedding(Batch& b, int n, const Tensor& out) {
    ops.embedding(b, w.embed, n == 1 ? out_id : ids, out, n);
  }

  // An upload is a copy the GPU runs before the next submit: skipped where next_token already
  // advanced pos to p.
  void set_position(int p) {
    if (p == pos_on_gpu) return;
    const uint32_t v[2] = {uint32_t(p), uint32_t(p)};
    upload(ctx, pos, std::as_bytes(std::span(v)));
    pos_on_gpu = p;
  }
  // Replays `rec` into b, freezing what `record` records on first use. WGC_PROFILE=1 times every
  // batch, and a timed batch cannot be frozen: then `record` records into b itself (the same
  // dispatches, each timed).
  template <class F>
  void replay(Batch& b, Recording& rec, F&& record) {
    if (!rec) {
      Batch r(ctx);
      if (r.timed()) {
        record(b);
        return;
      }
      record(r);
      rec = r.freeze();
    }
    b.replay(rec);
  }
  // One token at the position in pos: its embedding (unless next_token left it in x), the layers
  // and the output projection.
  void replay_step(Batch& b) {
    const bool layered = layer_steps(), embedded = x_next && !layered;
    x_next = false;  // the layers write x
    if (!embedded && !layered) replay(b, step_embed, [&](Batch& r) { record_embedding(r, 1, x); });
    replay(b, step, [&](Batch& r) { record_output(r, 1, record_layers(r, 1, /*dyn=*/true, /*embed=*/false)); });
  }
  // Returns whether it was next_token's (not with the layer steps: their stream is not x).
  bool replay_argmax(Batch& b) {
    if (!ops.tuning.next_token || layer_steps()) {
      replay(b, step_argmax, [&](Batch& r) { ops.argmax(r, logits1, vocab, out_id); });
      return false;
    }
    replay(b, step_next, [&](Batch& r) { ops.next_token(r, logits1, vocab, out_id, w.embed, x, pos); });
    return true;
  }

  void set_tuning(const LlmTuning& t) override {
    ops.tuning = t;
    opt.tuning = t;
    step_embed = {};
    step = {};
    step_argmax = {};
    step_next = {};
  }

  void prefill(std::span<const int32_t> tokens, const std::function<void(int, int)>& progress) override {
    check_tokens(tokens);
    const int total = int(tokens.size());
    for (int done = 0; done < total;) {
      auto chunk = tokens.subspan(size_t(done), size_t(std::min(opt.max_batch, total - done)));
      Batch b(ctx);
      upload_ids(chunk);
      record_layers(b, int(chunk.size()));
      b.run();
      n_past_ += int(chunk.size());
      done += int(chunk.size());
      if (progress) progress(done, total);
    }
  }

  std::vector<float> logits(std::span<const int32_t> tokens) override {
    tokens = prefill_chunks(tokens);
    Batch b(ctx);
    upload_ids(tokens);
    record_last(b, int(tokens.size()));
    b.run();
    check_layer_steps();
    n_past_ += int(tokens.size());
    std::vector<float> out(static_cast<size_t>(vocab));
    download(ctx, logits1, std::as_writable_bytes(std::span(out)));
    return out;
  }

  std::vector<float> all_logits(std::span<const int32_t> tokens) override {
    check_tokens(tokens);
    std::vector<float> out;
    out.reserve(tokens.size() * size_t(vocab));
    while (!tokens.empty()) {
      auto chunk = tokens.first(std::min<size_t>(tokens.size(), size_t(opt.max_batch)));
      ensure_logits(int64_t(chunk.size()));
      Batch b(ctx);
      upload_ids(chunk);
      record_layers(b, int(chunk.size()));
      ops.rms_norm(b, x, w.norm, h, int(chunk.size()), int(hidden), eps);
      ops.linear(b, output(), h, logit_buf, int(chunk.size()));
      b.run();
      n_past_ += int(chunk.size());
      size_t at = out.size();
      out.resize(at + chunk.size() * size_t(vocab));
      download(ctx, logit_buf, std::as_writable_bytes(std::span(out).subspan(at)));
      tokens = tokens.subspan(chunk.size());
    }
    return out;
  }

  int32_t greedy(std::span<const int32_t> tokens) override {
    tokens = prefill_chunks(tokens);
    Batch b(ctx);
    upload_ids(tokens);
    Readback id = submit_argmax(b, int(tokens.size()));
    n_past_ += int(tokens.size());
    const int32_t next = argmax_token(id);
    check_layer_steps();
    return next;
  }

  DecodeStats decode_greedy(int32_t first, int max_steps, const std::function<bool(int32_t)>& on_token) override {
    using clock = std::chrono::steady_clock;
    auto ms = [](clock::time_point a, clock::time_point b) {
      return std::chrono::duration<double, std::milli>(b - a).count();
    };
    DecodeStats st;
    check_tokens(std::span(&first, 1));
    const int base = n_past_;
    const int steps = std::min(max_steps, max_ctx_ - base);
    const int ahead = std::max(1, opt.decode_ahead);
    std::deque<Readback> in_flight;  // the argmax of each recorded step, oldest first
    upload_ids(std::span(&first, 1));
    bool go = true;
    while (go && st.tokens < steps) {
      auto t0 = clock::now();
      while (st.recorded < steps && int(in_flight.size()) < ahead) {
        // The step reads its token from out_id, where the one before left it (and, with
        // next_token, its embedding from x and its position from pos).
        Batch b(ctx);
        n_past_ = base + st.recorded;
        in_flight.push_back(submit_argmax(b, 1));  // a position upload goes to the queue in order
        ++st.recorded;
      }
      auto t1 = clock::now();
      const int32_t id = argmax_token(in_flight.front());
      in_flight.pop_front();
      st.record_ms += ms(t0, t1);
      st.wait_ms += ms(t1, clock::now());
      ++st.tokens;
      n_past_ = base + st.tokens;
      go = on_token(id);
    }
    n_past_ = base + st.tokens;
    if (layer_used) {  // the error word after every step that ran
      for (; !in_flight.empty(); in_flight.pop_front()) in_flight.front().wait();
      check_layer_steps();
    }
    return st;  // readbacks of dropped steps wait for their copies as they go
  }

  std::vector<DispatchTiming> profile_decode_step(int32_t token) {
    check_tokens(std::span(&token, 1));
    Batch b(ctx, /*timed=*/true);
    upload_ids(std::span(&token, 1));
    submit_argmax(b, 1);
    b.wait();
    return b.timings();
  }

  TopK top_k(std::span<const int32_t> tokens, int k) override {
    check_top_k(k);
    tokens = prefill_chunks(tokens);
    Batch b(ctx);
    upload_ids(tokens);
    record_last(b, int(tokens.size()));
    ops.topk(b, logits1, vocab, k, top_vals, top_ids);
    b.run();
    check_layer_steps();
    n_past_ += int(tokens.size());
    TopK r;
    r.logits.resize(size_t(k));
    std::vector<uint32_t> got(static_cast<size_t>(k));
    download(ctx, top_vals, std::as_writable_bytes(std::span(r.logits)));
    download(ctx, top_ids, std::as_writable_bytes(std::span(got)));
    r.ids.assign(got.begin(), got.end());
    return r;
  }

  Device device() const override { return Device::Gpu; }
  const ModelConfig& config() const override { return cfg; }
  uint64_t weight_bytes() const override { return w.bytes; }
};

}  // namespace

DeviceChoice choose_device(const std::optional<Context>& ctx, const ModelFile& file, const EngineOptions& o) {
  if (o.device == Device::Cpu) return {Device::Cpu, ""};
  if (o.device == Device::Gpu) {
    if (!ctx) throw Error("wgc: the GPU engine needs a GPU context (none was made: backend cpu)");
    return {Device::Gpu, ""};
  }
  if (!ctx) return {Device::Cpu, ""};
  const AdapterInfo& a = ctx->adapter();
  if (a.is_cpu() && ctx->options().backend == Backend::Auto)
    return {Device::Cpu, "the only WebGPU adapter is a CPU (" + a.device + "): running on the CPU engine instead"};
  const int max_ctx = resolve_max_ctx(file.config(), o);
  if (std::string why = gpu_fit_problem(*ctx, file, max_ctx, std::max(1, std::min(o.max_batch, max_ctx))); !why.empty())
    return {Device::Cpu, why + ": running on the CPU engine"};
  return {Device::Gpu, ""};
}

LlamaModel::LlamaModel(std::optional<Context> ctx, const ModelFile& file, EngineOptions options) {
  DeviceChoice c = choose_device(ctx, file, options);
  reason_ = std::move(c.reason);
  if (c.device == Device::Cpu)
    impl_ = make_cpu_engine(file, options);
  else
    impl_ = std::make_unique<GpuEngine>(*ctx, file, options);
}
LlamaModel::~LlamaModel() = default;
LlamaModel::LlamaModel(LlamaModel&&) noexcept = default;

Device LlamaModel::device() const { return impl_->device(); }
const std::string& LlamaModel::device_reason() const { return reason_; }
const ModelConfig& LlamaModel::config() const { return impl_->config(); }
int LlamaModel::max_ctx() const { return impl_->max_ctx(); }
int LlamaModel::max_batch() const { return impl_->max_batch(); }
void LlamaModel::prefill(std::span<const int32_t> tokens, const std::function<void(int, int)>& progress) {
  impl_->prefill(tokens, progress);
}
int LlamaModel::n_past() const { return impl_->n_past(); }
void LlamaModel::rewind(int n) { impl_->rewind(n); }
uint64_t LlamaModel::weight_bytes() const { return impl_->weight_bytes(); }
void LlamaModel::set_tuning(const LlmTuning& t) { impl_->set_tuning(t); }

std::vector<float> LlamaModel::logits(std::span<const int32_t> tokens) { return impl_->logits(tokens); }
std::vector<float> LlamaModel::all_logits(std::span<const int32_t> tokens) { return impl_->all_logits(tokens); }
int32_t LlamaModel::greedy(std::span<const int32_t> tokens) { return impl_->greedy(tokens); }
TopK LlamaModel::top_k(std::span<const int32_t> tokens, int k) { return impl_->top_k(tokens, k); }
DecodeStats LlamaModel::decode_greedy(int32_t first, int max_steps, const std::function<bool(int32_t)>& on_token) {
  return impl_->decode_greedy(first, max_steps, on_token);
}

namespace {
GpuEngine& gpu_engine(LlamaEngine& e, std::string_view what) {
  if (auto* g = dynamic_cast<GpuEngine*>(&e)) return *g;
  throw not_on_this_engine(what, e.device());
}
}  // namespace

std::vector<DispatchTiming> LlamaModel::profile_decode_step(int32_t token) {
  return gpu_engine(*impl_, "profiling GPU dispatches").profile_decode_step(token);
}
const LlamaWeights& LlamaModel::weights() const { return gpu_engine(*impl_, "the GPU weights").w; }
const LlmOps& LlamaModel::ops() const { return gpu_engine(*impl_, "the GPU ops").ops; }
const RopeTable& LlamaModel::rope() const { return gpu_engine(*impl_, "the GPU RoPE table").rope; }
const Context& LlamaModel::context() const { return gpu_engine(*impl_, "the GPU context").ctx; }

}  // namespace wgc::llm
