// The GPU engine of a model split over several GPUs by layers (layer_split.h): each device runs the
// layer plan (gpu_layer.h) over its range with its own kernels, weights, KV cache and activations;
// a step records and submits one batch per device, in order, and x crosses between them through
// host memory. The first device embeds the tokens, the last runs the output (logits, argmax,
// top-k). Each device's arithmetic is the one-GPU engine's (the same plans and kernels), so the
// tokens and logits are those of the model on one GPU.
#include "llm/model/split_engine.h"

#include "llm/model/gpu_layer.h"
#include "llm/model/layer_split.h"
#include "llm/model/llama_engine.h"
#include "llm/model/llama_weights.h"
#include "util/error.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <string>

namespace wgc::llm {

namespace {

// One device's share: its layers' weights and cache, the plans over them, its activations.
struct Stage {
  Context ctx;
  LlmOps ops;
  LayerRange range;
  bool first = false, last = false;
  LlamaWeights w;
  RopeTable rope;
  std::optional<RopeTable> sliding_rope;  // Gemma 3's sliding layers' (ModelConfig::sliding_rope_layer)
  KvCache kv;
  GpuPlan decode_plan, prefill_plan;
  GpuActs acts;
  Tensor pos;  // u32 [2]: a one-token step's position and cache row (read on the GPU)
  Tensor ids;  // first: the tokens of a step
  Tensor out_id, last_row, logits1, logit_buf, top_vals, top_ids;  // last
  int64_t logits_rows = 0;
  // A one-token step's embedding (first) and layers, recorded on first use and replayed (its
  // position is read from pos on the GPU), as the one-GPU engine's.
  Recording step;

  Stage(const Context& c, const ModelFile& f, const EngineOptions& o, LayerRange r, bool is_first, bool is_last,
        int max_ctx)
      : ctx(c), ops(c), range(r), first(is_first), last(is_last) {
    ModelConfig part = f.config();
    part.n_layers = r.count;  // this device's share of the cache
    const std::vector<int> all_rows = kv_layer_rows(f.config(), max_ctx, o.max_batch, o.swa_full);
    const std::span<const int> rows = std::span(all_rows).subspan(size_t(r.first), size_t(r.count));
    check_llama_context(ctx, part, max_ctx, f.path().string(), rows);
    WeightSlice slice;
    slice.first = r.first;
    slice.count = r.count;
    slice.embed = first;
    slice.output = last;
    w = upload_llama_weights(ctx, f, o.rope_theta, o.rope_scaling, slice);
    if (o.tuning) ops.tuning = *o.tuning;
    ops.precompile(w.types, {int(w.hd)}, std::any_of(rows.begin(), rows.end(), [&](int x) { return x < max_ctx; }));
    make_plans(o);
    rope = make_llama_rope(ctx, w.cfg, max_ctx);
    if (const int64_t l = w.cfg.sliding_rope_layer(); l >= 0) sliding_rope = make_llama_rope(ctx, w.cfg, max_ctx, l);
    kv = make_kv_cache(ctx, r.count, int(w.nkv), max_ctx, int(w.hd), o.cache_type, rows);
    const int64_t B = o.max_batch;
    acts.x = make_tensor(ctx, {B, w.hidden});
    acts.h = make_tensor(ctx, {B, w.hidden});
    acts.qkv = make_tensor(ctx, {B, w.qkv_dim});
    acts.attn = make_tensor(ctx, {B, w.nh * w.hd});
    acts.gu = make_tensor(ctx, {B, 2 * w.ffn});
    acts.act = make_tensor(ctx, {B, w.ffn});
    acts.moe = make_moe_acts(ctx, w, int(B));
    pos = make_tensor(ctx, {2}, DType::U32);
    out_id = make_tensor(ctx, {1}, DType::U32);
    if (first) ids = make_tensor(ctx, {B}, DType::U32);
    if (last) {
      last_row = make_tensor(ctx, {w.hidden});
      logits1 = make_tensor(ctx, {w.vocab});
      top_vals = make_tensor(ctx, {64});
      top_ids = make_tensor(ctx, {64}, DType::U32);
    }
    bool any_q8 = last && o.q8_activations && supports_q8(w.output().type);
    for (int li = 0; li < int(w.layers.size()); ++li)
      for (Mat m : kLayerMats) any_q8 = any_q8 || (o.q8_activations && group_q8(w.mat(li, m)));
    if (any_q8) {
      acts.hq = make_q8_act(ctx, int(B), w.hidden);
      acts.attnq = make_q8_act(ctx, int(B), w.nh * w.hd);
      acts.actq = make_q8_act(ctx, int(B), w.ffn);
    }
  }

