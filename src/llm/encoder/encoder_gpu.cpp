// The encoder's GPU engine: one Batch per forward pass over the packed sequences, built from the
// existing ops (LlmOps::embedding / linear / add / rope / swiglu, ops/norm.h's LayerNorm,
// ops/elementwise.h's GELU) and encoder_attention (kernels/encoder/attention.wgsl).
#include "llm/encoder/encoder_engine.h"

#include "ops/elementwise.h"
#include "ops/llm/encoder_ops.h"
#include "ops/llm/llm_ops.h"
#include "ops/norm.h"
#include "util/error.h"

#include <cstring>
#include <map>

namespace wgc::llm {

namespace {

using GpuLayer = EncoderLayer<GpuWeight, Tensor>;

class GpuEncoder final : public EncoderModel::Engine {
 public:
  GpuEncoder(const ModelFile& m, Context ctx) : ctx_(ctx), ops_(ctx), sh_(encoder_shape(m.config())) {
    EncoderTensors t = encoder_tensors(m);
    auto weight = [&](const ModelTensor* w) {
      if (!is_gpu_weight_type(w->type))
        throw Error(m.path().string() + ": tensor '" + w->name + "' is " + std::string(to_string(w->type)) +
                    ", a type the GPU kernels do not read");
      return upload_weight(ctx_, w->type, w->data, w->rows(), w->row_length());
    };
    auto vec = [&](const ModelTensor* w) {
      if (!w) return Tensor();
      std::vector<float> v = to_f32(*w);
      return make_tensor(ctx_, {int64_t(v.size())}, v);
    };
    embd_ = weight(t.token_embd);
    PositionTable pt = position_table(m);
    if (pt.n_rows > 0) {
      std::vector<std::byte> bytes(pt.rows.size() * sizeof(float));
      std::memcpy(bytes.data(), pt.rows.data(), bytes.size());
      pos_ = upload_weight(ctx_, TensorType::F32, bytes, pt.n_rows, sh_.hidden);
      pos_by_position_ = pt.by_position;
    }
    en_w_ = vec(t.embd_norm);
    en_b_ = vec(t.embd_norm_b);
    final_w_ = vec(t.final_norm);
    layers_ = encoder_layers<GpuWeight, Tensor>(t, weight, vec);
    // LayerNorm takes a bias: zeros where the model has none (ModernBERT).
    zeros_ = make_tensor(ctx_, {sh_.hidden}, std::vector<float>(size_t(sh_.hidden), 0.f));
    for (const auto& f : sh_.inv_freq)
      rope_.push_back(make_rope_table(ctx_, f, int(sh_.attn.head_dim), int(sh_.max_positions)));
  }

  bool on_gpu() const override { return true; }

