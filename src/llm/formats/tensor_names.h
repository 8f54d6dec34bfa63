// Tensor names of every architecture, in both formats, in one table: a tensor's role in the model
// (TensorRole) and its Hugging Face and llama.cpp (GGUF) names. ModelFile names every tensor by its
// canonical (Hugging Face) name through this table, and the engines find a layer's tensors by role:
//
//   const ModelFile& m = ...;
//   auto wq = find_role(m, TensorRole::AttnQ, layer);           // std::nullopt when absent
//   const ModelTensor& norm = role_tensor(m, TensorRole::AttnNorm, layer);  // throws naming it
//   ModelTensor up3 = role_tensor(m, TensorRole::ExpertsUp, layer, 3);      // expert 3 ([rows, cols])
//
// Routed experts: a Hugging Face checkpoint has one tensor per expert (Mixtral "...experts.{e}.w1",
// Qwen/OLMoE "...experts.{e}.gate_proj"); llama.cpp merges them into one [n_experts, rows, cols]
// tensor per layer ("blk.{l}.ffn_gate_exps"), canonically named as the per-expert name without the
// expert ("model.layers.{l}.mlp.experts.gate_proj.weight"); transformers 5 may save gate and up fused
// ("...mlp.experts.gate_up_proj", [n_experts, 2 * ffn, hidden]). role_tensor(.., expert) returns expert
// e's matrix from any of the three (a view: no copy).
#pragma once

#include "llm/formats/model_config.h"
#include "llm/formats/model_file.h"

