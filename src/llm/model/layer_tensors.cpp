#include "llm/model/layer_tensors.h"

#include "llm/model/partial_rope.h"
#include "util/error.h"

#include <string>

namespace wgc::llm {

LayerMats layer_mats(const ModelFile& f, int64_t layer) {
  const ModelConfig& cfg = f.config();
  const LayerTensors lt = f.layer(layer);
  const bool moe = cfg.layer_is_moe(layer);
  LayerMats out;
  for (Mat m : kLayerMats) {
    const std::vector<TensorRole> roles = layer_mat_tensors(m, moe, cfg);
    std::vector<const ModelTensor*> ts, biases;
    for (TensorRole r : roles)
      if (lt[r]) ts.push_back(lt[r]);
    if (ts.empty() && moe) continue;  // no shared expert
    if (ts.size() != roles.size())
      throw Error("wgc: " + f.path().string() + ": layer " + std::to_string(layer) + " lacks a matrix of its " +
                  std::string(to_string(roles[0])) + " group");
    for (TensorRole r : mat_biases(m))
      if (lt[r]) biases.push_back(lt[r]);  // those the config has
    for (auto* list : {&ts, &biases})
      for (const ModelTensor*& t : *list) t = &out.loaded.emplace_back(f.load(*t));
    if (m == Mat::Qkv) {
      ts = permute_qkv_heads(ts, cfg, out.copies, out.owned);
      biases = permute_qkv_heads(biases, cfg, out.bias_copies, out.owned);
    }
    out.tensors[size_t(m)] = std::move(ts);
    out.biases[size_t(m)] = std::move(biases);
  }
  return out;
}

MoeShape moe_shape(const ModelFile& f, bool has_shared_expert) {
  const ModelConfig& cfg = f.config();
  MoeShape s;
  s.n_experts = cfg.n_experts;
  s.k = cfg.n_experts_used;
  s.ffn = cfg.expert_ffn_size;
  s.shared_ffn = has_shared_expert ? cfg.shared_expert_ffn_size : 0;
  s.norm_topk = cfg.norm_topk_prob;
  if (s.k < 1 || s.k > s.n_experts)
    throw Error("wgc: " + f.path().string() + ": " + std::to_string(s.k) + " of " + std::to_string(s.n_experts) +
                " experts per token (expected 1 <= k <= experts)");
  return s;
}

}  // namespace wgc::llm
