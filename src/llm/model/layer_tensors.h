// Which of the file's tensors make up a decoder layer's weights, the same for every engine (the GPU
// engines upload them, the CPU engine reads them in place): the matrix groups of the layer plan and
// the shape of a mixture-of-experts layer. Knows no GPU.
#pragma once

#include "llm/formats/model_config.h"
#include "llm/formats/model_file.h"
#include "llm/model/layer_plan.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

namespace wgc::llm {

// A layer's matrix groups by the plan's roles: each group's tensors and biases (both empty for an
// MoE layer's GateUp and Down without a shared expert), their bytes at hand (ModelFile::load: read
// now from a streamed file). Partial rotary (Phi-3): the Q|K|V group's query and key rows are
// reordered copies (partial_rope.h). This holds the loaded tensors, the copies and their bytes; the
// pointers stay valid while it lives (a move keeps them).
struct LayerMats {
  std::array<std::vector<const ModelTensor*>, std::size(kLayerMats)> tensors, biases;
  std::deque<ModelTensor> loaded;
  std::vector<ModelTensor> copies, bias_copies;
  std::vector<std::unique_ptr<std::byte[]>> owned;
};
// Throws naming the file and the layer where a group lacks one of its matrices.
LayerMats layer_mats(const ModelFile& f, int64_t layer);

// A mixture-of-experts layer's shape: experts, experts per token, an expert's and the shared
// expert's FFN width (0: none), whether the top-k weights are renormalised.
struct MoeShape {
  int64_t n_experts = 0, k = 0, ffn = 0, shared_ffn = 0;
  bool norm_topk = false;
};
// From the config, for a layer whose file has a shared expert or not; throws naming the file
// unless 1 <= k <= n_experts.
MoeShape moe_shape(const ModelFile& f, bool has_shared_expert);

}  // namespace wgc::llm
