// The encoder's CPU engine: the CPU LLM kernels' linear layers (weights read in place in their
// file's type; quantized types take 8-bit activations) and attention, LayerNorm and GELU in plain
// loops, split over a thread pool.
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

struct CpuLinear {
  cpu::Weight w;
  std::vector<float> bias;  // empty: none
};

struct CpuLayer {
  CpuLinear q, k, v, o, up, down;
  std::vector<float> n1w, n1b, n2w, n2b;
};

void layer_norm(float* x, int64_t rows, int64_t n, const std::vector<float>& w, const std::vector<float>& b,
                float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    float* v = x + r * n;
    double mean = 0, var = 0;
    for (int64_t i = 0; i < n; ++i) mean += v[i];
    mean /= double(n);
    for (int64_t i = 0; i < n; ++i) var += (v[i] - mean) * (v[i] - mean);
    const double inv = 1 / std::sqrt(var / double(n) + eps);
    for (int64_t i = 0; i < n; ++i) v[i] = float((v[i] - mean) * inv) * w[size_t(i)] + b[size_t(i)];
  }
}

class CpuEncoder final : public EncoderModel::Engine {
 public:
  CpuEncoder(const ModelFile& m, const EncoderOptions& o)
      : k_(cpu::kernels()),
        pool_(o.threads > 0 ? o.threads : int(std::max(1u, std::thread::hardware_concurrency()))),
        owner_(m.data_owner()) {
    const ModelConfig& cfg = m.config();
    H_ = cfg.hidden_size;
    F_ = cfg.ffn_size;
    eps_ = float(cfg.rms_norm_eps);
    EncoderTensors t = encoder_tensors(m);
    auto vec = [&](const ModelTensor* w) { return w ? to_f32(*w) : std::vector<float>(); };
    auto lin = [&](const ModelTensor* w, const ModelTensor* b) {
      if (!cpu::kernels_read(w->type))
        throw Error(m.path().string() + ": tensor '" + w->name + "' is " + std::string(to_string(w->type)) +
                    ", a type the CPU kernels do not read");
      CpuLinear l;
      l.w.type = w->type;
      l.w.data = w->data.data();
      l.w.rows = w->rows();
      l.w.cols = w->row_length();
      l.w.row_bytes = int64_t(w->data.size()) / std::max<int64_t>(1, l.w.rows);
      if (cpu::takes_q8(w->type) && l.w.cols % 32)
        throw Error(m.path().string() + ": tensor '" + w->name + "' has " + std::to_string(l.w.cols) +
                    " columns, not whole blocks of 32");
      l.bias = vec(b);
      return l;
    };
    embd_ = lin(t.token_embd, nullptr);
    PositionTable pt = position_table(m);
    pos_ = std::move(pt.rows);
    en_w_ = vec(t.embd_norm);
    en_b_ = vec(t.embd_norm_b);
    for (const auto& L : t.layers) {
      CpuLayer g;
      g.q = lin(L.q, L.qb);
      g.k = lin(L.k, L.kb);
      g.v = lin(L.v, L.vb);
      g.o = lin(L.o, L.ob);
      g.up = lin(L.up, L.upb);
      g.down = lin(L.down, L.downb);
      g.n1w = vec(L.attn_norm);
      g.n1b = vec(L.attn_norm_b);
      g.n2w = vec(L.out_norm);
      g.n2b = vec(L.out_norm_b);
      layers_.push_back(std::move(g));
    }
    nh_ = uint32_t(cfg.n_heads);
    nkv_ = uint32_t(cfg.n_kv_heads);
    hd_ = uint32_t(cfg.head_dim);
    scale_ = float(cfg.attention_scale());
  }

  bool on_gpu() const override { return false; }

