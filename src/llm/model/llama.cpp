#include "llm/model/llama.h"

#include "llm/formats/dequant.h"
#include "util/error.h"
#include "util/progress.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <deque>
#include <optional>
#include <string>

namespace wgc::llm {
namespace {

std::optional<WeightType> gpu_type(TensorType t) {
  switch (t) {
    case TensorType::F32: return WeightType::F32;
    case TensorType::F16: return WeightType::F16;
    case TensorType::BF16: return WeightType::BF16;
    case TensorType::Q8_0: return WeightType::Q8_0;
    case TensorType::Q4_0: return WeightType::Q4_0;
    case TensorType::Q4_K: return WeightType::Q4_K;
    case TensorType::Q6_K: return WeightType::Q6_K;
    default: return std::nullopt;
  }
}

// The bytes of a matrix in a type the kernels read: as stored where the kernels know the type,
// else (Q4_1, Q5_*, Q8_K) dequantized once and stored as f16.
struct HostMatrix {
  WeightType type;
  std::vector<std::byte> owned;
  std::span<const std::byte> bytes;
  int64_t rows, cols;
};

// The largest buffer a kernel can bind on this device.
uint64_t device_buffer_limit(const Context& ctx) {
  return std::min(ctx.limits().max_storage_buffer_binding_size, ctx.limits().max_buffer_size);
}

// Physical memory of the host (0: unknown).
uint64_t host_memory_bytes() {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) : 0;
}

// `bytes` of `what` fit the device's buffers (and, when `host` is set, the host's memory): checked
// before anything is converted or allocated, so a bad size is a clear error, not std::bad_alloc.
void check_fits(const Context& ctx, uint64_t bytes, const std::string& what, bool host) {
  uint64_t dev = device_buffer_limit(ctx);
  if (bytes > dev)
    throw Error("wgc: " + what + " needs " + std::to_string(bytes) +
                " bytes in one buffer, beyond the device's limit of " + std::to_string(dev) +
                " (maxStorageBufferBindingSize / maxBufferSize)");
  uint64_t mem = host_memory_bytes();
  if (host && mem && bytes > mem)
    throw Error("wgc: " + what + " needs " + std::to_string(bytes) + " bytes of host memory, beyond the " +
                std::to_string(mem) + " bytes of this machine");
}

// a * b * ... without overflow (UINT64_MAX when it would).
uint64_t product(std::initializer_list<int64_t> xs) {
  uint64_t r = 1;
  for (int64_t x : xs)
    if (x < 0 || __builtin_mul_overflow(r, uint64_t(x), &r)) return UINT64_MAX;
  return r;
}

HostMatrix host_matrix(const Context& ctx, const ModelTensor& t) {
  // What goes to the device: the stored bytes, or f16 for types converted on the host.
  uint64_t gpu_bytes = gpu_type(t.type) ? t.data.size() : product({t.rows(), t.row_length(), 2});
  check_fits(ctx, gpu_bytes,
             "tensor '" + t.name + "' (" + std::to_string(t.rows()) + " x " + std::to_string(t.row_length()) + " " +
                 std::string(to_string(t.type)) + ")",
             !gpu_type(t.type));
  HostMatrix m{WeightType::F16, {}, {}, t.rows(), t.row_length()};
  if (auto g = gpu_type(t.type)) {
    m.type = *g;
    m.bytes = t.data;
    return m;
  }
  std::vector<float> f = to_f32(t);
  m.owned.resize(f.size() * 2);
  for (size_t i = 0; i < f.size(); ++i) {
    uint16_t h = f32_to_f16(f[i]);
    std::memcpy(&m.owned[2 * i], &h, 2);
  }
  m.bytes = m.owned;
  return m;
}

// Matrices that one input feeds (Q|K|V, gate|up): one fused weight when their types agree, so one
// dispatch computes all outputs; otherwise one weight each, writing side by side.
struct LinearGroup {
  std::vector<GpuWeight> parts;  // one part: fused
  std::vector<int64_t> rows;     // rows of each logical matrix
  std::vector<Tensor> biases;    // f32, one per part (empty: no bias)
  int64_t total_rows() const {
    int64_t r = 0;
    for (auto x : rows) r += x;
    return r;
  }
};

LinearGroup upload_group(const Context& ctx, const std::vector<const ModelTensor*>& ts,
                         const std::vector<const ModelTensor*>& biases, Progress& bar) {
  LinearGroup g;
  std::vector<HostMatrix> ms;
  for (auto* t : ts) {
    ms.push_back(host_matrix(ctx, *t));
    g.rows.push_back(t->rows());
  }
  bool fuse = true;
  for (auto& m : ms) fuse &= m.type == ms[0].type && m.cols == ms[0].cols;
  if (fuse && ms.size() > 1) {
    std::vector<std::byte> cat;
    for (auto& m : ms) cat.insert(cat.end(), m.bytes.begin(), m.bytes.end());
    g.parts.push_back(upload_weight(ctx, ms[0].type, cat, g.total_rows(), ms[0].cols));
  } else {
    for (auto& m : ms) g.parts.push_back(upload_weight(ctx, m.type, m.bytes, m.rows, m.cols));
  }
  for (auto* t : ts) bar.add(t->data.size());
  if (!biases.empty()) {
    std::vector<float> cat;
    for (size_t i = 0; i < biases.size(); ++i) {
      if (!biases[i]) throw Error("wgc: " + ts[i]->name + " has no bias but its siblings have");
      auto f = to_f32(*biases[i]);
      if (g.parts.size() > 1)
        g.biases.push_back(make_tensor(ctx, {int64_t(f.size())}, f));
      else
        cat.insert(cat.end(), f.begin(), f.end());
    }
    if (g.parts.size() == 1) g.biases.push_back(make_tensor(ctx, {int64_t(cat.size())}, cat));
  }
  return g;
}

Tensor upload_f32(const Context& ctx, const ModelTensor& t) {
  auto f = to_f32(t);
  return make_tensor(ctx, {int64_t(f.size())}, f);
}

}  // namespace

