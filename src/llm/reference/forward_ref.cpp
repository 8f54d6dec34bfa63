#include "llm/reference/forward_ref.h"

#include "llm/formats/model_file.h"
#include "llm/formats/tensor_names.h"
#include "util/error.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace wgc::llm::reference {

double silu(double x) { return x / (1 + std::exp(-x)); }
double gelu_tanh(double x) {
  const double k = std::sqrt(2 / 3.14159265358979323846);
  return 0.5 * x * (1 + std::tanh(k * (x + 0.044715 * x * x * x)));
}
double gelu(double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }
double softcap(double x, double cap) { return cap > 0 ? cap * std::tanh(x / cap) : x; }

namespace {

using Vec = std::vector<double>;

struct Mat {
  Vec w;  // rows x cols, row-major
  int64_t rows = 0, cols = 0;
  bool empty() const { return w.empty(); }
};

struct Layer {
  Vec attn_norm, q_norm, k_norm, attn_post_norm, ffn_norm, ffn_post_norm;
  Vec attn_out_norm, attn_out_norm_b, layer_out_norm, layer_out_norm_b;  // BERT
  Mat q, k, v, o;
  Vec qb, kb, vb, ob;
  Mat gate, up, down;
  Vec up_b, down_b;
  Mat router;
  std::vector<Mat> e_gate, e_up, e_down;
  Mat s_gate, s_up, s_down;
  Vec s_router;  // [hidden]
};

Vec to_vec(const ModelTensor& t) {
  auto f = to_f32(t);
  return {f.begin(), f.end()};
}

Mat to_mat(const ModelTensor& t) {
  Mat m;
  m.rows = t.rows();
  m.cols = t.row_length();
  m.w = to_vec(t);
  return m;
}

Mat rows_of(const Mat& m, int64_t row0, int64_t rows) {
  Mat r;
  r.rows = rows;
  r.cols = m.cols;
  r.w.assign(m.w.begin() + row0 * m.cols, m.w.begin() + (row0 + rows) * m.cols);
  return r;
}

// y = W x (+ b) for one token.
void matvec(const Mat& m, const double* x, double* y, const Vec* b = nullptr) {
  for (int64_t r = 0; r < m.rows; ++r) {
    const double* row = m.w.data() + r * m.cols;
    double s = 0;
    for (int64_t k = 0; k < m.cols; ++k) s += row[k] * x[k];
    y[r] = s + (b && !b->empty() ? (*b)[size_t(r)] : 0.0);
  }
}

// x rows of n: RMSNorm (w already holds Gemma's 1 + w) or LayerNorm.
void norm_rows(double* x, int64_t rows, int64_t n, const Vec& w, const Vec* b, NormKind kind, double eps) {
  for (int64_t t = 0; t < rows; ++t) {
    double* v = x + t * n;
    if (kind == NormKind::LayerNorm) {
      double mean = 0, var = 0;
      for (int64_t i = 0; i < n; ++i) mean += v[i];
      mean /= double(n);
      for (int64_t i = 0; i < n; ++i) var += (v[i] - mean) * (v[i] - mean);
      var /= double(n);
      const double inv = 1 / std::sqrt(var + eps);
      for (int64_t i = 0; i < n; ++i) v[i] = (v[i] - mean) * inv * w[size_t(i)] + (b ? (*b)[size_t(i)] : 0.0);
    } else {
      double ss = 0;
      for (int64_t i = 0; i < n; ++i) ss += v[i] * v[i];
      const double inv = 1 / std::sqrt(ss / double(n) + eps);
      for (int64_t i = 0; i < n; ++i) v[i] = v[i] * inv * w[size_t(i)];
    }
  }
}

double act(Activation a, double x) {
  switch (a) {
    case Activation::Silu: return silu(x);
    case Activation::GeluTanh: return gelu_tanh(x);
    case Activation::Gelu: return gelu(x);
  }
  return x;
}

}  // namespace