  void forward(std::span<const int32_t> ids, std::span<const uint32_t> pos, std::span<const uint32_t> ranges,
               std::span<float> out) override {
    const int n = int(ids.size());
    const int64_t H = sh_.hidden, F = sh_.ffn, qkv_cols = sh_.qkv_cols(), q_cols = sh_.q_cols();
    std::vector<uint32_t> uids(ids.begin(), ids.end());
    Tensor tid = make_tensor(ctx_, {n}, DType::U32, std::as_bytes(std::span<const uint32_t>(uids)));
    Tensor tpos = make_tensor(ctx_, {n}, DType::U32, std::as_bytes(pos));
    Tensor trng = make_tensor(ctx_, {2 * n}, DType::U32, std::as_bytes(ranges));
    // The local layers' ranges, one list per half-window.
    std::map<int64_t, std::pair<std::vector<uint32_t>, Tensor>> windows;
    for (int64_t half : sh_.half_window)
      if (half >= 0 && !windows.count(half)) {
        std::vector<uint32_t> r = window_ranges(ranges, half);
        Tensor t = make_tensor(ctx_, {2 * n}, DType::U32, std::as_bytes(std::span<const uint32_t>(r)));
        windows.emplace(half, std::make_pair(std::move(r), t));
      }
    Tensor x = make_tensor(ctx_, {n, H}), h = make_tensor(ctx_, {n, H}), tmp = make_tensor(ctx_, {n, H});
    Tensor qkv = make_tensor(ctx_, {n, qkv_cols}), att = make_tensor(ctx_, {n, q_cols});
    Tensor u = make_tensor(ctx_, {n, F}), g = make_tensor(ctx_, {n, F});
    Tensor act = sh_.gated ? make_tensor(ctx_, {n, F}) : Tensor();
    const NormDims nd{uint32_t(n), uint32_t(H), 1, 0, 1, sh_.eps};
    auto bias_or_zeros = [&](const Tensor& b) { return b ? b : zeros_; };
    EwParams gelu;
    gelu.op = EwOp::Gelu;
    const std::vector<int64_t> shape{int64_t(n) * F};
    const EwDims gd = ew_broadcast(std::span<const std::vector<int64_t>>(&shape, 1));
    EncoderAttnDims ad = sh_.attn;
    ad.n_tokens = uint32_t(n);

    Batch b(ctx_);
    ops_.embedding(b, embd_, tid, x, n);
    if (pos_.rows > 0) {
      // nomic-bert: its one row (token type 0) for every token.
      Tensor rows = tpos;
      if (!pos_by_position_) {
        const std::vector<uint32_t> zeros(size_t(n), 0u);
        rows = make_tensor(ctx_, {n}, DType::U32, std::as_bytes(std::span<const uint32_t>(zeros)));
      }
      ops_.embedding(b, pos_, rows, tmp, n);
      ops_.add(b, tmp, x, int64_t(n) * H);
    }
    norm(b, x, en_w_, bias_or_zeros(en_b_), h, nd);
    for (size_t l = 0; l < layers_.size(); ++l) {
      const GpuLayer& L = layers_[l];
      // ModernBERT: the attention reads norm1(h) (layer 0: h itself); BERT: h.
      Tensor a = h;
      if (sh_.pre_norm && L.n1w) {
        norm(b, h, L.n1w, bias_or_zeros(L.n1b), x, nd);
        a = x;
      }
      auto proj = [&](const GpuWeight& w, const Tensor& bias, int64_t off) {
        LinearOptions lo;
        lo.bias = bias;
        lo.y_stride = qkv_cols;
        lo.y_offset = off;
        ops_.linear(b, w, a, qkv, n, lo);
      };
      proj(L.q, L.qb, 0);
      proj(L.k, L.kb, ad.k_off);
      proj(L.v, L.vb, ad.v_off);
      if (sh_.rope[l] >= 0) {
        RopeArgs ra;
        ra.n_tokens = n;
        ra.positions = tpos;
        ra.stride = qkv_cols;
        ra.n_heads = int(ad.n_heads);
        ops_.rope(b, qkv, rope_[size_t(sh_.rope[l])], ra);
        ra.n_heads = int(ad.n_kv_heads);
        ra.offset = ad.k_off;
        ops_.rope(b, qkv, rope_[size_t(sh_.rope[l])], ra);
      }
      if (const int64_t half = sh_.half_window[l]; half >= 0) {
        const auto& [r, t] = windows.at(half);
        encoder_attention(b, qkv, t, r, att, ad);
      } else {
        encoder_attention(b, qkv, trng, ranges, att, ad);
      }
      LinearOptions res;
      res.accumulate = true;
      res.bias = L.ob;
      ops_.linear(b, L.o, att, h, n, res);  // h += o(att) + b: the residual
      if (sh_.pre_norm) {
        // h += down(gelu(gate(x)) * up(x)), x = norm2(h)
        norm(b, h, L.n2w, bias_or_zeros(L.n2b), x, nd);
        ops_.linear(b, L.gate, x, g, n);
        ops_.linear(b, L.up, x, u, n);
        ops_.swiglu(b, g, F, 0, u, F, 0, act, n, int(F), F, true, true);
        res.bias = L.downb;
        ops_.linear(b, L.down, act, h, n, res);
        continue;
      }
      norm(b, h, L.n1w, L.n1b, x, nd);
      LinearOptions up;
      up.bias = L.upb;
      ops_.linear(b, L.up, x, u, n, up);
      if (sh_.gated) {  // nomic-bert: silu(gate x) * up x, into g
        ops_.linear(b, L.gate, x, act, n);
        ops_.swiglu(b, act, F, 0, u, F, 0, g, n, int(F), F);
      } else {
        elementwise(b, u, Tensor(), Tensor(), g, gelu, gd);
      }
      res.bias = L.downb;
      ops_.linear(b, L.down, g, x, n, res);  // x += down(act(...)) + b
      norm(b, x, L.n2w, L.n2b, h, nd);
    }
    if (final_w_) {
      norm(b, h, final_w_, zeros_, x, nd);
      std::swap(h, x);
    }
    b.run();
    download(ctx_, h, std::as_writable_bytes(out));
  }

 private:
  Context ctx_;
  LlmOps ops_;
  EncoderShape sh_;
  GpuWeight embd_, pos_;
  Tensor en_w_, en_b_, final_w_, zeros_;
  std::vector<GpuLayer> layers_;
  std::vector<RopeTable> rope_;
  bool pos_by_position_ = true;
};

}  // namespace

std::unique_ptr<EncoderModel::Engine> make_encoder_gpu(const ModelFile& m, Context ctx) {
  return std::make_unique<GpuEncoder>(m, ctx);
}

}  // namespace wgc::llm