struct LlamaModel::Impl {
  Context ctx;
  ModelConfig cfg;
  EngineOptions opt;
  LlmOps ops;
  int max_ctx = 0, n_past = 0;
  int64_t hidden = 0, nh = 0, nkv = 0, hd = 0, ffn = 0, vocab = 0, qkv_dim = 0;
  float eps = 1e-5f;
  uint64_t weight_bytes = 0;

  struct Layer {
    Tensor ln1, ln2, q_norm, k_norm;  // q/k norms: Qwen 3 only
    LinearGroup qkv, o, gate_up, down;
  };
  GpuWeight embed;
  std::optional<GpuWeight> lm_head;  // empty: tied to embed
  Tensor norm;
  std::vector<Layer> layers;
  RopeTable rope;
  KvCache kv;

  // Activations for up to opt.max_batch tokens.
  Tensor ids, x, h, qkv, attn, gu, act, last, logits, out_id, top_vals, top_ids;
  int64_t logits_rows = 0;

  Impl(const Context& c, const ModelFile& f, EngineOptions o) : ctx(c), cfg(f.config()), opt(o), ops(c) {
    ops.tuning = opt.tuning;
    if (opt.rope_theta) cfg.rope_theta = *opt.rope_theta;
    if (opt.rope_scaling) {
      cfg.rope_scaling = *opt.rope_scaling;
      cfg.rope_freq_factors.clear();  // the file's per-frequency factors would override the scaling
    }
    hidden = cfg.hidden_size;
    nh = cfg.n_heads;
    nkv = cfg.n_kv_heads;
    hd = cfg.head_dim;
    ffn = cfg.ffn_size;
    vocab = cfg.vocab_size;
    eps = static_cast<float>(cfg.rms_norm_eps);
    qkv_dim = (nh + 2 * nkv) * hd;
    if (cfg.rope_dim != 0 && cfg.rope_dim != hd)
      throw Error("wgc: " + f.path().string() + ": partial rotary embeddings (rope_dim " +
                  std::to_string(cfg.rope_dim) + " of head_dim " + std::to_string(hd) + ") are not supported");
    // (ModelConfig::validate bounds the file's context length to 32 bits.)
    int64_t model_ctx = cfg.max_position_embeddings > 0 ? cfg.max_position_embeddings : kDefaultMaxCtx;
    if (opt.max_ctx < 0) throw Error("wgc: max_ctx is " + std::to_string(opt.max_ctx) + ", expected > 0 (0: default)");
    max_ctx = opt.max_ctx > 0 ? opt.max_ctx : int(std::min<int64_t>(model_ctx, kDefaultMaxCtx));
    check_context(f.path().string());
    opt.max_batch = std::max(1, std::min(opt.max_batch, max_ctx));

    Progress bar("uploading " + f.path().filename().string(), f.total_bytes(), Progress::Unit::Bytes);
    std::vector<WeightType> types;
    auto note_type = [&](const LinearGroup& g) {
      for (auto& p : g.parts) {
        types.push_back(p.type);
        weight_bytes += p.gpu_bytes();
      }
    };
    {
      const auto& e = f.tensor("model.embed_tokens.weight");
      HostMatrix m = host_matrix(ctx, e);
      embed = upload_weight(ctx, m.type, m.bytes, m.rows, m.cols);
      weight_bytes += embed.gpu_bytes();
      bar.add(e.data.size());
    }
    if (!cfg.tie_word_embeddings) {
      LinearGroup g = upload_group(ctx, {&f.tensor("lm_head.weight")}, {}, bar);
      lm_head = g.parts[0];
      note_type(g);
    }
    norm = upload_f32(ctx, f.tensor("model.norm.weight"));
    for (int64_t i = 0; i < cfg.n_layers; ++i) {
      Layer L;
      auto t = [&](const char* s) { return &f.layer_tensor(i, s); };
      auto opt_t = [&](const char* s) { return f.find_layer_tensor(i, s); };
      L.ln1 = upload_f32(ctx, *t("input_layernorm.weight"));
      L.ln2 = upload_f32(ctx, *t("post_attention_layernorm.weight"));
      if (cfg.qk_norm) {
        L.q_norm = upload_f32(ctx, *t("self_attn.q_norm.weight"));
        L.k_norm = upload_f32(ctx, *t("self_attn.k_norm.weight"));
      }
      std::vector<const ModelTensor*> biases;
      if (cfg.attention_bias)
        biases = {opt_t("self_attn.q_proj.bias"), opt_t("self_attn.k_proj.bias"), opt_t("self_attn.v_proj.bias")};
      L.qkv = upload_group(
          ctx, {t("self_attn.q_proj.weight"), t("self_attn.k_proj.weight"), t("self_attn.v_proj.weight")}, biases, bar);
      L.o = upload_group(ctx, {t("self_attn.o_proj.weight")}, {}, bar);
      L.gate_up = upload_group(ctx, {t("mlp.gate_proj.weight"), t("mlp.up_proj.weight")}, {}, bar);
      L.down = upload_group(ctx, {t("mlp.down_proj.weight")}, {}, bar);
      for (auto* g : {&L.qkv, &L.o, &L.gate_up, &L.down}) note_type(*g);
      layers.push_back(std::move(L));
    }
    bar.finish();
    types.push_back(embed.type);
    ops.precompile(types, {int(hd)});

    rope = make_rope(ctx);
    kv = make_kv_cache(ctx, int(cfg.n_layers), int(nkv), max_ctx, int(hd));

    const int64_t B = opt.max_batch;
    ids = make_tensor(ctx, {B}, DType::U32);
    x = make_tensor(ctx, {B, hidden});
    h = make_tensor(ctx, {B, hidden});
    qkv = make_tensor(ctx, {B, qkv_dim});
    attn = make_tensor(ctx, {B, nh * hd});
    gu = make_tensor(ctx, {B, 2 * ffn});
    act = make_tensor(ctx, {B, ffn});
    last = make_tensor(ctx, {hidden});
    out_id = make_tensor(ctx, {1}, DType::U32);
    top_vals = make_tensor(ctx, {64});
    top_ids = make_tensor(ctx, {64}, DType::U32);
  }

