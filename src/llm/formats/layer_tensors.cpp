#include "llm/formats/layer_tensors.h"

#include "llm/formats/model_config.h"

namespace wgc::llm {

const std::array<LayerTensorName, kLayerTensors>& layer_tensor_names() {
  static const std::array<LayerTensorName, kLayerTensors> names = {{
      {LayerTensor::AttnNorm, "input_layernorm.weight", "attn_norm.weight"},
      {LayerTensor::MlpNorm, "post_attention_layernorm.weight", "ffn_norm.weight"},
      {LayerTensor::QNorm, "self_attn.q_norm.weight", "attn_q_norm.weight"},
      {LayerTensor::KNorm, "self_attn.k_norm.weight", "attn_k_norm.weight"},
      {LayerTensor::Q, "self_attn.q_proj.weight", "attn_q.weight"},
      {LayerTensor::K, "self_attn.k_proj.weight", "attn_k.weight"},
      {LayerTensor::V, "self_attn.v_proj.weight", "attn_v.weight"},
      {LayerTensor::O, "self_attn.o_proj.weight", "attn_output.weight"},
      {LayerTensor::Gate, "mlp.gate_proj.weight", "ffn_gate.weight"},
      {LayerTensor::Up, "mlp.up_proj.weight", "ffn_up.weight"},
      {LayerTensor::Down, "mlp.down_proj.weight", "ffn_down.weight"},
      {LayerTensor::QBias, "self_attn.q_proj.bias", "attn_q.bias"},
      {LayerTensor::KBias, "self_attn.k_proj.bias", "attn_k.bias"},
      {LayerTensor::VBias, "self_attn.v_proj.bias", "attn_v.bias"},
  }};
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
