#include "llm/model/llama_cpu.h"

#include "cpu/llm/dequant.h"
#include "cpu/llm/rope_table.h"
#include "llm/model/partial_rope.h"
#include "util/error.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

namespace wgc::llm {

namespace {

// A matrix as the kernels read it: in place where they know its type, else (Q4_1, Q5_*, Q8_K, ...)
// converted once to f16, as the GPU engine does.
cpu::Weight matrix(CpuWeights& w, const ModelTensor& t) {
  cpu::Weight m;
  m.rows = t.rows();
  m.cols = t.row_length();
  if (cpu::kernels_read(t.type) && m.cols % int64_t(block_size(t.type)) == 0) {
    m.type = t.type;
    m.data = t.data.data();
    m.row_bytes = int64_t(*row_bytes(t.type, uint64_t(m.cols)));
  } else {
    const std::vector<float> f = to_f32(t);
    auto buf = std::make_unique<std::byte[]>(f.size() * 2);
    for (size_t i = 0; i < f.size(); ++i) {
      const uint16_t h = f32_to_f16(f[i]);
      std::memcpy(buf.get() + 2 * i, &h, 2);
    }
    m.type = TensorType::F16;
    m.data = buf.get();
    m.row_bytes = m.cols * 2;
    w.owned.push_back(std::move(buf));
  }
  // The default kernel level's repacked copy, where it has one for this type (cpu::Kernels::pack:
  // the same bytes, laid out for its kernels); the file's rows stay for the other levels.
  const cpu::Kernels& k = cpu::kernels();
  if (const int64_t n = k.packed_bytes ? k.packed_bytes(m) : 0; n > 0) {
    auto buf = std::make_unique_for_overwrite<std::byte[]>(size_t(n));
    k.pack(m, buf.get(), 0, m.rows / k.tile_rows);
    m.packed = buf.get();
    m.packed_isa = k.isa;
    w.owned.push_back(std::move(buf));
  }
  w.bytes += uint64_t(m.rows) * uint64_t(m.row_bytes);
  w.max_cols = std::max(w.max_cols, m.cols);
  return m;
}

CpuGroup group(CpuWeights& w, const std::vector<const ModelTensor*>& ts,
               const std::vector<const ModelTensor*>& biases) {
  CpuGroup g;
  for (auto* t : ts) {
    g.parts.push_back(matrix(w, *t));
    g.rows += g.parts.back().rows;
    (cpu::takes_q8(g.parts.back().type) ? g.quantized : g.floats) = true;
  }
  if (!biases.empty()) {
    for (size_t i = 0; i < biases.size(); ++i) {
      if (!biases[i]) throw Error("wgc: " + ts[i]->name + " has no bias but its siblings have");
      g.bias.push_back(to_f32(*biases[i]));
    }
  }
  return g;
}

// The CPU engine's facts: its kernels take none of the plan's fusions (8-bit activations are
// the linear kernels' own business), so it runs each stage's plain form.
PlanFacts cpu_plan_facts(const CpuWeights& w, size_t li) {
  PlanFacts f;
  f.mode = PlanMode::Prefill;
  f.set(Fact::QkNorm, w.cfg.qk_norm || w.cfg.qk_norm_whole);
  f.set(Fact::Moe, li < w.layers.size() && w.layers[li].moe.has_value());
  f.set(Fact::PostNorms, w.cfg.norm_placement == NormPlacement::Sandwich);
  f.set(Fact::GeluGlu, w.cfg.activation == Activation::GeluTanh);
  f.set(Fact::FinalSoftcap, w.cfg.final_logit_softcap > 0);
  return f;
}

// A norm weight as the engine multiplies by it: Gemma's Hugging Face files store w of x * (1 + w),
// added here in f32 as transformers does (llama.cpp's converter adds it into its GGUF).
std::vector<float> norm_weight(const ModelTensor& t, const ModelConfig& cfg) {
  std::vector<float> f = to_f32(t);
  if (cfg.norm == NormKind::RmsNormOnePlus)
    for (float& x : f) x = 1.0f + x;
  return f;
}

// A matrix converted to f32 once (the router: its top-k is not left to 8-bit activations).
cpu::Weight f32_matrix(CpuWeights& w, const ModelTensor& t) {
  const std::vector<float> f = to_f32(t);
  auto buf = std::make_unique<std::byte[]>(f.size() * 4);
  std::memcpy(buf.get(), f.data(), f.size() * 4);
  ModelTensor c = t;
  c.type = TensorType::F32;
  c.data = std::span<const std::byte>(buf.get(), f.size() * 4);
  w.owned.push_back(std::move(buf));
  return matrix(w, c);
}

CpuMoe load_moe(CpuWeights& w, const ModelFile& f, int64_t li, const CpuLayer& L) {
  CpuMoe m;
  static_cast<MoeShape&>(m) = moe_shape(f, !L.mat(Mat::GateUp).parts.empty());
  m.router.parts.push_back(f32_matrix(w, role_tensor(f, TensorRole::MoeRouter, li)));
  if (m.shared_ffn) {
    ModelTensor g = role_tensor(f, TensorRole::SharedExpertRouter, li);
    g.shape = {1, g.row_length()};  // GGUF stores it as a vector
    m.router.parts.push_back(f32_matrix(w, g));
  }
  for (const auto& p : m.router.parts) m.router.rows += p.rows;
  m.router.floats = true;
  for (int64_t e = 0; e < m.n_experts; ++e) {
    const ModelTensor g = role_tensor(f, TensorRole::ExpertsGate, li, e),
                      u = role_tensor(f, TensorRole::ExpertsUp, li, e),
                      d = role_tensor(f, TensorRole::ExpertsDown, li, e);
    m.gate_up.push_back(group(w, {&g, &u}, {}));
    m.down.push_back(group(w, {&d}, {}));
  }
  return m;
}

}  // namespace

std::shared_ptr<const CpuWeights> load_cpu_weights(const ModelFile& f, std::optional<double> rope_theta,
                                                   std::optional<RopeScaling> rope_scaling) {
  auto w = std::make_shared<CpuWeights>();
  w->cfg = f.config();
  auto& cfg = w->cfg;
  if (rope_theta) cfg.rope_theta = *rope_theta;
  if (rope_scaling) {
    cfg.rope_scaling = *rope_scaling;
    cfg.rope_freq_factors.clear();  // the file's per-frequency factors would override the scaling
  }
  w->hidden = cfg.hidden_size;
  w->nh = cfg.n_heads;
  w->nkv = cfg.n_kv_heads;
  w->hd = cfg.head_dim;
  w->ffn = cfg.ffn_size;
  w->vocab = cfg.vocab_size;
  w->eps = static_cast<float>(cfg.rms_norm_eps);
  w->qkv_dim = (w->nh + 2 * w->nkv) * w->hd;
  check_partial_rope(cfg, f.path().string());
  w->file = f.data_owner();

  const ModelTensor& e = f.tensor("model.embed_tokens.weight");
  w->embed = &e;
  w->embed_type = e.type;
  w->embed_bytes = e.data;
  if (!is_float_like(e.type))
    throw Error("wgc: " + f.path().string() + ": embeddings of type " + std::string(to_string(e.type)));
  w->output = group(*w, {cfg.tie_word_embeddings ? &e : &f.tensor("lm_head.weight")}, {});
  w->norm = norm_weight(f.tensor("model.norm.weight"), cfg);
  for (int64_t i = 0; i < cfg.n_layers; ++i) {
    CpuLayer L;
    const LayerTensors lt = f.layer(i);
    for (NormW n : kLayerNorms)
      if (const ModelTensor* t = lt[norm_tensor(n)]) L.norms[size_t(n)] = norm_weight(*t, cfg);
    LayerMats lm = layer_mats(f, i);
    for (Mat m : kLayerMats)
      if (!lm.tensors[size_t(m)].empty()) L.mats[size_t(m)] = group(*w, lm.tensors[size_t(m)], lm.biases[size_t(m)]);
    for (auto& b : lm.owned) w->owned.push_back(std::move(b));  // the CPU engine reads the reordered rows in place
    if (cfg.layer_is_moe(i)) L.moe = load_moe(*w, f, i, L);
    w->layers.push_back(std::move(L));
  }
  return w;
}

CpuKvCache::CpuKvCache(const CpuWeights& w, int64_t n_slots, std::span<const int> ring_rows)
    : slots(n_slots), row(w.nkv * w.hd) {
  if (n_slots < 1 || uint64_t(n_slots) * uint64_t(row) > (uint64_t(1) << 40))
    throw Error("wgc: a KV cache of " + std::to_string(n_slots) + " positions");
  if (!ring_rows.empty() && ring_rows.size() != w.layers.size())
    throw Error("wgc: a KV cache of " + std::to_string(ring_rows.size()) + " layer sizes for " +
                std::to_string(w.layers.size()) + " layers");
  int64_t fewest = n_slots;
  for (size_t l = 0; l < w.layers.size(); ++l) {
    const int64_t s = ring_rows.empty() ? n_slots : ring_rows[l];
    if (s < 1 || s > n_slots) throw Error("wgc: a KV cache layer of " + std::to_string(s) + " positions");
    layer_slots.push_back(s);
    fewest = std::min(fewest, s);
    // for_overwrite: no zeroing, so untouched positions cost no memory.
    k.push_back(std::make_unique_for_overwrite<float[]>(size_t(s * row)));
    v.push_back(std::make_unique_for_overwrite<float[]>(size_t(s * row)));
  }
  ring_table.assign(size_t(n_slots / fewest + 1), 0);
}

CpuForward::CpuForward(std::shared_ptr<const CpuWeights> w, std::shared_ptr<cpu::ThreadPool> pool, int max_tokens,
                       int max_pos, std::optional<cpu::Isa> isa)
    : w_(std::move(w)),

