// The encoder's CPU engine: the CPU LLM kernels' linear layers (weights read in place in their
// file's type; quantized types take 8-bit activations) and attention; LayerNorm, GELU / GeGLU /
// SwiGLU and rotary positions in plain loops; split over a thread pool.
#include "llm/encoder/encoder_engine.h"

#include "cpu/llm/dequant.h"
#include "cpu/llm/encoder_attention.h"
#include "cpu/llm/kernels.h"
#include "cpu/llm/thread_pool.h"
#include "util/error.h"

#include <algorithm>
#include <cmath>
#include <thread>

namespace wgc::llm {

namespace {

// Weights read in place; biases, norms in f32 (empty: none).
using CpuLayer = EncoderLayer<cpu::Weight, std::vector<float>>;

double gelu(double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }
double silu(double x) { return x / (1 + std::exp(-x)); }

// y = LayerNorm(x) (in place when y == x); b empty: no bias.
void layer_norm(const float* x, float* y, int64_t rows, int64_t n, const std::vector<float>& w,
                const std::vector<float>& b, float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* v = x + r * n;
    float* o = y + r * n;
    double mean = 0, var = 0;
    for (int64_t i = 0; i < n; ++i) mean += v[i];
    mean /= double(n);
    for (int64_t i = 0; i < n; ++i) var += (v[i] - mean) * (v[i] - mean);
    const double inv = 1 / std::sqrt(var / double(n) + eps);
    for (int64_t i = 0; i < n; ++i) o[i] = float((v[i] - mean) * inv) * w[size_t(i)] + (b.empty() ? 0.f : b[size_t(i)]);
  }
}

// Rotary positions in place on `heads` heads of each token's row (x[t * stride + h * hd + i]): the
// pairs (i, i + hd/2) turned by pos[t] * f[i] (transformers' rotate_half layout).
void rope(float* x, int64_t n, int64_t stride, int64_t heads, int64_t hd, std::span<const uint32_t> pos,
          const std::vector<double>& f) {
  const int64_t half = hd / 2;
  for (int64_t t = 0; t < n; ++t)
    for (int64_t i = 0; i < half; ++i) {
      const double a = double(pos[size_t(t)]) * f[size_t(i)], c = std::cos(a), s = std::sin(a);
      for (int64_t h = 0; h < heads; ++h) {
        float* v = x + t * stride + h * hd;
        const double x0 = v[i], x1 = v[i + half];
        v[i] = float(x0 * c - x1 * s);
        v[i + half] = float(x1 * c + x0 * s);
      }
    }
}

class CpuEncoder final : public EncoderModel::Engine {
 public:
  CpuEncoder(const ModelFile& m, const EncoderOptions& o)
      : k_(cpu::kernels()),
        pool_(o.threads > 0 ? o.threads : int(std::max(1u, std::thread::hardware_concurrency()))),
        owner_(m.data_owner()) {
    sh_ = encoder_shape(m.config());
    EncoderTensors t = encoder_tensors(m);
    auto vec = [&](const ModelTensor* w) { return w ? to_f32(*w) : std::vector<float>(); };
    auto lin = [&](const ModelTensor* w) {
      if (!cpu::kernels_read(w->type))
        throw Error(m.path().string() + ": tensor '" + w->name + "' is " + std::string(to_string(w->type)) +
                    ", a type the CPU kernels do not read");
      cpu::Weight l;
      l.type = w->type;
      l.data = w->data.data();
      l.rows = w->rows();
      l.cols = w->row_length();
      l.row_bytes = int64_t(w->data.size()) / std::max<int64_t>(1, l.rows);
      if (cpu::takes_q8(w->type) && l.cols % 32)
        throw Error(m.path().string() + ": tensor '" + w->name + "' has " + std::to_string(l.cols) +
                    " columns, not whole blocks of 32");
      return l;
    };
    embd_ = lin(t.token_embd);
    PositionTable pt = position_table(m);
    pos_ = std::move(pt.rows);
    pos_by_position_ = pt.by_position;
    en_w_ = vec(t.embd_norm);
    en_b_ = vec(t.embd_norm_b);
    final_w_ = vec(t.final_norm);
    layers_ = encoder_layers<cpu::Weight, std::vector<float>>(t, lin, vec);
  }

  bool on_gpu() const override { return false; }

