// The two engines behind EncoderModel (internal to src/llm/encoder): one forward pass over
// sequences packed back to back, and what both read of the file: the layers' tensors, the sizes
// and the per-layer attention (windows, rotary frequencies), gathered here once.
#pragma once

#include "cpu/llm/encoder_attention.h"
#include "llm/encoder/encoder.h"
#include "llm/formats/model_file.h"

#include <span>
#include <string>
#include <vector>

namespace wgc::llm {

struct EncoderModel::Engine {
  ModelConfig c;
  virtual ~Engine() = default;
  virtual bool on_gpu() const = 0;
  // ids [n]; pos [n]: the row of the position table (BERT: position + offset) or the rotary
  // position (ModernBERT) of each token; ranges [2n]: the rows of each token's sequence; out
  // [n][hidden].
  virtual void forward(std::span<const int32_t> ids, std::span<const uint32_t> pos, std::span<const uint32_t> ranges,
                       std::span<float> out) = 0;
};

// BERT adds one row of this table per token: the learned position embedding plus the token-type 0
// embedding (the inputs are single sentences), in f32 [rows][hidden]. nomic-bert (rotary, no
// position table): the token-type 0 row alone, added to every token (by_position false). Empty
// for ModernBERT.
struct PositionTable {
  std::vector<float> rows;
  int64_t n_rows = 0;
  bool by_position = true;  // the row of each token's position; false: row 0 for every token
};
PositionTable position_table(const ModelFile& m);

// The per-layer tensors the encoder reads (views into the file), checked to exist. ModernBERT's
// and nomic-bert's fused Wqkv (and ModernBERT's Wi) are viewed as their q, k, v (gate, up) rows.
struct EncoderLayerTensors {
  const ModelTensor *q, *k, *v, *o, *gate, *up, *down;  // gate: the activated half (ModernBERT, nomic-bert), else null
  const ModelTensor *qb, *kb, *vb, *ob, *upb, *downb;   // null where the file has none
  // BERT, nomic-bert (post-norm): the LayerNorms after the attention and the MLP residuals. ModernBERT
  // (pre-norm): the norms before the attention (null in layer 0) and before the MLP.
  const ModelTensor *norm1, *norm1_b, *norm2, *norm2_b;
};
struct EncoderTensors {
  const ModelTensor *token_embd, *embd_norm, *embd_norm_b, *final_norm;  // final_norm: ModernBERT's
  std::vector<EncoderLayerTensors> layers;
  std::vector<ModelTensor> held;  // the views role lookups returned (the pointers above point here)
};
EncoderTensors encoder_tensors(const ModelFile& m);

// Each engine's copy of a layer: weights W (matrices) and vectors V (biases, norms).
template <class W, class V>
struct EncoderLayer {
  W q, k, v, o, gate, up, down;
  V qb, kb, vb, ob, upb, downb, n1w, n1b, n2w, n2b;
};
// The layers of `t` through the engine's converters: weight(tensor) and vec(tensor or null).
template <class W, class V, class FW, class FV>
std::vector<EncoderLayer<W, V>> encoder_layers(const EncoderTensors& t, FW weight, FV vec) {
  std::vector<EncoderLayer<W, V>> out;
  for (const EncoderLayerTensors& L : t.layers) {
    EncoderLayer<W, V> g;
    g.q = weight(L.q);
    g.k = weight(L.k);
    g.v = weight(L.v);
    g.o = weight(L.o);
    if (L.gate) g.gate = weight(L.gate);
    g.up = weight(L.up);
    g.down = weight(L.down);
    g.qb = vec(L.qb);
    g.kb = vec(L.kb);
    g.vb = vec(L.vb);
    g.ob = vec(L.ob);
    g.upb = vec(L.upb);
    g.downb = vec(L.downb);
    g.n1w = vec(L.norm1);
    g.n1b = vec(L.norm1_b);
    g.n2w = vec(L.norm2);
    g.n2b = vec(L.norm2_b);
    out.push_back(std::move(g));
  }
  return out;
}

// The sizes and per-layer attention both engines follow.
struct EncoderShape {
  int64_t hidden = 0, ffn = 0, n_layers = 0;
  float eps = 1e-12f;
  bool pre_norm = false;  // ModernBERT: x + attn(norm(x)), GeGLU MLP, rotary q/k, a final norm
  // The MLP: act(gate x) * up x (pre-norm: ModernBERT's GeGLU; post-norm: nomic-bert's SwiGLU),
  // else gelu(up x + b) (BERT).
  bool gated = false;
  EncoderAttnDims attn;  // n_tokens left 0: set per pass
  int64_t qkv_cols() const { return int64_t(attn.n_heads + 2 * attn.n_kv_heads) * attn.head_dim; }
  int64_t q_cols() const { return int64_t(attn.n_heads) * attn.head_dim; }
  // Per layer: the half-window of a local layer (a token sees the keys at most this far either
  // way; -1: the whole sequence) and which rotary table it uses (0 global, 1 local; -1 none).
  std::vector<int64_t> half_window;
  std::vector<int> rope;
  std::vector<std::vector<double>> inv_freq;  // per rotary table: head_dim / 2 frequencies
  int64_t max_positions = 0;                  // rotary: the positions a sequence may use
};
EncoderShape encoder_shape(const ModelConfig& c);

// A local layer's rows: each token's range of `ranges` cut to `half` rows either side of it.
std::vector<uint32_t> window_ranges(std::span<const uint32_t> ranges, int64_t half);

std::unique_ptr<EncoderModel::Engine> make_encoder_gpu(const ModelFile& m, Context ctx);
std::unique_ptr<EncoderModel::Engine> make_encoder_cpu(const ModelFile& m, const EncoderOptions& o);

}  // namespace wgc::llm