  void make_plans(const EngineOptions& o) {
    decode_plan = plan_gpu(ops, w, PlanMode::Decode, o.q8_activations, o.plan_off, o.cache_type);
    prefill_plan = plan_gpu(ops, w, PlanMode::Prefill, o.q8_activations, o.plan_off, o.cache_type);
    step = {};
  }
  const GpuPlan& plan(int n) const { return n == 1 ? decode_plan : prefill_plan; }

  void ensure_logits(int64_t rows) {
    if (logits_rows >= rows) return;
    logit_buf = make_tensor(ctx, {rows, w.vocab});
    logits_rows = rows;
  }

  // The embedding of the step's tokens (first device) and this device's layers for n tokens at
  // n_past: one token replays `step` (WGC_PROFILE's timed batches cannot be frozen: then recorded).
  void record_step(Batch& b, int n, int n_past) {
    auto record = [&](Batch& r) {
      if (first) record_embedding(ops, r, w, n == 1 ? out_id : ids, acts.x, n);
      record_layers(r, n, n_past);
    };
    if (n != 1) return record(b);
    if (!step) {
      Batch r(ctx);
      if (r.timed()) return record(b);
      record(r);
      step = r.freeze();
    }
    b.replay(step);
  }

  // This device's layers for n tokens at position n_past, as the one-GPU engine records them (one
  // token: its position read from pos on the GPU).
  void record_layers(Batch& b, int n, int n_past) {
    GpuPass p;
    p.n = n;
    p.rope.n_tokens = n;  // q|k|v back to back in each qkv row
    p.rope.n_heads = int(w.nh);
    p.rope.stride = w.qkv_dim;
    p.rope.pos0 = n_past;
    p.attention.n_tokens = n;
    p.attention.n_heads = int(w.nh);
    p.attention.start = n_past;
    p.attention.q_stride = w.qkv_dim;
    p.sliding_rope = sliding_rope ? &*sliding_rope : nullptr;
    if (n == 1) {
      p.rope.positions = pos;
      p.rope.cache_rows = true;
      p.attention.start_from = pos;
    }
    const GpuPlan& pl = plan(n);
    for (int li = 0; li < int(w.layers.size()); ++li)
      record_layer(ops, b, pl.layers[size_t(li)], w, li, kv.layer(li), rope, acts, p);
  }
};

// What the last device does after its layers.
enum class Tail { None, Logits, AllLogits, Argmax };

class SplitEngine final : public LlamaEngine {
 public:
  SplitEngine(std::vector<Context> devices, const ModelFile& f, EngineOptions o) : opt_(std::move(o)) {
    const int n_layers = int(f.config().n_layers);
    const std::vector<double> weights = split_weights(devices, opt_.tensor_split);
    ranges_ = split_layers(n_layers, weights);
    max_ctx_ = resolve_max_ctx(f.config(), opt_);
    cache_type_ = opt_.cache_type;
    opt_.max_batch = std::max(1, std::min(opt_.max_batch, max_ctx_));
    max_batch_ = opt_.max_batch;
    layer_rows_ = kv_layer_rows(f.config(), max_ctx_, max_batch_, opt_.swa_full);
    for (size_t i = 0; i < devices.size(); ++i)
      stages_.push_back(
          std::make_unique<Stage>(devices[i], f, opt_, ranges_[i], i == 0, i + 1 == devices.size(), max_ctx_));
    cfg_ = f.config();
    cfg_.rope_theta = stages_[0]->w.cfg.rope_theta;
    cfg_.rope_scaling = stages_[0]->w.cfg.rope_scaling;
    cfg_.rope_freq_factors = stages_[0]->w.cfg.rope_freq_factors;
  }

