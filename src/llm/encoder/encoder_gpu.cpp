// The encoder's GPU engine: one Batch per forward pass over the packed sequences, built from the
// existing ops (LlmOps::embedding / linear / add, ops/norm.h's LayerNorm, ops/elementwise.h's
// GELU) and encoder_attention (kernels/encoder/attention.wgsl).
#include "llm/encoder/encoder_engine.h"

#include "ops/elementwise.h"
#include "ops/llm/encoder_ops.h"
#include "ops/llm/llm_ops.h"
#include "ops/norm.h"
#include "util/error.h"

#include <cstring>

namespace wgc::llm {

namespace {

struct GpuLayer {
  GpuWeight q, k, v, o, up, down;
  Tensor qb, kb, vb, ob, upb, downb, n1w, n1b, n2w, n2b;
};

class GpuEncoder final : public EncoderModel::Engine {
 public:
  GpuEncoder(const ModelFile& m, Context ctx, const EncoderOptions& o) : ctx_(ctx), ops_(ctx) {
    const ModelConfig& cfg = m.config();
    H_ = cfg.hidden_size;
    F_ = cfg.ffn_size;
    eps_ = float(cfg.rms_norm_eps);
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
    std::vector<std::byte> bytes(pt.rows.size() * sizeof(float));
    std::memcpy(bytes.data(), pt.rows.data(), bytes.size());
    pos_ = upload_weight(ctx_, TensorType::F32, bytes, pt.n_rows, H_);
    en_w_ = vec(t.embd_norm);
    en_b_ = vec(t.embd_norm_b);
    for (const auto& L : t.layers) {
      GpuLayer g;
      g.q = weight(L.q);
      g.k = weight(L.k);
      g.v = weight(L.v);
      g.o = weight(L.o);
      g.up = weight(L.up);
      g.down = weight(L.down);
      g.qb = vec(L.qb);
      g.kb = vec(L.kb);
      g.vb = vec(L.vb);
      g.ob = vec(L.ob);
      g.upb = vec(L.upb);
      g.downb = vec(L.downb);
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
    (void)o;
  }

  bool on_gpu() const override { return true; }

  void forward(std::span<const int32_t> ids, std::span<const uint32_t> pos, std::span<const uint32_t> ranges,
               std::span<float> out) override {
    const int n = int(ids.size());
    const int64_t qkv_cols = int64_t(nh_ + 2 * nkv_) * hd_, q_cols = int64_t(nh_) * hd_;
    std::vector<uint32_t> uids(ids.begin(), ids.end());
    Tensor tid = make_tensor(ctx_, {n}, DType::U32, std::as_bytes(std::span<const uint32_t>(uids)));
    Tensor tpos = make_tensor(ctx_, {n}, DType::U32, std::as_bytes(pos));
    Tensor trng = make_tensor(ctx_, {2 * n}, DType::U32, std::as_bytes(ranges));
    Tensor x = make_tensor(ctx_, {n, H_}), h = make_tensor(ctx_, {n, H_}), tmp = make_tensor(ctx_, {n, H_});
    Tensor qkv = make_tensor(ctx_, {n, qkv_cols}), att = make_tensor(ctx_, {n, q_cols});
    Tensor u = make_tensor(ctx_, {n, F_}), g = make_tensor(ctx_, {n, F_});
    const NormDims nd{uint32_t(n), uint32_t(H_), 1, 0, 1, eps_};
    EwParams gelu;
    gelu.op = EwOp::Gelu;
    const std::vector<int64_t> shape{int64_t(n) * F_};
    const EwDims gd = ew_broadcast(std::span<const std::vector<int64_t>>(&shape, 1));
    EncoderAttnDims ad;
    ad.n_tokens = uint32_t(n);
    ad.n_heads = nh_;
    ad.n_kv_heads = nkv_;
    ad.head_dim = hd_;
    ad.stride = uint32_t(qkv_cols);
    ad.q_off = 0;
    ad.k_off = uint32_t(q_cols);
    ad.v_off = uint32_t(q_cols + int64_t(nkv_) * hd_);
    ad.o_stride = uint32_t(q_cols);
    ad.o_off = 0;
    ad.scale = scale_;

    Batch b(ctx_);
    ops_.embedding(b, embd_, tid, x, n);
    ops_.embedding(b, pos_, tpos, tmp, n);
    ops_.add(b, tmp, x, int64_t(n) * H_);
    norm(b, x, en_w_, en_b_, h, nd);
    for (const GpuLayer& L : layers_) {
      auto proj = [&](const GpuWeight& w, const Tensor& bias, int64_t off) {
        LinearOptions lo;
        lo.bias = bias;
        lo.y_stride = qkv_cols;
        lo.y_offset = off;
        ops_.linear(b, w, h, qkv, n, lo);
      };
      proj(L.q, L.qb, 0);
      proj(L.k, L.kb, ad.k_off);
      proj(L.v, L.vb, ad.v_off);
      encoder_attention(b, qkv, trng, ranges, att, ad);
      LinearOptions res;
      res.accumulate = true;
      res.bias = L.ob;
      ops_.linear(b, L.o, att, h, n, res);  // h += o(att) + b: the residual
      norm(b, h, L.n1w, L.n1b, x, nd);
      LinearOptions up;
      up.bias = L.upb;
      ops_.linear(b, L.up, x, u, n, up);
      elementwise(b, u, Tensor(), Tensor(), g, gelu, gd);
      res.bias = L.downb;
      ops_.linear(b, L.down, g, x, n, res);  // x += down(gelu(up x)) + b
      norm(b, x, L.n2w, L.n2b, h, nd);
    }
    b.run();
    download(ctx_, h, std::as_writable_bytes(out));
  }

 private:
  Context ctx_;
  LlmOps ops_;
  int64_t H_ = 0, F_ = 0;
  float eps_ = 1e-12f, scale_ = 1;
  uint32_t nh_ = 0, nkv_ = 0, hd_ = 0;
  GpuWeight embd_, pos_;
  Tensor en_w_, en_b_;
  std::vector<GpuLayer> layers_;
};

}  // namespace

std::unique_ptr<EncoderModel::Engine> make_encoder_gpu(const ModelFile& m, Context ctx, const EncoderOptions& o) {
  return std::make_unique<GpuEncoder>(m, ctx, o);
}

}  // namespace wgc::llm