#include <array>
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace wgc::llm {

enum class TensorRole {
  // model level
  TokenEmbd,        // [vocab, hidden]
  TokenTypes,       // [type_vocab, hidden] (BERT)
  PositionEmbd,     // [max_positions, hidden] (BERT; RoBERTa's HF table keeps position_offset unused rows)
  EmbdNorm,         // [hidden] (BERT's embeddings.LayerNorm)
  EmbdNormBias,     // [hidden]
  OutputNorm,       // [hidden]
  Output,           // [vocab, hidden] (lm_head; absent when tied)
  RopeFreqs,        // [rope_dim / 2] (GGUF: llama3 scaling as per-frequency divisors)
  RopeFactorsLong,  // [rope_dim / 2] (GGUF: Phi-3 LongRoPE)
  RopeFactorsShort,
  // per layer: attention
  AttnNorm,  // [hidden] the norm before attention (pre-norm decoders)
  AttnQ,     // [n_heads * head_dim, hidden]
  AttnK,     // [n_kv_heads * head_dim, hidden]
  AttnV,
  AttnQkv,    // [(n_heads + 2 n_kv_heads) * head_dim, hidden]: q, k, v rows (Phi-3)
  AttnQBias,  // [n_heads * head_dim]
  AttnKBias,
  AttnVBias,
  AttnOut,      // [hidden, n_heads * head_dim]
  AttnOutBias,  // [hidden] (BERT)
  AttnQNorm,    // [head_dim] (per head), or [n_heads * head_dim] with qk_norm_whole (OLMoE)
  AttnKNorm,
  AttnPostNorm,  // [hidden] Gemma's norm of the attention output, before the residual add
  AttnOutNorm,   // [hidden] BERT's LayerNorm after the attention residual
  AttnOutNormBias,
  // per layer: MLP
  FfnNorm,  // [hidden] the norm before the MLP (Llama's post_attention_layernorm, Gemma's pre_feedforward_layernorm)
  FfnPostNorm,   // [hidden] Gemma's norm of the MLP output, before the residual add
  FfnGate,       // [ffn, hidden]
  FfnUp,         // [ffn, hidden]
  FfnGateUp,     // [2 * ffn, hidden]: gate rows then up rows (Phi-3; GGUF calls it ffn_up)
  FfnDown,       // [hidden, ffn]
  FfnUpBias,     // [ffn] (BERT)
  FfnDownBias,   // [hidden]
  LayerOutNorm,  // [hidden] BERT's LayerNorm after the MLP residual
  LayerOutNormBias,
  // per layer: mixture of experts
  MoeRouter,           // [n_experts, hidden]
  ExpertsGate,         // per expert [expert_ffn, hidden]
  ExpertsUp,           // per expert [expert_ffn, hidden]
  ExpertsDown,         // per expert [hidden, expert_ffn]
  SharedExpertRouter,  // [1, hidden] (GGUF: [hidden]) Qwen2-MoE: sigmoid gate of the shared expert
  SharedGate,          // [shared_ffn, hidden]
  SharedUp,
  SharedDown,  // [hidden, shared_ffn]
};
inline constexpr size_t kTensorRoles = size_t(TensorRole::SharedDown) + 1;
std::string_view to_string(TensorRole r);  // "token_embd", "attn_q", ... (llama.cpp's words)

bool is_layer_role(TensorRole r);   // per layer (else model level)
bool is_expert_role(TensorRole r);  // ExpertsGate / ExpertsUp / ExpertsDown

struct TensorNames {
  std::string hf;    // canonical Hugging Face name; empty when that format has no such tensor
  std::string gguf;  // llama.cpp's name; empty likewise
};

// The names of `role` in `arch` for `layer` (ignored for model-level roles) and `expert` (expert roles:
// >= 0 the per-expert Hugging Face name; -1 the merged tensor's names). Both empty when the
// architecture has no such role.
TensorNames tensor_names(Architecture arch, TensorRole role, int64_t layer = -1, int64_t expert = -1);

// The roles an architecture knows, model level and per layer, in the table's order.
std::vector<TensorRole> model_roles(Architecture arch);
std::vector<TensorRole> layer_roles(Architecture arch);

// The canonical name of GGUF tensor `gguf_name` in a file of `arch` ("blk.3.ffn_norm.weight" in gemma2 ->
// "model.layers.3.pre_feedforward_layernorm.weight"); names the table does not know come back unchanged.
std::string hf_name_for_gguf(Architecture arch, std::string_view gguf_name);
// The canonical name of a safetensors tensor: wrappers as checkpoints of other classes write them
// ("bert.", "roberta.", Gemma 3's "language_model.model."/"model.language_model.", a base model's
// missing "model.", legacy LayerNorm gamma/beta) mapped to the table's names.
std::string canonical_hf_name(Architecture arch, std::string_view name);

// The tensor of `role` (a view; for expert roles, expert `expert`'s matrix, sliced from a merged or
// fused tensor where the file has one), or std::nullopt.
std::optional<ModelTensor> find_role(const ModelFile& m, TensorRole role, int64_t layer = -1, int64_t expert = -1);
// Same; throws wgc::Error naming the file, the role and the name looked for when absent.
ModelTensor role_tensor(const ModelFile& m, TensorRole role, int64_t layer = -1, int64_t expert = -1);

// Rows [row0, row0 + rows) of a matrix, or matrix `index` of a 3-D tensor, as a view.
ModelTensor tensor_rows(const ModelTensor& t, int64_t row0, int64_t rows);
ModelTensor tensor_slice(const ModelTensor& t, int64_t index);

// Every tensor the config needs, with the shape it implies (the check open_model runs).
struct ExpectedTensor {
  TensorRole role;
  int64_t layer = -1;
  std::vector<int64_t> shape;  // torch order
};
std::vector<ExpectedTensor> expected_tensors(const ModelConfig& c);
// Those of layer `layer` alone, in the same order.
std::vector<ExpectedTensor> expected_layer_tensors(const ModelConfig& c, int64_t layer);

// One layer's tensors by role (ModelFile::layer): those the config needs, the others null; routed
// experts' roles stay null (find_role / role_tensor slice them per expert).
struct LayerTensors {
  std::array<const ModelTensor*, kTensorRoles> t{};
  const ModelTensor* operator[](TensorRole r) const { return t[size_t(r)]; }
};
// Throws wgc::Error naming the file and tensor when one is missing, misshapen or of an integer type.
void check_model_tensors(const ModelFile& m);

}  // namespace wgc::llm