  // y[t * y_stride + r] (+)= W x[t] + b for n tokens.
  void linear(const cpu::Weight& w, const std::vector<float>& bias, const float* x, int64_t n, float* y,
              int64_t y_stride, bool accumulate) {
    cpu::LinearIo io;
    io.x = x;
    io.x_stride = w.cols;
    io.n = n;
    io.y = y;
    io.y_stride = y_stride;
    io.accumulate = accumulate;
    if (cpu::takes_q8(w.type)) {
      const int64_t kk = w.cols;
      q_.resize(size_t(n * kk));
      qd_.resize(size_t(n * kk / 32));
      qs_.resize(size_t(n * kk / 16));
      io.xq = cpu::Q8Rows{q_.data(), qd_.data(), qs_.data(), kk};
      pool_.parallel_for(n, [&](int64_t t, int) { k_.quantize(x, kk, t, t + 1, io.xq); });
    }
    const int64_t step = int64_t(k_.tile_rows) * 8;
    const int64_t chunks = (w.rows + step - 1) / step;
    const int64_t scratch = k_.linear_scratch(w.cols);
    scratch_.resize(size_t(pool_.size()) * size_t(scratch / 64 + 1));
    pool_.parallel_for(chunks, [&](int64_t i, int th) {
      void* s = scratch_.data() + size_t(th) * size_t(scratch / 64 + 1);
      k_.linear(w, io, i * step, std::min(w.rows, (i + 1) * step), s);
    });
    if (!bias.empty())
      for (int64_t t = 0; t < n; ++t)
        for (int64_t r = 0; r < w.rows; ++r) y[t * y_stride + r] += bias[size_t(r)];
  }

  // Every (token, head) row's attention over its sequence's rows, by the CPU engine's attention
  // kernel (the level's SIMD dot products; cpu::encoder_attention is the f64 reference of it and
  // of the GPU kernel): the sequence's keys are contiguous rows, so one block covers them.
  void attend(const float* qkv, std::span<const uint32_t> ranges, float* att, const EncoderAttnDims& d) {
    const int64_t rows = int64_t(d.n_tokens) * d.n_heads, group = d.n_heads / d.n_kv_heads;
    scores_.resize(size_t(pool_.size()));
    pool_.parallel_for(rows, [&](int64_t r, int th) {
      const int64_t t = r / d.n_heads, h = r % d.n_heads, g = h / group;
      const int64_t k0 = ranges[size_t(2 * t)], len = int64_t(ranges[size_t(2 * t + 1)]) - k0;
      std::vector<float>& sc = scores_[size_t(th)];
      if (int64_t(sc.size()) < len) sc.resize(size_t(len));
      static const int32_t block0 = 0;
      cpu::AttendArgs a;
      a.q = qkv + t * d.stride + d.q_off + h * d.head_dim;
      a.head_dim = int(d.head_dim);
      a.scale = d.scale;
      a.k = qkv + k0 * d.stride + d.k_off + g * d.head_dim;
      a.v = qkv + k0 * d.stride + d.v_off + g * d.head_dim;
      a.kv_stride = d.stride;
      a.blocks = &block0;
      a.block = len;
      a.len = len;
      a.scores = sc.data();
      a.out = att + t * d.o_stride + d.o_off + h * d.head_dim;
      k_.attend(a);
    });
  }