  // The KV cache and the rope table for max_ctx positions fit the device (and the rope table the
  // host), before any weight is uploaded.
  void check_context(const std::string& file) const {
    std::string what = "a context of " + std::to_string(max_ctx) + " positions (max_ctx) for " + file;
    uint64_t kv_elems = product({cfg.n_layers, nkv, max_ctx, hd});
    if (kv_elems >= (uint64_t(1) << 32))
      throw Error("wgc: " + what + " needs a KV cache of " + std::to_string(kv_elems) +
                  " elements per tensor, beyond the 2^32 its offsets address; lower max_ctx");
    check_fits(ctx, product({int64_t(kv_elems), 4}), what + ": the KV cache", false);
    check_fits(ctx, product({max_ctx, hd, 4}), what + ": the rope table", true);
  }

  // cos/sin of f32(pos) * inv_freq (an f32 product, as transformers computes it).
  RopeTable make_rope(const Context& c) const {
    std::vector<double> inv = cfg.rope_inv_freq();
    std::vector<float> cs(size_t(max_ctx) * inv.size() * 2);
    for (int p = 0; p < max_ctx; ++p)
      for (size_t i = 0; i < inv.size(); ++i) {
        float angle = float(p) * float(inv[i]);
        cs[(size_t(p) * inv.size() + i) * 2] = float(std::cos(double(angle)));
        cs[(size_t(p) * inv.size() + i) * 2 + 1] = float(std::sin(double(angle)));
      }
    RopeTable t;
    t.cos_sin = make_tensor(c, {int64_t(cs.size())}, cs);
    t.head_dim = int(hd);
    t.max_pos = max_ctx;
    return t;
  }