struct ForwardRef::Weights {
  ModelConfig c;
  Mat embd, out, pos, types;
  Vec out_norm, embd_norm, embd_norm_b;
  std::vector<Layer> layers;
};

ForwardRef::ForwardRef(ForwardRef&&) noexcept = default;
ForwardRef::~ForwardRef() = default;

const ModelConfig& ForwardRef::config() const { return w_->c; }

ForwardRef::ForwardRef(const ModelFile& m, RefOptions options) : w_(std::make_unique<Weights>()), opt_(options) {
  Weights& W = *w_;
  W.c = m.config();
  const ModelConfig& c = W.c;
  // Not modelled here (its reference is llama.cpp's: tests/data/arch/nomic-bert).
  if (c.architecture == Architecture::NomicBert)
    throw Error(m.path().string() + ": the f64 reference does not run nomic-bert");
  int64_t params = 0;
  for (const auto& t : m.tensors()) params += t.numel();
  if (params > opt_.max_params)
    throw Error(m.path().string() + ": " + std::to_string(params) + " weights; the f64 reference takes at most " +
                std::to_string(opt_.max_params));
  const bool one_plus = c.norm == NormKind::RmsNormOnePlus;
  auto vec = [&](TensorRole r, int64_t l = -1) { return to_vec(role_tensor(m, r, l)); };
  auto norm_vec = [&](TensorRole r, int64_t l = -1) {
    Vec v = vec(r, l);
    if (one_plus)
      for (double& x : v) x += 1;
    return v;
  };
  auto opt_vec = [&](TensorRole r, int64_t l) {
    auto t = find_role(m, r, l);
    return t ? to_vec(*t) : Vec{};
  };
  auto mat = [&](TensorRole r, int64_t l = -1, int64_t e = -1) { return to_mat(role_tensor(m, r, l, e)); };

  W.embd = mat(TensorRole::TokenEmbd);
  if (c.architecture == Architecture::Bert) {
    if (c.absolute_positions) W.pos = mat(TensorRole::PositionEmbd);
    if (auto t = find_role(m, TensorRole::TokenTypes)) W.types = to_mat(*t);
    W.embd_norm = vec(TensorRole::EmbdNorm);
    W.embd_norm_b = vec(TensorRole::EmbdNormBias);
  } else {
    W.out_norm = norm_vec(TensorRole::OutputNorm);
    if (!c.embedding_model) {
      if (auto t = find_role(m, TensorRole::Output); t && !c.tie_word_embeddings)
        W.out = to_mat(*t);
      else
        W.out = W.embd;
    }
  }
  const int64_t q_rows = c.n_heads * c.head_dim, kv_rows = c.n_kv_heads * c.head_dim;
  for (int64_t l = 0; l < c.n_layers; ++l) {
    Layer L;
    if (c.fused_qkv) {
      Mat qkv = mat(TensorRole::AttnQkv, l);
      L.q = rows_of(qkv, 0, q_rows);
      L.k = rows_of(qkv, q_rows, kv_rows);
      L.v = rows_of(qkv, q_rows + kv_rows, kv_rows);
    } else {
      L.q = mat(TensorRole::AttnQ, l);
      L.k = mat(TensorRole::AttnK, l);
      L.v = mat(TensorRole::AttnV, l);
    }
    L.o = mat(TensorRole::AttnOut, l);
    L.qb = opt_vec(TensorRole::AttnQBias, l);
    L.kb = opt_vec(TensorRole::AttnKBias, l);
    L.vb = opt_vec(TensorRole::AttnVBias, l);
    L.ob = opt_vec(TensorRole::AttnOutBias, l);
    if (c.qk_norm || c.qk_norm_whole) {
      L.q_norm = norm_vec(TensorRole::AttnQNorm, l);
      L.k_norm = norm_vec(TensorRole::AttnKNorm, l);
    }
    if (c.architecture == Architecture::Bert) {
      L.attn_out_norm = vec(TensorRole::AttnOutNorm, l);
      L.attn_out_norm_b = vec(TensorRole::AttnOutNormBias, l);
      L.layer_out_norm = vec(TensorRole::LayerOutNorm, l);
      L.layer_out_norm_b = vec(TensorRole::LayerOutNormBias, l);
      L.up = mat(TensorRole::FfnUp, l);
      L.down = mat(TensorRole::FfnDown, l);
      L.up_b = opt_vec(TensorRole::FfnUpBias, l);
      L.down_b = opt_vec(TensorRole::FfnDownBias, l);
      W.layers.push_back(std::move(L));
      continue;
    }
    L.attn_norm = norm_vec(TensorRole::AttnNorm, l);
    L.ffn_norm = norm_vec(TensorRole::FfnNorm, l);
    if (c.norm_placement == NormPlacement::Sandwich) {
      L.attn_post_norm = norm_vec(TensorRole::AttnPostNorm, l);
      L.ffn_post_norm = norm_vec(TensorRole::FfnPostNorm, l);
    }
    if (c.layer_is_moe(l)) {
      L.router = mat(TensorRole::MoeRouter, l);
      for (int64_t e = 0; e < c.n_experts; ++e) {
        L.e_gate.push_back(mat(TensorRole::ExpertsGate, l, e));
        L.e_up.push_back(mat(TensorRole::ExpertsUp, l, e));
        L.e_down.push_back(mat(TensorRole::ExpertsDown, l, e));
      }
      if (c.shared_expert_ffn_size > 0) {
        L.s_gate = mat(TensorRole::SharedGate, l);
        L.s_up = mat(TensorRole::SharedUp, l);
        L.s_down = mat(TensorRole::SharedDown, l);
        L.s_router = vec(TensorRole::SharedExpertRouter, l);
      }
    } else if (c.fused_gate_up) {
      Mat gu = mat(TensorRole::FfnGateUp, l);
      L.gate = rows_of(gu, 0, gu.rows / 2);
      L.up = rows_of(gu, gu.rows / 2, gu.rows / 2);
      L.down = mat(TensorRole::FfnDown, l);
    } else {
      L.gate = mat(TensorRole::FfnGate, l);
      L.up = mat(TensorRole::FfnUp, l);
      L.down = mat(TensorRole::FfnDown, l);
    }
    W.layers.push_back(std::move(L));
  }
}