      k_(isa ? cpu::kernels(*isa) : cpu::kernels()),
      pool_(std::move(pool)),
      max_tokens_(max_tokens),
      max_pos_(max_pos) {
  const CpuWeights& W = *w_;
  for (size_t li = 0; li < std::max<size_t>(1, W.layers.size()); ++li)
    plans_.push_back(plan_layer(cpu_plan_facts(W, li)));
  // as make_llama_rope (and Gemma 3's sliding layers' own: sliding_rope_layer)
  const size_t half = size_t(W.hd / 2);  // partial rotary: pairs past rope_dim / 2 are (1, 0)
  rope_ = rope_cos_sin(W.cfg.rope_inv_freq(-1, max_pos), max_pos, W.cfg.rope_attention_factor(), half);
  if (const int64_t l = W.cfg.sliding_rope_layer(); l >= 0)
    sliding_rope_ = rope_cos_sin(W.cfg.rope_inv_freq(l, max_pos), max_pos, W.cfg.rope_attention_factor(l), half);
  const size_t T = size_t(max_tokens);
  for (const CpuLayer& L : W.layers)
    if (L.moe) {
      const CpuMoe& m = *L.moe;
      const size_t P = T * size_t(m.k), H = size_t(W.hidden);
      moe_logits_.resize(std::max(moe_logits_.size(), T * size_t(m.router.rows)));
      moe_x_.resize(T * H);
      moe_gu_.resize(std::max(moe_gu_.size(), T * size_t(2 * m.ffn)));
      moe_act_.resize(std::max(moe_act_.size(), T * size_t(m.ffn)));
      moe_out_.resize(T * H);
      moe_y_.resize(std::max(moe_y_.size(), P * H));
      moe_sgu_.resize(std::max(moe_sgu_.size(), T * size_t(2 * m.shared_ffn)));
      moe_sact_.resize(std::max(moe_sact_.size(), T * size_t(m.shared_ffn)));
      moe_ys_.resize(m.shared_ffn ? T * H : moe_ys_.size());
    }
  x_.resize(T * size_t(W.hidden));
  h_.resize(T * size_t(W.hidden));
  qkv_.resize(T * size_t(W.qkv_dim));
  attn_.resize(T * size_t(W.nh * W.hd));
  gu_.resize(T * size_t(2 * W.ffn));
  act_.resize(T * size_t(W.ffn));
  xq_.resize(max_tokens, (W.max_cols + 31) / 32 * 32);
  const size_t scratch = size_t(k_.linear_scratch(W.max_cols)) + 64;
  scratch_.resize(size_t(pool_->size()), std::vector<std::byte>(scratch));
  scores_.resize(size_t(pool_->size()), std::vector<float>(size_t(max_pos)));
}

namespace {

// y = x / sqrt(mean(x^2) + eps) * w for rows [t0, t1) of dim values, stride apart (in place is fine).
void rms_rows(const float* x, const std::vector<float>& w, float* y, int64_t t0, int64_t t1, int64_t dim,
              int64_t stride, float eps) {
  for (int64_t t = t0; t < t1; ++t) {
    const float* xt = x + t * stride;
    float* yt = y + t * stride;
    double ss = 0;
    for (int64_t i = 0; i < dim; ++i) ss += double(xt[i]) * xt[i];
    const double inv = 1.0 / std::sqrt(ss / double(dim) + double(eps));
    for (int64_t i = 0; i < dim; ++i) yt[i] = float(double(xt[i]) * inv * w[size_t(i)]);
  }
}

}  // namespace

void CpuForward::rms_norm(const float* x, const std::vector<float>& w, float* y, int64_t n, int64_t dim,
                          int64_t stride) {
  if (n == 1)
    rms_rows(x, w, y, 0, 1, dim, stride, w_->eps);
  else
    pool_->parallel_for(n, [&](int64_t t, int) { rms_rows(x, w, y, t, t + 1, dim, stride, w_->eps); });
}

void CpuForward::linear(const CpuGroup& g, const float* in, int64_t in_stride, int64_t n, float* y, int64_t y_stride,
                        bool accumulate) {
  const int64_t cols = g.parts[0].cols;
  cpu::LinearIo io;
  io.x = in;
  io.x_stride = in_stride;
  io.n = n;
  io.y_stride = y_stride;
  io.accumulate = accumulate;
  if (g.quantized) {
    xq_.k = cols;
    io.xq = xq_.rows();
    const int64_t per = std::max<int64_t>(1, (n + 4 * pool_->size() - 1) / (4 * pool_->size()));
    pool_->parallel_for((n + per - 1) / per, [&](int64_t i, int) {
      k_.quantize(in, in_stride, i * per, std::min(n, (i + 1) * per), io.xq);
    });
  }
  // Chunks of rows (multiples of the kernels' tiles), several per thread for balance.
  const int64_t threads = pool_->size(), tile = k_.tile_rows;
  const int64_t chunk = std::clamp<int64_t>(g.rows / (8 * threads) / tile * tile, tile, std::max<int64_t>(128, tile));
  int64_t tasks = 0;
  for (const auto& p : g.parts) tasks += (p.rows + chunk - 1) / chunk;
  pool_->parallel_for(tasks, [&](int64_t task, int th) {
    size_t part = 0;
    int64_t off = 0;  // the part's first output column
    for (;; ++part) {
      const int64_t c = (g.parts[part].rows + chunk - 1) / chunk;
      if (task < c) break;
      task -= c;
      off += g.parts[part].rows;
    }
    const cpu::Weight& wt = g.parts[part];
    const int64_t r0 = task * chunk, r1 = std::min(wt.rows, r0 + chunk);
    cpu::LinearIo pio = io;
    pio.y = y + off;
    auto* raw = scratch_[size_t(th)].data();
    void* s = reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(raw) + 63) & ~uintptr_t(63));
    k_.linear(wt, pio, r0, r1, s);
    if (!g.bias.empty())
      for (int64_t t = 0; t < n; ++t)
        for (int64_t r = r0; r < r1; ++r) pio.y[t * y_stride + r] += g.bias[part][size_t(r)];
  });
}

