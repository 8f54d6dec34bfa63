// The GPU side of the layer plan (layer_plan.h): the facts its rules ask, worked out from the
// weights and LlmOps's kernels, and the executor that records a plan's steps. Both GPU engines
// use them: LlamaModel's single sequence and the serving engine (BatchedLlama).
#pragma once

#include "llm/model/layer_plan.h"
#include "llm/model/llama_weights.h"

#include <span>

namespace wgc::llm {

// The facts of layer li (or, li = -1, of the output alone) for a pass in this mode. Single
// sequence: a group takes 8-bit activations where q8_activations and its types do; serving:
// every group of the layer does or none (serve_q8: the engine has the 8-bit buffers and every
// matrix of the model is Q4_0 or Q8_0, per layer). kv: the cache's type (PackedKv).
PlanFacts gpu_plan_facts(const LlmOps& ops, const LlamaWeights& w, int li, PlanMode mode, bool q8_activations,
                         KvType kv, bool serve_q8 = false);

// A model's plan for one mode: each layer's steps, the output's, and whether greedy decoding
// ends a step with next_token.
struct GpuPlan {
  std::vector<std::vector<Step>> layers;
  std::vector<Step> output;
  bool next_token = false;
};
// serve_q8: the serving engine has its 8-bit buffers (each layer then takes them where
// serve_q8_layer). off: rules not to apply. kv: the KV cache's type.
GpuPlan plan_gpu(const LlmOps& ops, const LlamaWeights& w, PlanMode mode, bool q8_activations,
                 const std::vector<std::string>& off, KvType kv, bool serve_q8 = false);

// Whether every matrix of layer li takes the serving engine's 8-bit batched kernels.
bool serve_q8_layer(const LlamaWeights& w, int li);

// A mixture-of-experts layer's buffers (Op::Moe) for up to max_tokens tokens: the router's logits,
// the routing, per (token, slot) pair the expert's gate|up, activation and output, and the shared
// expert's gate|up, activation and output per token.
struct MoeActs {
  MoeRouting routing;
  Tensor logits, gu, act, yd, sgu, sact, ys;
};
// Those of model w (empty when it has no mixture-of-experts layer).
MoeActs make_moe_acts(const Context& ctx, const LlamaWeights& w, int max_tokens);

// The activations a pass works in, one row per token (the 8-bit copies of h, attn and act where
// a plan quantizes them).
struct GpuActs {
  Tensor x, h, qkv, attn, gu, act;
  Q8Act hq, attnq, actq;
  MoeActs moe;
};

// How a pass attends and appends: one sequence over its own cache (attention), or the serving
// engine's batch over the paged pool (paged).
struct GpuPass {
  int n = 0;                                  // tokens
  bool serve = false;                         // batch-invariant kernels (batched linears, fixed quant wg)
  LinearVersion lin = LinearVersion::Auto;    // the f32-activation linears' version
  RopeKvArgs rope;                            // the tokens' positions and cache rows
  AttentionArgs attention;                    // one sequence
  const PagedAttentionPlan* paged = nullptr;  // serving
  const RopeTable* sliding_rope = nullptr;    // the sliding layers' rope where it differs (Gemma 3)
};

// The sliding window of layer li's attention (0: none), as AttentionArgs::window counts it.
int layer_window(const ModelConfig& c, int li);

// Records the steps of layer li's plan (its attention through the layer's window).
void record_layer(const LlmOps& ops, Batch& b, std::span<const Step> steps, const LlamaWeights& w, int li,
                  const KvLayer& cache, const RopeTable& rope, const GpuActs& a, const GpuPass& p);

// The embeddings of n tokens (their ids in `ids`) into out, scaled where the model says (Gemma:
// sqrt(hidden)): every GPU engine's first step.
void record_embedding(const LlmOps& ops, Batch& b, const LlamaWeights& w, const Tensor& ids, const Tensor& out, int n);

// The final norm and the output projection of row `row` of a.x into logits, as the plan's output
// steps say (a single sequence's last token); `last` holds the row where the norm runs apart.
void record_output_row(const LlmOps& ops, Batch& b, std::span<const Step> steps, const LlamaWeights& w,
                       const GpuActs& a, const Tensor& last, const Tensor& logits, int64_t row);
// The same for every one of the n rows of a.x into logits [n][vocab] (speculative decoding's
// verification reads every position): the plan's many-token output steps (NormLinear, a one-token
// fusion, is not one of them). f32: the norm and the projection in f32 where the plan quantizes
// them (all_logits: the arithmetic of score and perplexity).
void record_output_rows(const LlmOps& ops, Batch& b, std::span<const Step> steps, const LlamaWeights& w,
                        const GpuActs& a, const Tensor& logits, int n, bool f32 = false);

}  // namespace wgc::llm