namespace {

// Gated MLP on one token: down(act(gate x) * up x).
void gated_mlp(const Mat& gate, const Mat& up, const Mat& down, Activation a, const double* x, double* y) {
  Vec g(static_cast<size_t>(gate.rows)), u(static_cast<size_t>(up.rows));
  matvec(gate, x, g.data());
  matvec(up, x, u.data());
  for (size_t i = 0; i < g.size(); ++i) g[i] = act(a, g[i]) * u[i];
  matvec(down, g.data(), y);
}

}  // namespace

std::vector<double> ForwardRef::hidden(std::span<const int32_t> tokens,
                                       std::vector<std::vector<double>>* layers) const {
  const Weights& W = *w_;
  const ModelConfig& c = W.c;
  const int64_t T = int64_t(tokens.size()), H = c.hidden_size, nh = c.n_heads, nkv = c.n_kv_heads, hd = c.head_dim;
  if (T == 0) throw Error("reference forward: no tokens");
  if (c.absolute_positions && T + c.position_offset > W.pos.rows)
    throw Error("reference forward: " + std::to_string(T) + " tokens exceed the " + std::to_string(W.pos.rows) +
                " learned positions");
  Vec x(static_cast<size_t>(T * H));
  for (int64_t t = 0; t < T; ++t) {
    const int32_t id = tokens[size_t(t)];
    if (id < 0 || id >= W.embd.rows)
      throw Error("reference forward: token " + std::to_string(id) + " outside the vocabulary of " +
                  std::to_string(W.embd.rows));
    for (int64_t i = 0; i < H; ++i) {
      double v = W.embd.w[size_t(id * H + i)] * c.embedding_scale;
      if (c.absolute_positions) v += W.pos.w[size_t((t + c.position_offset) * H + i)];
      if (!W.types.empty()) v += W.types.w[size_t(i)];  // token type 0
      x[size_t(t * H + i)] = v;
    }
  }
  const bool bert = c.architecture == Architecture::Bert;
  if (bert) norm_rows(x.data(), T, H, W.embd_norm, &W.embd_norm_b, NormKind::LayerNorm, c.rms_norm_eps);
  if (layers) layers->assign(1, x);

  const int64_t group = nh / nkv;
  const double scale = c.attention_scale();
  Vec h(static_cast<size_t>(T * H)), q(static_cast<size_t>(T * nh * hd)), k(static_cast<size_t>(T * nkv * hd)),
      v(static_cast<size_t>(T * nkv * hd));
  Vec attn(static_cast<size_t>(T * nh * hd)), o(static_cast<size_t>(T * H)), scores(static_cast<size_t>(T));
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const Layer& L = W.layers[size_t(l)];
    h = x;
    if (!bert) norm_rows(h.data(), T, H, L.attn_norm, nullptr, c.norm, c.rms_norm_eps);
    for (int64_t t = 0; t < T; ++t) {
      matvec(L.q, &h[size_t(t * H)], &q[size_t(t * nh * hd)], &L.qb);
      matvec(L.k, &h[size_t(t * H)], &k[size_t(t * nkv * hd)], &L.kb);
      matvec(L.v, &h[size_t(t * H)], &v[size_t(t * nkv * hd)], &L.vb);
    }
    if (c.qk_norm) {
      norm_rows(q.data(), T * nh, hd, L.q_norm, nullptr, c.norm, c.rms_norm_eps);
      norm_rows(k.data(), T * nkv, hd, L.k_norm, nullptr, c.norm, c.rms_norm_eps);
    } else if (c.qk_norm_whole) {
      norm_rows(q.data(), T, nh * hd, L.q_norm, nullptr, c.norm, c.rms_norm_eps);
      norm_rows(k.data(), T, nkv * hd, L.k_norm, nullptr, c.norm, c.rms_norm_eps);
    }
    // Rope on the first rope_dim dims of each head: pairs (i, i + rope_dim/2) (or (2i, 2i + 1)), cos and sin scaled by
    // the attention factor (yarn, longrope); the rest of the head passes through.
    if (c.rope_dim > 0) {
      const int64_t rd = c.rope_dim, half = rd / 2;
      const Vec f = c.rope_inv_freq(l, opt_.longrope_length > 0 ? opt_.longrope_length : T);
      const double af = c.rope_attention_factor(l);
      Vec cs(static_cast<size_t>(T * half)), sn(static_cast<size_t>(T * half));
      for (int64_t t = 0; t < T; ++t)
        for (int64_t i = 0; i < half; ++i) {
          double co, si;
          if (opt_.f32_rope_angles) {
            const float a = float(f[size_t(i)]) * float(t);
            co = double(float(std::cos(a)) * float(af));
            si = double(float(std::sin(a)) * float(af));
          } else {
            const double a = f[size_t(i)] * double(t);
            co = std::cos(a) * af;
            si = std::sin(a) * af;
          }
          cs[size_t(t * half + i)] = co;
          sn[size_t(t * half + i)] = si;
        }
      auto rotate = [&](Vec& buf, int64_t heads) {
        for (int64_t t = 0; t < T; ++t)
          for (int64_t hh = 0; hh < heads; ++hh) {
            double* u = &buf[size_t((t * heads + hh) * hd)];
            for (int64_t i = 0; i < half; ++i) {  // pair (i, i + half), or (2i, 2i + 1) interleaved (GLM-4)
              const int64_t ia = c.rope_interleaved ? 2 * i : i, ib = c.rope_interleaved ? 2 * i + 1 : i + half;
              const double a = u[ia], b = u[ib], co = cs[size_t(t * half + i)], si = sn[size_t(t * half + i)];
              u[ia] = a * co - b * si;
              u[ib] = b * co + a * si;
            }
          }
      };
      rotate(q, nh);
      rotate(k, nkv);
    }
    const bool sliding = c.layer_is_sliding(l);
    const int64_t window = sliding ? *c.sliding_window : 0;
    for (int64_t t = 0; t < T; ++t)
      for (int64_t hh = 0; hh < nh; ++hh) {
        const double* qv = &q[size_t((t * nh + hh) * hd)];
        const int64_t g = hh / group;
        const int64_t j0 = window > 0 ? std::max<int64_t>(0, t - window + 1) : 0;
        const int64_t j1 = c.causal ? t : T - 1;
        double mx = -INFINITY;
        for (int64_t j = j0; j <= j1; ++j) {
          const double* kv = &k[size_t((j * nkv + g) * hd)];
          double s = 0;
          for (int64_t i = 0; i < hd; ++i) s += qv[i] * kv[i];
          s = softcap(s * scale, c.attn_logit_softcap);
          scores[size_t(j)] = s;
          mx = std::max(mx, s);
        }
        double sum = 0;
        for (int64_t j = j0; j <= j1; ++j) sum += scores[size_t(j)] = std::exp(scores[size_t(j)] - mx);
        double* out = &attn[size_t((t * nh + hh) * hd)];
        std::fill(out, out + hd, 0.0);
        for (int64_t j = j0; j <= j1; ++j) {
          const double p = scores[size_t(j)] / sum;
          const double* vv = &v[size_t((j * nkv + g) * hd)];
          for (int64_t i = 0; i < hd; ++i) out[i] += p * vv[i];
        }
      }
    for (int64_t t = 0; t < T; ++t) matvec(L.o, &attn[size_t(t * nh * hd)], &o[size_t(t * H)], &L.ob);
    if (bert) {
      for (size_t i = 0; i < x.size(); ++i) x[i] += o[i];
      norm_rows(x.data(), T, H, L.attn_out_norm, &L.attn_out_norm_b, NormKind::LayerNorm, c.rms_norm_eps);
      Vec u(static_cast<size_t>(L.up.rows));
      for (int64_t t = 0; t < T; ++t) {
        matvec(L.up, &x[size_t(t * H)], u.data(), &L.up_b);
        for (double& e : u) e = act(c.activation, e);
        matvec(L.down, u.data(), &o[size_t(t * H)], &L.down_b);
      }
      for (size_t i = 0; i < x.size(); ++i) x[i] += o[i];
      norm_rows(x.data(), T, H, L.layer_out_norm, &L.layer_out_norm_b, NormKind::LayerNorm, c.rms_norm_eps);
      if (layers) layers->push_back(x);
      continue;
    }
    if (c.norm_placement == NormPlacement::Sandwich)
      norm_rows(o.data(), T, H, L.attn_post_norm, nullptr, c.norm, c.rms_norm_eps);
    for (size_t i = 0; i < x.size(); ++i) x[i] += o[i];

    h = x;
    norm_rows(h.data(), T, H, L.ffn_norm, nullptr, c.norm, c.rms_norm_eps);
    for (int64_t t = 0; t < T; ++t) {
      const double* ht = &h[size_t(t * H)];
      double* ot = &o[size_t(t * H)];
      if (!c.layer_is_moe(l)) {
        gated_mlp(L.gate, L.up, L.down, c.activation, ht, ot);
        continue;
      }
      // Router: softmax over all experts, the top k (lowest index first on ties), renormalised or not.
      Vec logit(static_cast<size_t>(c.n_experts));
      matvec(L.router, ht, logit.data());
      const double mx = *std::max_element(logit.begin(), logit.end());
      double sum = 0;
      for (double& e : logit) sum += e = std::exp(e - mx);
      for (double& e : logit) e /= sum;
      std::vector<int64_t> ids(static_cast<size_t>(c.n_experts));
      std::iota(ids.begin(), ids.end(), 0);
      std::stable_sort(ids.begin(), ids.end(),
                       [&](int64_t a, int64_t b) { return logit[size_t(a)] > logit[size_t(b)]; });
      ids.resize(size_t(c.n_experts_used));
      double wsum = 0;
      for (int64_t e : ids) wsum += logit[size_t(e)];
      std::fill(ot, ot + H, 0.0);
      Vec y(static_cast<size_t>(H));
      for (int64_t e : ids) {
        const double we = c.norm_topk_prob ? logit[size_t(e)] / wsum : logit[size_t(e)];
        gated_mlp(L.e_gate[size_t(e)], L.e_up[size_t(e)], L.e_down[size_t(e)], c.activation, ht, y.data());
        for (int64_t i = 0; i < H; ++i) ot[i] += we * y[size_t(i)];
      }
      if (!L.s_gate.empty()) {
        gated_mlp(L.s_gate, L.s_up, L.s_down, c.activation, ht, y.data());
        double g = 0;
        for (int64_t i = 0; i < H; ++i) g += L.s_router[size_t(i)] * ht[i];
        g = 1 / (1 + std::exp(-g));
        for (int64_t i = 0; i < H; ++i) ot[i] += g * y[size_t(i)];
      }
    }
    if (c.norm_placement == NormPlacement::Sandwich)
      norm_rows(o.data(), T, H, L.ffn_post_norm, nullptr, c.norm, c.rms_norm_eps);
    for (size_t i = 0; i < x.size(); ++i) x[i] += o[i];
    if (layers) layers->push_back(x);
  }
  if (!bert) {
    norm_rows(x.data(), T, H, W.out_norm, nullptr, c.norm, c.rms_norm_eps);
    if (layers) layers->back() = x;  // transformers' last hidden state is the normed one
  }
  return x;
}