void CpuForward::run_layer(size_t li, int64_t n, std::span<const CpuSequence> seqs, const std::vector<int32_t>& seq_of,
                           const std::vector<int32_t>& pos, CpuKvCache& kv, int64_t block) {
  const CpuWeights& W = *w_;
  const CpuLayer& L = W.layers[li];
  const int64_t hd = W.hd, nh = W.nh, nkv = W.nkv, qkv_dim = W.qkv_dim, ffn = W.ffn;
  struct Act {
    float* p;
    int64_t width;
  };
  auto act = [&](Buf b) -> Act {
    switch (b) {
      case Buf::X: return {x_.data(), W.hidden};
      case Buf::H: return {h_.data(), W.hidden};
      case Buf::Qkv: return {qkv_.data(), qkv_dim};
      case Buf::Attn: return {attn_.data(), nh * hd};
      case Buf::Gu: return {gu_.data(), 2 * ffn};
      case Buf::Act: return {act_.data(), ffn};
      case Buf::Logits: break;
    }
    throw Error("wgc: CPU engine: no buffer for this layer step");
  };
  float* kc = kv.k[li].get();
  float* vc = kv.v[li].get();
  // A ring (one sequence): position p in slot p % its slots, as blocks of that size all at 0.
  const bool ring = kv.ring(li);
  const int64_t ring_block = kv.layer_slots[li];
  auto slot = [&](int64_t t) {
    const CpuSequence& s = seqs[size_t(seq_of[size_t(t)])];
    const int64_t p = pos[size_t(t)];
    if (ring) return p % ring_block;
    return int64_t(s.blocks[size_t(p / block)]) * block + p % block;
  };
  for (const Step& st : plans_[li].steps) {
    const Act in = act(st.in), out = act(st.out);
    switch (st.op) {
      case Op::Norm: rms_norm(in.p, L.norm(st.norm), out.p, n, W.hidden, in.width); break;
      case Op::NormAdd:  // out += rms_norm(in) * w (Gemma's norms of the attention and MLP outputs)
        rms_norm(in.p, L.norm(st.norm), in.p, n, W.hidden, in.width);
        pool_->parallel_for(n, [&](int64_t t, int) {
          for (int64_t i = 0; i < W.hidden; ++i) out.p[t * out.width + i] += in.p[t * in.width + i];
        });
        break;
      case Op::Linear: linear(L.mat(st.mat), in.p, in.width, n, out.p, out.width, st.accumulate); break;
      case Op::HeadNorm:  // per token: the q heads, then the k heads
        pool_->parallel_for(n, [&](int64_t t, int) {
          float* row = in.p + t * in.width;
          if (W.cfg.qk_norm_whole) {  // OLMoE: over all heads at once
            rms_rows(row, L.norm(NormW::Q), row, 0, 1, nh * hd, nh * hd, W.eps);
            rms_rows(row + nh * hd, L.norm(NormW::K), row + nh * hd, 0, 1, nkv * hd, nkv * hd, W.eps);
          } else {
            rms_rows(row, L.norm(NormW::Q), row, 0, nh, hd, hd, W.eps);
            rms_rows(row + nh * hd, L.norm(NormW::K), row + nh * hd, 0, nkv, hd, hd, W.eps);
          }
        });
        break;
      case Op::RopeAppend:  // per token: RoPE on q and k (pairs (i, i + hd/2)), K and V into the cache
        pool_->parallel_for(n, [&](int64_t t, int) {
          float* row = in.p + t * in.width;
          const int64_t half = hd / 2;
          const std::vector<float>& table =
              !sliding_rope_.empty() && W.cfg.layer_is_sliding(int64_t(li)) ? sliding_rope_ : rope_;
          const float* cs = table.data() + size_t(pos[size_t(t)]) * size_t(half) * 2;
          for (int64_t head = 0; head < nh + nkv; ++head) {
            float* v = row + head * hd;
            for (int64_t i = 0; i < half; ++i) {
              const float c = cs[2 * i], s = cs[2 * i + 1], a = v[i], b = v[i + half];
              v[i] = a * c - b * s;
              v[i + half] = b * c + a * s;
            }
          }
          const int64_t at = slot(t) * kv.row;
          std::memcpy(kc + at, row + nh * hd, size_t(kv.row) * 4);
          std::memcpy(vc + at, row + (nh + nkv) * hd, size_t(kv.row) * 4);
        });
        break;
      case Op::Attention: {  // per token and head
        const int64_t group = nh / nkv;
        const float scale = float(W.cfg.attention_scale());  // 1/sqrt(head_dim or query_pre_attn_scalar)
        // the layer's sliding window (Mistral: every layer; Gemma: some): keys pos - window + 1 .. pos
        const int64_t window = W.cfg.layer_is_sliding(int64_t(li)) ? *W.cfg.sliding_window : 0;
        pool_->parallel_for(n * nh, [&](int64_t i, int th) {
          const int64_t t = i / nh, head = i % nh, kvh = head / group;
          const CpuSequence& s = seqs[size_t(seq_of[size_t(t)])];
          cpu::AttendArgs a;
          a.q = in.p + t * in.width + head * hd;
          a.head_dim = int(hd);
          a.scale = scale;
          a.softcap = float(W.cfg.attn_logit_softcap);
          a.k = kc + kvh * hd;
          a.v = vc + kvh * hd;
          a.kv_stride = kv.row;
          a.blocks = ring ? kv.ring_table.data() : s.blocks.data();
          a.block = ring ? ring_block : block;
          a.len = pos[size_t(t)] + 1;
          a.first = window > 0 ? std::max<int64_t>(0, a.len - window) : 0;
          a.scores = scores_[size_t(th)].data();
          a.out = out.p + t * out.width + head * hd;
          k_.attend(a);
        });
        break;
      }
      case Op::Glu:
        pool_->parallel_for(n, [&](int64_t t, int) {
          const float* g = in.p + t * in.width;
          if (W.cfg.activation == Activation::GeluTanh) {  // GeGLU (Gemma): gelu_pytorch_tanh(g) * u
            float* o = out.p + t * out.width;
            for (int64_t i = 0; i < ffn; ++i) {
              const float x = g[i];
              o[i] = 0.5f * x * (1.f + std::tanh(0.7978845608028654f * (x + 0.044715f * x * x * x))) * g[ffn + i];
            }
          } else {
            k_.swiglu(g, g + ffn, out.p + t * out.width, ffn);
          }
        });
        break;
      case Op::Moe: moe(L, in.p, out.p, n); break;
      default: throw Error("wgc: CPU engine: the layer plan has a step it does not run: " + to_string(st));
    }
  }
}