  Device device() const override { return Device::Gpu; }
  const ModelConfig& config() const override { return cfg_; }
  uint64_t weight_bytes() const override {
    uint64_t b = 0;
    for (const auto& s : stages_) b += s->w.bytes;
    return b;
  }
  uint64_t kv_bytes() const override {
    uint64_t b = 0;
    for (const auto& s : stages_) b += s->kv.k.bytes() + s->kv.v.bytes();
    return b;
  }

  void set_tuning(const LlmTuning& t) override {
    opt_.tuning = std::make_shared<const LlmTuning>(t);
    for (auto& s : stages_) {
      s->ops.tuning = t;
      s->make_plans(opt_);
    }
  }

  void prefill(std::span<const int32_t> tokens, const std::function<void(int, int)>& progress) override {
    check_tokens(tokens);
    const int total = int(tokens.size());
    for (int done = 0; done < total;) {
      auto chunk = tokens.subspan(size_t(done), size_t(std::min(opt_.max_batch, total - done)));
      forward(chunk, Tail::None).run();
      n_past_ += int(chunk.size());
      done += int(chunk.size());
      if (progress) progress(done, total);
    }
  }

  std::vector<float> logits(std::span<const int32_t> tokens) override {
    tokens = prefill_chunks(tokens);
    forward(tokens, Tail::Logits).run();
    n_past_ += int(tokens.size());
    Stage& s = *stages_.back();
    std::vector<float> out(size_t(s.w.vocab));
    download(s.ctx, s.logits1, std::as_writable_bytes(std::span(out)));
    return out;
  }

  // Embedding models run on one device (wgc embed, serve --embedding-model).
  std::vector<float> last_hidden(std::span<const int32_t>) override {
    throw Error("wgc: last_hidden (decoder embedding models) is not available on a model split over several GPUs");
  }

  std::vector<float> all_logits(std::span<const int32_t> tokens) override {
    check_tokens(tokens);
    Stage& s = *stages_.back();
    std::vector<float> out;
    out.reserve(tokens.size() * size_t(s.w.vocab));
    while (!tokens.empty()) {
      auto chunk = tokens.first(std::min<size_t>(tokens.size(), size_t(opt_.max_batch)));
      s.ensure_logits(int64_t(chunk.size()));
      forward(chunk, Tail::AllLogits).run();
      n_past_ += int(chunk.size());
      const size_t at = out.size();
      out.resize(at + chunk.size() * size_t(s.w.vocab));
      download(s.ctx, s.logit_buf, std::as_writable_bytes(std::span(out).subspan(at)));
      tokens = tokens.subspan(chunk.size());
    }
    return out;
  }

  int32_t greedy(std::span<const int32_t> tokens) override {
    tokens = prefill_chunks(tokens);
    Batch b = forward(tokens, Tail::Argmax);
    Stage& s = *stages_.back();
    Readback r = b.read(s.out_id, 0, 4);
    b.submit();
    n_past_ += int(tokens.size());
    return argmax_token(r);
  }

  TopK top_k(std::span<const int32_t> tokens, int k) override {
    check_top_k(k);
    tokens = prefill_chunks(tokens);
    Batch b = forward(tokens, Tail::Logits);
    Stage& s = *stages_.back();
    s.ops.topk(b, s.logits1, s.w.vocab, k, s.top_vals, s.top_ids);
    b.run();
    n_past_ += int(tokens.size());
    TopK r;
    r.logits.resize(size_t(k));
    std::vector<uint32_t> got(static_cast<size_t>(k));
    download(s.ctx, s.top_vals, std::as_writable_bytes(std::span(r.logits)));
    download(s.ctx, s.top_ids, std::as_writable_bytes(std::span(got)));
    r.ids.assign(got.begin(), got.end());
    return r;
  }