  // y[t, off + ...] = group x (each part writing its rows side by side), optionally accumulating.
  void linear(Batch& b, const LinearGroup& g, const Tensor& in, const Tensor& y, int n, int64_t y_stride,
              bool accumulate) {
    int64_t off = 0;
    for (size_t i = 0; i < g.parts.size(); ++i) {
      LinearOptions o;
      o.y_stride = y_stride;
      o.y_offset = off;
      o.accumulate = accumulate;
      if (!g.biases.empty()) o.bias = g.biases[i];
      ops.linear(b, g.parts[i], in, y, n, o);
      off += g.parts[i].rows;
    }
  }

  void check_tokens(std::span<const int32_t> tokens) const {
    if (tokens.empty()) throw Error("wgc: no tokens to run");
    for (int32_t id : tokens)
      if (id < 0 || id >= vocab)
        throw Error("wgc: token id " + std::to_string(id) + " is outside the vocabulary (0.." +
                    std::to_string(vocab - 1) + ")");
    if (n_past + int64_t(tokens.size()) > max_ctx)
      throw Error("wgc: context full: " + std::to_string(n_past) + " cached + " + std::to_string(tokens.size()) +
                  " new tokens exceed the context length " + std::to_string(max_ctx) +
                  " (raise it with --ctx, or start a new conversation)");
  }

  void upload_ids(std::span<const int32_t> tokens) {
    std::vector<uint32_t> u(tokens.begin(), tokens.end());
    upload(ctx, ids, std::as_bytes(std::span(u)));
  }