int64_t CpuForward::step(std::span<const CpuSequence> seqs, CpuKvCache& kv, int64_t block, bool all_rows,
                         std::vector<float>& out) {
  const CpuWeights& W = *w_;
  const int64_t hidden = W.hidden;
  // Per token: its sequence and position.
  std::vector<int32_t> ids, seq_of, pos;
  for (size_t s = 0; s < seqs.size(); ++s)
    for (size_t i = 0; i < seqs[s].tokens.size(); ++i) {
      ids.push_back(seqs[s].tokens[i]);
      seq_of.push_back(int32_t(s));
      pos.push_back(seqs[s].pos0 + int32_t(i));
    }
  const int64_t n = int64_t(ids.size());
  if (n == 0 || n > max_tokens_)
    throw Error("wgc: CPU engine: " + std::to_string(n) + " tokens in a step (1.." + std::to_string(max_tokens_) + ")");
  for (int32_t p : pos)
    if (p >= max_pos_)
      throw Error("wgc: CPU engine: position " + std::to_string(p) + " past " + std::to_string(max_pos_));

  // Embeddings: each token's row dequantized.
  const uint64_t embed_row = *row_bytes(W.embed_type, uint64_t(hidden));
  pool_->parallel_for(n, [&](int64_t t, int) {
    dequantize(W.embed_type, W.embed_bytes.subspan(size_t(ids[size_t(t)]) * embed_row, embed_row),
               std::span<float>(x_.data() + t * hidden, size_t(hidden)));
    if (W.cfg.embedding_scale != 1.0) {  // Gemma: times f32(sqrt(hidden))
      const float s = float(W.cfg.embedding_scale);
      for (int64_t i = 0; i < hidden; ++i) x_[size_t(t * hidden + i)] *= s;
    }
  });

  for (size_t li = 0; li < W.layers.size(); ++li) run_layer(li, n, seqs, seq_of, pos, kv, block);

  // The final norm and the logits of the rows wanted.
  std::vector<int64_t> rows;
  if (all_rows) {
    for (int64_t t = 0; t < n; ++t) rows.push_back(t);
  } else {
    int64_t t = 0;
    for (const auto& s : seqs) {
      t += int64_t(s.tokens.size());
      if (s.logits)
        for (int64_t r = std::min<int64_t>(s.rows, int64_t(s.tokens.size())); r >= 1; --r) rows.push_back(t - r);
    }
  }
  const int64_t m = int64_t(rows.size());
  if (m == 0) return 0;
  last_.resize(size_t(m * hidden));
  for (int64_t r = 0; r < m; ++r)
    std::memcpy(last_.data() + r * hidden, x_.data() + rows[size_t(r)] * hidden, size_t(hidden) * 4);
  out.resize(size_t(m * W.vocab));
  for (const Step& st : plans_[0].output) {
    if (st.op == Op::Norm)
      rms_norm(last_.data(), W.norm, last_.data(), m, hidden, hidden);
    else if (st.op == Op::Linear && output_hidden_)
      out.assign(last_.begin(), last_.end());
    else if (st.op == Op::Linear)
      linear(W.output, last_.data(), hidden, m, out.data(), W.vocab, false);
    else if (st.op == Op::Softcap)  // Gemma 2: cap * tanh(logit / cap)
      for (float& x : out) x = float(W.cfg.final_logit_softcap * std::tanh(double(x) / W.cfg.final_logit_softcap));
    else
      throw Error("wgc: CPU engine: the output plan has a step it does not run: " + to_string(st));
  }
  return m;
}

}  // namespace wgc::llm