  // Each step waits for its token: the next step's first device needs it, and it comes from the
  // last device through the host (decode_ahead does not apply).
  DecodeStats decode_greedy(int32_t first, int max_steps, const std::function<bool(int32_t)>& on_token) override {
    return decode_loop(
        first, max_steps, 1,
        [&](int32_t tok) {
          Batch b = forward(std::span(&tok, 1), Tail::Argmax);
          Readback r = b.read(stages_.back()->out_id, 0, 4);
          b.submit();
          return r;
        },
        on_token);
  }

  std::vector<ModelStage> stages() const {
    std::vector<ModelStage> r;
    for (const auto& s : stages_)
      r.push_back({s->ctx, &s->ops, &s->w, &s->rope, s->range, s->first, s->last,
                   s->sliding_rope ? &*s->sliding_rope : nullptr});
    return r;
  }
  const Context& context() const { return stages_[0]->ctx; }

 private:
  // Runs all but the last chunk of a long prompt; returns the last chunk.
  std::span<const int32_t> prefill_chunks(std::span<const int32_t> tokens) {
    check_tokens(tokens);
    while (int64_t(tokens.size()) > opt_.max_batch) {
      auto chunk = tokens.first(size_t(opt_.max_batch));
      forward(chunk, Tail::None).run();
      n_past_ += int(chunk.size());
      tokens = tokens.subspan(chunk.size());
    }
    return tokens;
  }

  // Records `tokens` at n_past_ on every device, submitting all but the last device's batch, which
  // it returns with `tail` recorded (the caller adds reads and submits).
  Batch forward(std::span<const int32_t> tokens, Tail tail) {
    const int n = int(tokens.size());
    const std::vector<uint32_t> u(tokens.begin(), tokens.end());
    const uint32_t p[2] = {uint32_t(n_past_), uint32_t(n_past_)};
    HiddenCrossing x;
    for (size_t i = 0;; ++i) {
      Stage& s = *stages_[i];
      if (n == 1) upload(s.ctx, s.pos, std::as_bytes(std::span(p)));
      Batch b(s.ctx);
      if (s.first) upload(s.ctx, n == 1 ? s.out_id : s.ids, std::as_bytes(std::span(u)));
      s.record_step(b, n, n_past_);
      // x from the device before, after recording (the host records while that device runs); the
      // write is queued before this batch's submit.
      if (!s.first) x.write(s.ctx, s.acts.x);
      if (!s.last) {
        x.read(b, s.acts.x, uint64_t(n) * uint64_t(s.w.hidden) * 4);
        b.submit();
        continue;
      }
      switch (tail) {
        case Tail::None: break;
        case Tail::Logits:
          record_output_row(s.ops, b, s.plan(n).output, s.w, s.acts, s.last_row, s.logits1, n - 1);
          break;
        case Tail::Argmax:
          record_output_row(s.ops, b, s.plan(n).output, s.w, s.acts, s.last_row, s.logits1, n - 1);
          s.ops.argmax(b, s.logits1, s.w.vocab, s.out_id);
          break;
        case Tail::AllLogits:
          record_output_rows(s.ops, b, s.plan(n).output, s.w, s.acts, s.logit_buf, n, /*f32=*/true);
          break;
      }
      return b;
    }
  }

  EngineOptions opt_;
  ModelConfig cfg_;
  std::vector<LayerRange> ranges_;
  std::vector<std::unique_ptr<Stage>> stages_;
};

}  // namespace

std::unique_ptr<LlamaEngine> make_split_engine(std::vector<Context> devices, const ModelFile& file,
                                               const EngineOptions& options) {
  if (devices.size() < 2) throw Error("wgc: layer split: needs two or more GPUs");
  return std::make_unique<SplitEngine>(std::move(devices), file, options);
}

std::vector<ModelStage> split_stages(const LlamaEngine& e) {
  if (auto* s = dynamic_cast<const SplitEngine*>(&e)) return s->stages();
  return {};
}

const Context* split_context(const LlamaEngine& e) {
  if (auto* s = dynamic_cast<const SplitEngine*>(&e)) return &s->context();
  return nullptr;
}

}  // namespace wgc::llm