  // Records the layers for tokens at n_past into b; leaves the final-normed hidden states in h.
  void record_layers(Batch& b, std::span<const int32_t> tokens) {
    upload_ids(tokens);
    record_layers(b, int(tokens.size()));
  }
  // The same for n tokens whose ids are already in `ids` (put there by an earlier step).
  void record_layers(Batch& b, int n) {
    ops.embedding(b, embed, ids, x, n);
    for (size_t li = 0; li < layers.size(); ++li) {
      auto& L = layers[li];
      KvLayer cache = kv.layer(int(li));
      ops.rms_norm(b, x, L.ln1, h, n, int(hidden), eps);
      linear(b, L.qkv, h, qkv, n, qkv_dim, false);
      if (cfg.qk_norm) {
        ops.head_rms_norm(b, qkv, L.q_norm, n, int(nh), int(hd), qkv_dim, 0, eps);
        ops.head_rms_norm(b, qkv, L.k_norm, n, int(nkv), int(hd), qkv_dim, nh * hd, eps);
      }
      RopeKvArgs ra;  // q|k|v back to back in each qkv row
      ra.n_tokens = n;
      ra.n_heads = int(nh);
      ra.stride = qkv_dim;
      ra.pos0 = n_past;
      ops.rope_kv_append(b, qkv, rope, cache, ra);
      AttentionArgs aa;
      aa.n_tokens = n;
      aa.n_heads = int(nh);
      aa.start = n_past;
      aa.q_stride = qkv_dim;
      ops.attention(b, cache, qkv, attn, aa);
      linear(b, L.o, attn, x, n, hidden, true);
      ops.rms_norm(b, x, L.ln2, h, n, int(hidden), eps);
      linear(b, L.gate_up, h, gu, n, 2 * ffn, false);
      ops.swiglu(b, gu, 2 * ffn, 0, gu, 2 * ffn, ffn, act, n, int(ffn));
      linear(b, L.down, act, x, n, hidden, true);
    }
    ops.rms_norm(b, x, norm, h, n, int(hidden), eps);
  }

  const GpuWeight& output() const { return lm_head ? *lm_head : embed; }

  void ensure_logits(int64_t rows) {
    if (logits_rows >= rows) return;
    logits = make_tensor(ctx, {rows, vocab});
    logits_rows = rows;
  }

  // Runs all but the last chunk of a long prompt; returns the last chunk.
  std::span<const int32_t> prefill_chunks(std::span<const int32_t> tokens) {
    check_tokens(tokens);
    while (int64_t(tokens.size()) > opt.max_batch) {
      auto chunk = tokens.first(size_t(opt.max_batch));
      Batch b(ctx);
      record_layers(b, chunk);
      b.run();
      n_past += int(chunk.size());
      tokens = tokens.subspan(chunk.size());
    }
    return tokens;
  }

  // Records the last chunk and the logits of its last position into `b`.
  void record_last(Batch& b, std::span<const int32_t> tokens) {
    upload_ids(tokens);
    record_last(b, int(tokens.size()));
  }
  void record_last(Batch& b, int n) {
    record_layers(b, n);
    b.copy(h, uint64_t(n - 1) * uint64_t(hidden) * 4, last, 0, uint64_t(hidden) * 4);
    ensure_logits(1);
    ops.linear(b, output(), last, logits, 1);
  }
  // The same and the argmax of those logits, into out_id; returns its readback.
  Readback record_argmax(Batch& b, int n) {
    record_last(b, n);
    ops.argmax(b, logits, vocab, out_id);
    return b.read(out_id, 0, 4);
  }
};

LlamaModel::LlamaModel(const Context& ctx, const ModelFile& file, EngineOptions options)
    : impl_(std::make_unique<Impl>(ctx, file, options)) {}
LlamaModel::~LlamaModel() = default;
LlamaModel::LlamaModel(LlamaModel&&) noexcept = default;

const ModelConfig& LlamaModel::config() const { return impl_->cfg; }
int LlamaModel::max_ctx() const { return impl_->max_ctx; }
int LlamaModel::n_past() const { return impl_->n_past; }
uint64_t LlamaModel::weight_bytes() const { return impl_->weight_bytes; }

void LlamaModel::rewind(int n) {
  if (n < 0 || n > impl_->n_past) throw Error("wgc: cannot rewind to position " + std::to_string(n));
  impl_->n_past = n;
}

std::vector<float> LlamaModel::logits(std::span<const int32_t> tokens) {
  auto& im = *impl_;
  tokens = im.prefill_chunks(tokens);
  Batch b(im.ctx);
  im.record_last(b, tokens);
  b.run();
  im.n_past += int(tokens.size());
  std::vector<float> out(size_t(im.vocab));
  download(im.ctx, im.logits, std::as_writable_bytes(std::span(out)));
  return out;
}

