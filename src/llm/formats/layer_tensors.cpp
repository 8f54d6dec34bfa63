#include "llm/formats/layer_tensors.h"

#include "llm/formats/model_config.h"
#include "llm/formats/tensor_names.h"

#include <utility>

namespace wgc::llm {

// Drawn from the Llama rows of tensor_names.h, the one table of every architecture's names.
const std::array<LayerTensorName, kLayerTensors>& layer_tensor_names() {
  static const TensorRole kRoles[kLayerTensors] = {
      TensorRole::AttnNorm, TensorRole::FfnNorm,   TensorRole::AttnQNorm, TensorRole::AttnKNorm, TensorRole::AttnQ,
      TensorRole::AttnK,    TensorRole::AttnV,     TensorRole::AttnOut,   TensorRole::FfnGate,   TensorRole::FfnUp,
      TensorRole::FfnDown,  TensorRole::AttnQBias, TensorRole::AttnKBias, TensorRole::AttnVBias,
  };
  static const std::array<std::pair<std::string, std::string>, kLayerTensors> storage = [] {
    std::array<std::pair<std::string, std::string>, kLayerTensors> s;
    const std::string hf_prefix = "model.layers.0.", gguf_prefix = "blk.0.";
    for (size_t i = 0; i < kLayerTensors; ++i) {
      TensorNames n = tensor_names(Architecture::Llama, kRoles[i], 0);
      s[i] = {n.hf.substr(hf_prefix.size()), n.gguf.substr(gguf_prefix.size())};
    }
    return s;
  }();
  static const std::array<LayerTensorName, kLayerTensors> names = [] {
    std::array<LayerTensorName, kLayerTensors> n{};
    for (size_t i = 0; i < kLayerTensors; ++i) n[i] = {LayerTensor(i), storage[i].first, storage[i].second};
    return n;
  }();
  return names;
}

std::string layer_tensor_name(int64_t layer, LayerTensor role) {
  return "model.layers." + std::to_string(layer) + "." + std::string(layer_tensor_names()[size_t(role)].hf);
}

bool layer_tensor_needed(LayerTensor role, const ModelConfig& c) {
  switch (role) {
    case LayerTensor::QNorm:
    case LayerTensor::KNorm: return c.qk_norm;
    case LayerTensor::QBias:
    case LayerTensor::KBias:
    case LayerTensor::VBias: return c.attention_bias;
    default: return true;
  }
}

std::vector<int64_t> layer_tensor_shape(LayerTensor role, const ModelConfig& c) {
  const int64_t h = c.hidden_size, q = c.n_heads * c.head_dim, kv = c.n_kv_heads * c.head_dim;
  switch (role) {
    case LayerTensor::AttnNorm:
    case LayerTensor::MlpNorm: return {h};
    case LayerTensor::QNorm:
    case LayerTensor::KNorm: return {c.head_dim};
    case LayerTensor::Q: return {q, h};
    case LayerTensor::K:
    case LayerTensor::V: return {kv, h};
    case LayerTensor::O: return {h, q};
    case LayerTensor::Gate:
    case LayerTensor::Up: return {c.ffn_size, h};
    case LayerTensor::Down: return {h, c.ffn_size};
    case LayerTensor::QBias: return {q};
    case LayerTensor::KBias:
    case LayerTensor::VBias: return {kv};
  }
  return {};
}

}  // namespace wgc::llm
