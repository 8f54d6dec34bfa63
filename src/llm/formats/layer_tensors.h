// The tensors of one decoder layer, by role: the one place where their names (Hugging Face and
// GGUF), the configs that need them and their shapes are written. ModelFile::layer(i) finds them;
// the engines' weight loaders and the file checks go through it.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace wgc::llm {

struct ModelConfig;
struct ModelTensor;

enum class LayerTensor : uint8_t {
  AttnNorm,  // RMSNorm weight before attention
  MlpNorm,   // RMSNorm weight before the MLP
  QNorm,     // per-head RMSNorm of q (qk_norm)
  KNorm,     // per-head RMSNorm of k (qk_norm)
  Q,
  K,
  V,
  O,
  Gate,
  Up,
  Down,
  QBias,  // attention_bias
  KBias,
  VBias,
};
inline constexpr size_t kLayerTensors = size_t(LayerTensor::VBias) + 1;

struct LayerTensorName {
  LayerTensor role;
  std::string_view hf;    // after "model.layers.{i}."
  std::string_view gguf;  // after "blk.{i}."
};
// Every role's names, in LayerTensor order.
const std::array<LayerTensorName, kLayerTensors>& layer_tensor_names();

// "model.layers.{layer}.{hf name}".
std::string layer_tensor_name(int64_t layer, LayerTensor role);
// Whether a model of this config has the tensor (biases, q/k norms only where the config says).
bool layer_tensor_needed(LayerTensor role, const ModelConfig& c);
// Its shape (torch order) as the config implies it.
std::vector<int64_t> layer_tensor_shape(LayerTensor role, const ModelConfig& c);

// One layer's tensors (null where the config has none).
struct LayerTensors {
  std::array<const ModelTensor*, kLayerTensors> t{};
  const ModelTensor* operator[](LayerTensor r) const { return t[size_t(r)]; }
};

}  // namespace wgc::llm
