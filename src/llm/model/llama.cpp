#include "llm/model/llama.h"

#include "cpu/llm/cpu_features.h"
#include "llm/model/gpu_layer.h"
#include "llm/model/llama_cpu.h"
#include "llm/model/llama_engine.h"
#include "llm/model/llama_weights.h"
#include "llm/model/split_engine.h"
#include "util/error.h"

#include <cmath>
#include <cstring>
#include <optional>
#include <string>

namespace wgc::llm {

namespace {

// EngineOptions::max_ctx resolved (llama_engine.h), checked against the device and the host before
// the weights are uploaded (ModelConfig::validate bounds the file's to 32 bits).
int gpu_context_length(const Context& ctx, const ModelFile& f, const EngineOptions& o) {
  const int max_ctx = resolve_max_ctx(f.config(), o);
  check_llama_context(ctx, f.config(), max_ctx, f.path().string(),
                      kv_layer_rows(f.config(), max_ctx, std::max(1, std::min(o.max_batch, max_ctx)), o.swa_full));
  if (std::string why; !kv_type_fits(o.cache_type, int(f.config().head_dim), &why))
    throw OptionError("cache_type", std::string(to_string(o.cache_type)) + ": " + why);
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
  int64_t hidden = 0, vocab = 0;
  float eps = 1e-5f;
  RopeTable rope;
  std::optional<RopeTable> sliding_rope;  // Gemma 3's sliding layers' (ModelConfig::sliding_rope_layer)
  KvCache kv;
  // The layer plans (layer_plan.h) of one-token and many-token passes, made from the weights and
  // the kernels' answers (again when the tuning changes).
  GpuPlan decode_plan, prefill_plan;

  // Activations for up to opt.max_batch tokens (with the 8-bit copies of h, attn and act where a
  // projection takes 8-bit activations).
  GpuActs acts;
  Tensor ids, last, logit_buf, logits1, out_id, top_vals, top_ids;
  int64_t logits_rows = 0;
  Tensor row_vals, row_ids;  // greedy_all: each row's largest logit and its id (made on first use)
  // Single-token steps: recordings (made on first use) of the embedding of out_id's token into
  // x; of the layers and the output projection into logits1, the token's position read from pos
  // (u32 [2]: position, cache row); and of the argmax of logits1 into out_id, or next_token's
  // (the decode plan's next_token: the argmax that also leaves the next step's embedding in x and
  // advances pos). x_next: the work submitted last ended with next_token, so x holds out_id's
  // embedding; pos_on_gpu: what pos holds once the work submitted and the uploads queued so far
  // have run (-1: not known).
  Tensor pos;
  Recording step_embed, step, step_argmax, step_next;
  bool x_next = false;
  int pos_on_gpu = -1;

  GpuEngine(const Context& c, const ModelFile& f, EngineOptions o)
      : ctx(c),
        opt(o),
        ops(c),
        max_ctx(gpu_context_length(c, f, o)),
        w(upload_llama_weights(c, f, o.rope_theta, o.rope_scaling)),
        cfg(w.cfg) {
    if (opt.tuning) ops.tuning = *opt.tuning;
    hidden = w.hidden;
    vocab = w.vocab;
    eps = w.eps;
    max_ctx_ = max_ctx;
    cache_type_ = opt.cache_type;
    opt.max_batch = std::max(1, std::min(opt.max_batch, max_ctx_));
    max_batch_ = opt.max_batch;
    layer_rows_ = kv_layer_rows(cfg, max_ctx_, max_batch_, opt.swa_full);
    ops.precompile(w.types, {int(w.hd)}, ring_rows() > 0);
    make_plans();

    rope = make_llama_rope(ctx, cfg, max_ctx_);
    if (const int64_t l = cfg.sliding_rope_layer(); l >= 0) sliding_rope = make_llama_rope(ctx, cfg, max_ctx_, l);
    kv = make_kv_cache(ctx, int(cfg.n_layers), int(w.nkv), max_ctx_, int(w.hd), opt.cache_type, layer_rows_);

    const int64_t B = opt.max_batch;
    ids = make_tensor(ctx, {B}, DType::U32);
    acts.x = make_tensor(ctx, {B, hidden});
    acts.h = make_tensor(ctx, {B, hidden});
    acts.qkv = make_tensor(ctx, {B, w.qkv_dim});
    acts.attn = make_tensor(ctx, {B, w.nh * w.hd});
    acts.gu = make_tensor(ctx, {B, 2 * w.ffn});
    acts.act = make_tensor(ctx, {B, w.ffn});
    acts.moe = make_moe_acts(ctx, w, int(B));
    last = make_tensor(ctx, {hidden});
    logits1 = make_tensor(ctx, {vocab});
    out_id = make_tensor(ctx, {1}, DType::U32);
    top_vals = make_tensor(ctx, {64});
    top_ids = make_tensor(ctx, {64}, DType::U32);
    pos = make_tensor(ctx, {2}, DType::U32);
    bool any_q8 = opt.q8_activations && supports_q8(w.output().type);
    for (int li = 0; li < int(w.layers.size()); ++li)
      for (Mat m : kLayerMats) any_q8 = any_q8 || (opt.q8_activations && group_q8(w.mat(li, m)));
    if (any_q8) {  // quantized weights have whole blocks of 32 along their inputs
      acts.hq = make_q8_act(ctx, int(B), hidden);
      acts.attnq = make_q8_act(ctx, int(B), w.nh * w.hd);
      acts.actq = make_q8_act(ctx, int(B), w.ffn);
    }
  }

  void make_plans() {
    decode_plan = plan_gpu(ops, w, PlanMode::Decode, opt.q8_activations, opt.plan_off, opt.cache_type);
    prefill_plan = plan_gpu(ops, w, PlanMode::Prefill, opt.q8_activations, opt.plan_off, opt.cache_type);
  }
  const GpuPlan& plan(int n) const { return n == 1 ? decode_plan : prefill_plan; }

  // A single token goes to out_id, where every one-token pass reads it (the recorded step's
  // argmax leaves the next step's token there: no copy between steps); more go to ids.
  void upload_ids(std::span<const int32_t> tokens) {
    x_next = false;
    std::vector<uint32_t> u(tokens.begin(), tokens.end());
    upload(ctx, u.size() == 1 ? out_id : ids, std::as_bytes(std::span(u)));
  }

  // Records the plan's layers for n tokens at n_past_ whose ids are in `ids` (one: in out_id, see
  // upload_ids). dyn (one token): the position comes from `pos` when the batch runs (for
  // recordings). embed false: x already holds the tokens' embeddings.
  void record_layers(Batch& b, int n, bool dyn = false, bool embed = true) {
    x_next = false;
    if (embed) record_embedding(b, n, acts.x);
    GpuPass p;
    p.n = n;
    p.sliding_rope = sliding_rope ? &*sliding_rope : nullptr;
    p.rope.n_tokens = n;  // q|k|v back to back in each qkv row
    p.rope.n_heads = int(w.nh);
    p.rope.stride = w.qkv_dim;
    p.rope.pos0 = n_past_;
    p.attention.n_tokens = n;
    p.attention.n_heads = int(w.nh);
    p.attention.start = n_past_;
    p.attention.q_stride = w.qkv_dim;
    if (dyn) {  // pos holds the position and the cache row
      p.rope.positions = pos;
      p.rope.cache_rows = true;
      p.attention.start_from = pos;
    }
    const GpuPlan& pl = plan(n);
    for (int li = 0; li < int(w.layers.size()); ++li)
      record_layer(ops, b, pl.layers[size_t(li)], w, li, kv.layer(li), rope, acts, p);
  }

  const GpuWeight& output() const { return w.output(); }

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

  // The final norm and the output projection of token n - 1 of x into logits1, as the plan says.
  void record_output(Batch& b, int n) { record_output_row(ops, b, plan(n).output, w, acts, last, logits1, n - 1); }

  // Records the last chunk (ids already uploaded) and the logits of its last position into
  // logits1; one token replays the single-token step (its position uploaded here).
  void record_last(Batch& b, int n) {
    if (n == 1) {
      set_position(n_past_);
      replay_step(b);
      return;
    }
    record_layers(b, n);
    record_output(b, n);
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
  // The embeddings of n tokens into out: one token's id is in out_id, more are in ids (upload_ids).
  void record_embedding(Batch& b, int n, const Tensor& out) {
    llm::record_embedding(ops, b, w, n == 1 ? out_id : ids, out, n);
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
    const bool embedded = x_next;
    x_next = false;  // the layers write x
    if (!embedded) replay(b, step_embed, [&](Batch& r) { record_embedding(r, 1, acts.x); });
    replay(b, step, [&](Batch& r) {
      record_layers(r, 1, /*dyn=*/true, /*embed=*/false);
      record_output(r, 1);
    });
  }
  // Returns whether it was next_token's.
  bool replay_argmax(Batch& b) {
    if (!decode_plan.next_token) {
      replay(b, step_argmax, [&](Batch& r) { ops.argmax(r, logits1, vocab, out_id); });
      return false;
    }
    replay(b, step_next, [&](Batch& r) { ops.next_token(r, logits1, vocab, out_id, w.embed, acts.x, pos); });
    return true;
  }

  void set_tuning(const LlmTuning& t) override {
    ops.tuning = t;
    opt.tuning = std::make_shared<const LlmTuning>(t);
    make_plans();
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
    n_past_ += int(tokens.size());
    std::vector<float> out(static_cast<size_t>(vocab));
    download(ctx, logits1, std::as_writable_bytes(std::span(out)));
    return out;
  }

  std::vector<float> last_hidden(std::span<const int32_t> tokens) override {
    tokens = prefill_chunks(tokens);
    const int n = int(tokens.size());
    Batch b(ctx);
    upload_ids(tokens);
    record_layers(b, n);
    ops.rms_norm(b, acts.x, w.norm, acts.h, n, int(hidden), eps);
    b.run();
    n_past_ += n;
    std::vector<float> out(static_cast<size_t>(hidden));
    download(ctx, acts.h, std::as_writable_bytes(std::span(out)), uint64_t(n - 1) * uint64_t(hidden) * 4);
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
      record_output_rows(ops, b, prefill_plan.output, w, acts, logit_buf, int(chunk.size()), /*f32=*/true);
      b.run();
      n_past_ += int(chunk.size());
      size_t at = out.size();
      out.resize(at + chunk.size() * size_t(vocab));
      download(ctx, logit_buf, std::as_writable_bytes(std::span(out).subspan(at)));
      tokens = tokens.subspan(chunk.size());
    }
    return out;
  }

  // Each position's argmax on the GPU (topk_rows of one): the many-token output plan over every row
  // of a chunk, one submit and one readback of n ids per chunk.
  std::vector<int32_t> greedy_all(std::span<const int32_t> tokens) override {
    check_tokens(tokens);
    std::vector<int32_t> out;
    out.reserve(tokens.size());
    while (!tokens.empty()) {
      auto chunk = tokens.first(std::min<size_t>(tokens.size(), size_t(opt.max_batch)));
      tokens = tokens.subspan(chunk.size());
      if (chunk.size() == 1) {  // the single-token step, as decode_greedy runs it
        out.push_back(greedy(chunk));
        continue;
      }
      const int n = int(chunk.size());
      ensure_logits(n);
      if (!row_ids) {
        row_vals = make_tensor(ctx, {int64_t(opt.max_batch)});
        row_ids = make_tensor(ctx, {int64_t(opt.max_batch)}, DType::U32);
      }
      Batch b(ctx);
      upload_ids(chunk);
      record_layers(b, n);
      record_output_rows(ops, b, prefill_plan.output, w, acts, logit_buf, n);
      ops.topk_rows(b, logit_buf, n, vocab, 1, row_vals, row_ids);
      Readback got = b.read(row_ids, 0, uint64_t(n) * 4);
      b.submit();
      n_past_ += n;
      for (int i = 0; i < n; ++i) out.push_back(argmax_token(got, size_t(i)));
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
    return next;
  }

  // The step reads its token from out_id, where the one before left it (and, with next_token, its
  // embedding from x and its position from pos).
  DecodeStats decode_greedy(int32_t first, int max_steps, const std::function<bool(int32_t)>& on_token) override {
    upload_ids(std::span(&first, 1));
    return decode_loop(
        first, max_steps, opt.decode_ahead,
        [&](int32_t) {
          Batch b(ctx);
          return submit_argmax(b, 1);  // a position upload goes to the queue in order
        },
        on_token);
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
  uint64_t kv_bytes() const override { return kv.k.bytes() + kv.v.bytes(); }
};

}  // namespace

DeviceChoice choose_device(const std::optional<Context>& ctx, const ModelFile& file, const EngineOptions& o) {
  if (!o.split_gpus.empty()) {  // a layer split asks for GPUs by name
    if (o.device == Device::Cpu || !ctx) throw Error("wgc: a layer split over several GPUs runs on the GPU engine");
    return {Device::Gpu, ""};
  }
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
  if (std::string why = gpu_fit_problem(*ctx, file, max_ctx, std::max(1, std::min(o.max_batch, max_ctx)), o.swa_full);
      !why.empty())
    return {Device::Cpu, why + ": running on the CPU engine"};
  return {Device::Gpu, ""};
}

LlamaModel::LlamaModel(std::optional<Context> ctx, const ModelFile& file, EngineOptions options) {
  DeviceChoice c = choose_device(ctx, file, options);
  reason_ = std::move(c.reason);
  if (c.device == Device::Cpu) {
    impl_ = make_cpu_engine(file, options);
  } else if (!options.split_gpus.empty()) {
    std::vector<Context> devices{*ctx};
    devices.insert(devices.end(), options.split_gpus.begin(), options.split_gpus.end());
    impl_ = make_split_engine(std::move(devices), file, options);
  } else {
    impl_ = std::make_unique<GpuEngine>(*ctx, file, options);
  }
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
bool LlamaModel::can_rewind(int n) const { return impl_->can_rewind(n); }
LlamaModel::KvFootprint LlamaModel::kv_footprint() const {
  const ModelConfig& c = config();
  const double row = 2 * double(c.n_kv_heads) * double(c.head_dim);  // K and V of one position, in values
  KvFootprint f;
  for (int rows : impl_->layer_rows()) {
    if (rows < max_ctx())
      f.fixed += 2 * 4 * uint64_t(kv_words(cache_type(), int64_t(c.n_kv_heads) * rows * c.head_dim));
    else
      f.per_token += row * kv_bytes_per_value(cache_type());
  }
  return f;
}
uint64_t LlamaModel::weight_bytes() const { return impl_->weight_bytes(); }
uint64_t LlamaModel::kv_bytes() const { return impl_->kv_bytes(); }
KvType LlamaModel::cache_type() const { return impl_->cache_type(); }
double LlamaModel::kv_bytes_per_token() const {
  const ModelConfig& c = config();
  return double(c.n_layers) * 2 * double(c.n_kv_heads) * double(c.head_dim) * kv_bytes_per_value(cache_type());
}
void LlamaModel::set_tuning(const LlmTuning& t) { impl_->set_tuning(t); }

std::vector<float> LlamaModel::logits(std::span<const int32_t> tokens) { return impl_->logits(tokens); }
std::vector<float> LlamaModel::all_logits(std::span<const int32_t> tokens) { return impl_->all_logits(tokens); }
std::vector<float> LlamaModel::last_hidden(std::span<const int32_t> tokens) { return impl_->last_hidden(tokens); }
int32_t LlamaModel::greedy(std::span<const int32_t> tokens) { return impl_->greedy(tokens); }
std::vector<int32_t> LlamaModel::greedy_all(std::span<const int32_t> tokens) { return impl_->greedy_all(tokens); }
TopK LlamaModel::top_k(std::span<const int32_t> tokens, int k) { return impl_->top_k(tokens, k); }
DecodeStats LlamaModel::decode_greedy(int32_t first, int max_steps, const std::function<bool(int32_t)>& on_token) {
  return impl_->decode_greedy(first, max_steps, on_token);
}

namespace {
GpuEngine& gpu_engine(LlamaEngine& e, std::string_view what) {
  if (auto* g = dynamic_cast<GpuEngine*>(&e)) return *g;
  if (!split_stages(e).empty())
    throw Error("wgc: " + std::string(what) + " is not available: this model is split over " +
                std::to_string(split_stages(e).size()) + " GPUs (LlamaModel::stages gives each one's share)");
  throw not_on_this_engine(what, e.device());
}
}  // namespace

std::vector<DispatchTiming> LlamaModel::profile_decode_step(int32_t token) {
  return gpu_engine(*impl_, "profiling GPU dispatches").profile_decode_step(token);
}
const LlamaWeights& LlamaModel::weights() const { return gpu_engine(*impl_, "the GPU weights").w; }
const LlmOps& LlamaModel::ops() const { return gpu_engine(*impl_, "the GPU ops").ops; }
const RopeTable& LlamaModel::rope() const { return gpu_engine(*impl_, "the GPU RoPE table").rope; }
const RopeTable* LlamaModel::sliding_rope() const {
  const auto& r = gpu_engine(*impl_, "the GPU RoPE table").sliding_rope;
  return r ? &*r : nullptr;
}
const Context& LlamaModel::context() const {
  if (const Context* c = split_context(*impl_)) return *c;
  return gpu_engine(*impl_, "the GPU context").ctx;
}
std::vector<ModelStage> LlamaModel::stages() const {
  if (auto s = split_stages(*impl_); !s.empty()) return s;
  GpuEngine& g = gpu_engine(*impl_, "the GPU stages");
  ModelStage one{g.ctx, &g.ops, &g.w, &g.rope, LayerRange{0, int(g.w.layers.size())}, true, true};
  one.sliding_rope = g.sliding_rope ? &*g.sliding_rope : nullptr;
  return {one};
}

}  // namespace wgc::llm