std::vector<double> ForwardRef::logits(std::span<const int32_t> tokens) const {
  const Weights& W = *w_;
  const ModelConfig& c = W.c;
  if (W.out.empty())
    throw Error(std::string("reference forward: a ") + std::string(to_string(c.architecture)) +
                " embedding model has no logits");
  Vec x = hidden(tokens);
  const int64_t T = int64_t(tokens.size()), H = c.hidden_size, V = W.out.rows;
  Vec out(static_cast<size_t>(T * V));
  for (int64_t t = 0; t < T; ++t) {
    matvec(W.out, &x[size_t(t * H)], &out[size_t(t * V)]);
    for (int64_t i = 0; i < V; ++i) out[size_t(t * V + i)] = softcap(out[size_t(t * V + i)], c.final_logit_softcap);
  }
  return out;
}

std::vector<double> ForwardRef::embedding(std::span<const int32_t> tokens) const {
  const ModelConfig& c = w_->c;
  Vec x = hidden(tokens);
  const int64_t T = int64_t(tokens.size()), H = c.hidden_size;
  Vec e(static_cast<size_t>(H), 0.0);
  switch (c.pooling) {
    case Pooling::Cls: std::copy(x.begin(), x.begin() + H, e.begin()); break;
    case Pooling::Last: std::copy(x.end() - H, x.end(), e.begin()); break;
    case Pooling::Mean:
    case Pooling::None:
      for (int64_t t = 0; t < T; ++t)
        for (int64_t i = 0; i < H; ++i) e[size_t(i)] += x[size_t(t * H + i)] / double(T);
      break;
  }
  double n = 0;
  for (double v : e) n += v * v;
  n = std::sqrt(n);
  if (n > 0)
    for (double& v : e) v /= n;
  return e;
}

std::vector<int32_t> ForwardRef::greedy(std::span<const int32_t> prompt, int n) const {
  std::vector<int32_t> seq(prompt.begin(), prompt.end()), out;
  for (int s = 0; s < n; ++s) {
    Vec lg = logits(seq);
    const int64_t V = int64_t(lg.size() / seq.size());
    auto last = lg.begin() + int64_t(seq.size() - 1) * V;
    int32_t best = int32_t(std::max_element(last, lg.end()) - last);
    out.push_back(best);
    seq.push_back(best);
  }
  return out;
}

}  // namespace wgc::llm::reference