  // y[t * y_stride + r] (+)= W x[t] + b for n tokens.
  void linear(const CpuLinear& l, const float* x, int64_t n, float* y, int64_t y_stride, bool accumulate) {
    cpu::LinearIo io;
    io.x = x;
    io.x_stride = l.w.cols;
    io.n = n;
    io.y = y;
    io.y_stride = y_stride;
    io.accumulate = accumulate;
    if (cpu::takes_q8(l.w.type)) {
      const int64_t kk = l.w.cols;
      q_.resize(size_t(n * kk));
      qd_.resize(size_t(n * kk / 32));
      qs_.resize(size_t(n * kk / 16));
      io.xq = cpu::Q8Rows{q_.data(), qd_.data(), qs_.data(), kk};
      pool_.parallel_for(n, [&](int64_t t, int) { k_.quantize(x, kk, t, t + 1, io.xq); });
    }
    const int64_t step = int64_t(k_.tile_rows) * 8;
    const int64_t chunks = (l.w.rows + step - 1) / step;
    const int64_t scratch = k_.linear_scratch(l.w.cols);
    scratch_.resize(size_t(pool_.size()) * size_t(scratch / 64 + 1));
    pool_.parallel_for(chunks, [&](int64_t i, int th) {
      void* s = scratch_.data() + size_t(th) * size_t(scratch / 64 + 1);
      k_.linear(l.w, io, i * step, std::min(l.w.rows, (i + 1) * step), s);
    });
    if (!l.bias.empty())
      for (int64_t t = 0; t < n; ++t)
        for (int64_t r = 0; r < l.w.rows; ++r) y[t * y_stride + r] += l.bias[size_t(r)];
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
    const int64_t n = int64_t(ids.size()), H = H_, qkv_cols = int64_t(nh_ + 2 * nkv_) * hd_,
                  q_cols = int64_t(nh_) * hd_;
    std::vector<float> x(size_t(n * H)), qkv(size_t(n * qkv_cols)), att(size_t(n * q_cols)), u(size_t(n * F_));
    float* h = out.data();
    // Embeddings: the token's row (dequantized through a one-hot-free path: a linear of the row
    // would be wasteful, so each row is converted alone) plus the position + type row.
    for (int64_t t = 0; t < n; ++t) {
      const std::byte* row = embd_.w.data + int64_t(ids[size_t(t)]) * embd_.w.row_bytes;
      dequantize(embd_.w.type, std::span<const std::byte>(row, size_t(embd_.w.row_bytes)),
                 std::span<float>(h + t * H, size_t(H)));
      for (int64_t i = 0; i < H; ++i) h[t * H + i] += pos_[size_t(int64_t(pos[size_t(t)]) * H + i)];
    }
    layer_norm(h, n, H, en_w_, en_b_, eps_);
    EncoderAttnDims ad;
    ad.n_tokens = uint32_t(n);
    ad.n_heads = nh_;
    ad.n_kv_heads = nkv_;
    ad.head_dim = hd_;
    ad.stride = uint32_t(qkv_cols);
    ad.k_off = uint32_t(q_cols);
    ad.v_off = uint32_t(q_cols + int64_t(nkv_) * hd_);
    ad.o_stride = uint32_t(q_cols);
    ad.scale = scale_;
    check_encoder_attention(ad, ranges, qkv.size(), att.size(), "encoder (cpu)");
    for (const CpuLayer& L : layers_) {
      linear(L.q, h, n, qkv.data(), qkv_cols, false);
      linear(L.k, h, n, qkv.data() + ad.k_off, qkv_cols, false);
      linear(L.v, h, n, qkv.data() + ad.v_off, qkv_cols, false);
      attend(qkv.data(), ranges, att.data(), ad);
      linear(L.o, att.data(), n, h, H, true);
      layer_norm(h, n, H, L.n1w, L.n1b, eps_);
      std::copy(h, h + n * H, x.begin());
      linear(L.up, x.data(), n, u.data(), F_, false);
      for (float& e : u) e = float(0.5 * double(e) * (1 + std::erf(double(e) / std::sqrt(2.0))));
      linear(L.down, u.data(), n, x.data(), H, true);
      layer_norm(x.data(), n, H, L.n2w, L.n2b, eps_);
      std::copy(x.begin(), x.end(), h);
    }
  }

 private:
  const cpu::Kernels& k_;
  cpu::ThreadPool pool_;
  std::shared_ptr<const void> owner_;
  int64_t H_ = 0, F_ = 0;
  float eps_ = 1e-12f, scale_ = 1;
  uint32_t nh_ = 0, nkv_ = 0, hd_ = 0;
  CpuLinear embd_;
  std::vector<float> pos_, en_w_, en_b_;
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