std::vector<float> LlamaModel::all_logits(std::span<const int32_t> tokens) {
  auto& im = *impl_;
  im.check_tokens(tokens);
  std::vector<float> out;
  out.reserve(tokens.size() * size_t(im.vocab));
  while (!tokens.empty()) {
    auto chunk = tokens.first(std::min<size_t>(tokens.size(), size_t(im.opt.max_batch)));
    im.ensure_logits(int64_t(chunk.size()));
    Batch b(im.ctx);
    im.record_layers(b, chunk);
    im.ops.linear(b, im.output(), im.h, im.logits, int(chunk.size()));
    b.run();
    im.n_past += int(chunk.size());
    size_t at = out.size();
    out.resize(at + chunk.size() * size_t(im.vocab));
    download(im.ctx, im.logits, std::as_writable_bytes(std::span(out).subspan(at)));
    tokens = tokens.subspan(chunk.size());
  }
  return out;
}

int32_t LlamaModel::greedy(std::span<const int32_t> tokens) {
  auto& im = *impl_;
  tokens = im.prefill_chunks(tokens);
  Batch b(im.ctx);
  im.upload_ids(tokens);
  Readback id = im.record_argmax(b, int(tokens.size()));
  b.submit();
  im.n_past += int(tokens.size());
  return int32_t(id.value<uint32_t>());
}

DecodeStats LlamaModel::decode_greedy(int32_t first, int max_steps, const std::function<bool(int32_t)>& on_token) {
  auto& im = *impl_;
  using clock = std::chrono::steady_clock;
  auto ms = [](clock::time_point a, clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
  };
  DecodeStats st;
  im.check_tokens(std::span(&first, 1));
  const int base = im.n_past;
  const int steps = std::min(max_steps, im.max_ctx - base);
  const int ahead = std::max(1, im.opt.decode_ahead);
  std::deque<Readback> in_flight;  // the argmax of each recorded step, oldest first
  im.upload_ids(std::span(&first, 1));
  bool go = true;
  while (go && st.tokens < steps) {
    auto t0 = clock::now();
    while (st.recorded < steps && int(in_flight.size()) < ahead) {
      Batch b(im.ctx);
      if (st.recorded > 0) b.copy(im.out_id, 0, im.ids, 0, 4);  // the previous step's token
      im.n_past = base + st.recorded;
      in_flight.push_back(im.record_argmax(b, 1));
      b.submit();
      ++st.recorded;
    }
    auto t1 = clock::now();
    auto id = int32_t(in_flight.front().value<uint32_t>());
    in_flight.pop_front();
    st.record_ms += ms(t0, t1);
    st.wait_ms += ms(t1, clock::now());
    ++st.tokens;
    im.n_past = base + st.tokens;
    go = on_token(id);
  }
  im.n_past = base + st.tokens;
  return st;  // readbacks of dropped steps wait for their copies as they go
}

std::vector<DispatchTiming> LlamaModel::profile_decode_step(int32_t token) {
  auto& im = *impl_;
  im.check_tokens(std::span(&token, 1));
  Batch b(im.ctx, /*timed=*/true);
  im.upload_ids(std::span(&token, 1));
  im.record_argmax(b, 1);
  b.run();
  return b.timings();
}

TopK LlamaModel::top_k(std::span<const int32_t> tokens, int k) {
  auto& im = *impl_;
  if (k < 1 || k > 64 || k > im.vocab) throw Error("wgc: top_k takes 1..64 candidates, got " + std::to_string(k));
  tokens = im.prefill_chunks(tokens);
  Batch b(im.ctx);
  im.record_last(b, tokens);
  im.ops.topk(b, im.logits, im.vocab, k, im.top_vals, im.top_ids);
  b.run();
  im.n_past += int(tokens.size());
  TopK r;
  r.logits.resize(size_t(k));
  std::vector<uint32_t> ids(static_cast<size_t>(k));
  download(im.ctx, im.top_vals, std::as_writable_bytes(std::span(r.logits)));
  download(im.ctx, im.top_ids, std::as_writable_bytes(std::span(ids)));
  r.ids.assign(ids.begin(), ids.end());
  return r;
}

}  // namespace wgc::llm