  void forward(std::span<const int32_t> ids, std::span<const uint32_t> pos, std::span<const uint32_t> ranges,
               std::span<float> out) override {
    const int64_t n = int64_t(ids.size()), H = sh_.hidden, F = sh_.ffn, qkv_cols = sh_.qkv_cols(),
                  q_cols = sh_.q_cols();
    std::vector<float> x(size_t(n * H)), qkv(size_t(n * qkv_cols)), att(size_t(n * q_cols)), u(size_t(n * F)),
        g(sh_.gated ? size_t(n * F) : 0);
    float* h = out.data();
    // Embeddings: the token's row (each row converted alone: a one-hot linear would be wasteful),
    // plus BERT's position + type row (nomic-bert's type row).
    for (int64_t t = 0; t < n; ++t) {
      const std::byte* row = embd_.data + int64_t(ids[size_t(t)]) * embd_.row_bytes;
      dequantize(embd_.type, std::span<const std::byte>(row, size_t(embd_.row_bytes)),
                 std::span<float>(h + t * H, size_t(H)));
      const int64_t r = pos_by_position_ ? int64_t(pos[size_t(t)]) : 0;
      if (!pos_.empty())
        for (int64_t i = 0; i < H; ++i) h[t * H + i] += pos_[size_t(r * H + i)];
    }
    layer_norm(h, h, n, H, en_w_, en_b_, sh_.eps);
    EncoderAttnDims ad = sh_.attn;
    ad.n_tokens = uint32_t(n);
    check_encoder_attention(ad, ranges, qkv.size(), att.size(), "encoder (cpu)");
    std::vector<std::vector<uint32_t>> windows(sh_.half_window.size());
    for (size_t l = 0; l < layers_.size(); ++l) {
      const CpuLayer& L = layers_[l];
      std::span<const uint32_t> rng = ranges;
      if (sh_.half_window[l] >= 0) rng = windows[l] = window_ranges(ranges, sh_.half_window[l]);
      // ModernBERT: the attention reads norm1(h) (layer 0: h itself); BERT: h.
      const float* a = h;
      if (sh_.pre_norm && !L.n1w.empty()) {
        layer_norm(h, x.data(), n, H, L.n1w, L.n1b, sh_.eps);
        a = x.data();
      }
      linear(L.q, L.qb, a, n, qkv.data(), qkv_cols, false);
      linear(L.k, L.kb, a, n, qkv.data() + ad.k_off, qkv_cols, false);
      linear(L.v, L.vb, a, n, qkv.data() + ad.v_off, qkv_cols, false);
      if (sh_.rope[l] >= 0) {
        const auto& f = sh_.inv_freq[size_t(sh_.rope[l])];
        rope(qkv.data(), n, qkv_cols, ad.n_heads, ad.head_dim, pos, f);
        rope(qkv.data() + ad.k_off, n, qkv_cols, ad.n_kv_heads, ad.head_dim, pos, f);
      }
      attend(qkv.data(), rng, att.data(), ad);
      linear(L.o, L.ob, att.data(), n, h, H, true);  // h += o(att) + b: the residual
      if (sh_.pre_norm) {
        // h += down(gelu(gate(x)) * up(x)), x = norm2(h)
        layer_norm(h, x.data(), n, H, L.n2w, L.n2b, sh_.eps);
        linear(L.gate, {}, x.data(), n, g.data(), F, false);
        linear(L.up, L.upb, x.data(), n, u.data(), F, false);
        for (size_t i = 0; i < u.size(); ++i) u[i] = float(gelu(double(g[i])) * double(u[i]));
        linear(L.down, L.downb, u.data(), n, h, H, true);
        continue;
      }
      layer_norm(h, h, n, H, L.n1w, L.n1b, sh_.eps);
      std::copy(h, h + n * H, x.begin());
      linear(L.up, L.upb, x.data(), n, u.data(), F, false);
      if (sh_.gated) {  // nomic-bert: silu(gate(x)) * up(x)
        linear(L.gate, {}, x.data(), n, g.data(), F, false);
        for (size_t i = 0; i < u.size(); ++i) u[i] = float(silu(double(g[i])) * double(u[i]));
      } else {
        for (float& e : u) e = float(gelu(double(e)));
      }
      linear(L.down, L.downb, u.data(), n, x.data(), H, true);
      layer_norm(x.data(), h, n, H, L.n2w, L.n2b, sh_.eps);
    }
    if (!final_w_.empty()) layer_norm(h, h, n, H, final_w_, {}, sh_.eps);
  }

 private:
  const cpu::Kernels& k_;
  cpu::ThreadPool pool_;
  std::shared_ptr<const void> owner_;
  EncoderShape sh_;
  cpu::Weight embd_;
  std::vector<float> pos_, en_w_, en_b_, final_w_;
  bool pos_by_position_ = true;
  std::vector<CpuLayer> layers_;
  std::vector<int8_t> q_;
  std::vector<float> qd_;
  std::vector<int16_t> qs_;
  struct alignas(64) Line {
    std::byte b[64];
  };
  std::vector<Line> scratch_;
  std::vector<std::vector<float>> scores_;  // per thread: attention scores
};

}  // namespace

std::unique_ptr<EncoderModel::Engine> make_encoder_cpu(const ModelFile& m, const EncoderOptions& o) {
  return std::make_unique<CpuEncoder>(m, o);
}

}  // namespace wgc::llm
