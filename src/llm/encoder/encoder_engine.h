// The two engines behind EncoderModel (internal to src/llm/encoder): one forward pass over
// sequences packed back to back, and what both read of the file.
#pragma once

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
  // ids [n]; rows of the position table [n] (position + offset); ranges [2n]: the rows of each
  // token's sequence; out [n][hidden].
  virtual void forward(std::span<const int32_t> ids, std::span<const uint32_t> pos, std::span<const uint32_t> ranges,
                       std::span<float> out) = 0;
};

// Both engines add one row of this table per token: the learned position embedding plus the
// token-type 0 embedding (the inputs are single sentences), in f32 [rows][hidden].
struct PositionTable {
  std::vector<float> rows;
  int64_t n_rows = 0;
};
PositionTable position_table(const ModelFile& m);

// The per-layer tensors the encoder reads (views into the file), checked to exist.
struct EncoderLayerTensors {
  const ModelTensor *q, *k, *v, *o, *up, *down;
  const ModelTensor *qb, *kb, *vb, *ob, *upb, *downb;  // null where the file has none
  const ModelTensor *attn_norm, *attn_norm_b, *out_norm, *out_norm_b;
};
struct EncoderTensors {
  const ModelTensor *token_embd, *embd_norm, *embd_norm_b;
  std::vector<EncoderLayerTensors> layers;
  std::vector<ModelTensor> held;  // the views role lookups returned (the pointers above point here)
};
EncoderTensors encoder_tensors(const ModelFile& m);

std::unique_ptr<EncoderModel::Engine> make_encoder_gpu(const ModelFile& m, Context ctx, const EncoderOptions& o);
std::unique_ptr<EncoderModel::Engine> make_encoder_cpu(const ModelFile& m, const EncoderOptions& o);

}  // namespace wgc::llm
