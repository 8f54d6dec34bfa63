// The weights of a Llama-family model on the GPU, shared by the single-sequence LlamaModel and the
// serving engine (BatchedLlama): matrices in their file's type (f32; f16/bf16 packed;
// Q8_0/Q4_0/Q4_K/Q6_K dequantized inside the kernels; other types dequantized once to f16),
// norms in f32, and the shape numbers the forward passes use.
#pragma once

#include "llm/formats/model_file.h"
#include "llm/model/layer_plan.h"
#include "llm/model/layer_tensors.h"
#include "ops/llm/llm_ops.h"

#include <array>

#include <optional>
#include <string>
#include <vector>

namespace wgc::llm {

// Matrices that one input feeds (Q|K|V, gate|up): one fused weight when their types agree, so one
// dispatch computes all outputs; otherwise one weight each, writing side by side.
struct LinearGroup {
  std::vector<GpuWeight> parts;  // one part: fused
  std::vector<int64_t> rows;     // rows of each logical matrix
  std::vector<Tensor> biases;    // f32, one per part (empty: no bias)
  int64_t total_rows() const;
};

// A mixture-of-experts layer's experts (Op::Moe): the router, with the shared expert's gate row
// after the experts' rows where the model has one (Qwen2-MoE); the routed experts' matrices
// stacked into one weight per role (expert e's rows at e * rows: moe_linear reads the expert ids
// on the GPU). The shared expert's gate|up and down are the layer's GateUp and Down groups.
struct MoeStack {
  GpuWeight w;
  int64_t rows = 0;   // per expert
  int64_t y_off = 0;  // where its rows land in a pair's gate|up row
};
struct MoeWeights : MoeShape {
  LinearGroup router;             // [n_experts (+ 1), hidden]
  std::vector<MoeStack> gate_up;  // one stack (each expert's gate rows, then its up rows), or gate and up
                                  // apart where their types differ
  MoeStack down;                  // [n_experts * hidden, ffn]
};

// A layer's weights by the plan's roles (layer_plan.h).
struct LlamaLayer {
  std::array<LinearGroup, std::size(kLayerMats)> mats;  // Qkv, O, GateUp, Down (MoE: the shared expert's, or empty)
  std::array<Tensor, std::size(kLayerNorms)> norms;     // Attn, Mlp, Q, K (empty where the model has none)
  std::optional<MoeWeights> moe;                        // a mixture-of-experts layer
  const LinearGroup& mat(Mat m) const { return mats[size_t(m)]; }
  const Tensor& norm(NormW n) const { return norms[size_t(n)]; }
};

struct LlamaWeights {
  ModelConfig cfg;  // the file's, with EngineOptions' RoPE overrides applied
  int64_t hidden = 0, nh = 0, nkv = 0, hd = 0, ffn = 0, vocab = 0, qkv_dim = 0;
  float eps = 1e-5f;
  uint64_t bytes = 0;  // on the GPU
  // The model's index of layers[0]: a device of a layer split (layer_split.h) holds a range.
  int first_layer = 0;
  GpuWeight embed;                   // empty on a device of a layer split that neither embeds nor ties its output to it
  std::optional<GpuWeight> lm_head;  // empty: tied to embed
  Tensor norm;
  std::vector<LlamaLayer> layers;
  std::vector<TensorType> types;  // of every matrix (for precompiling)
  LinearGroup output_group;       // output() as a group of one part

  const GpuWeight& output() const { return lm_head ? *lm_head : embed; }
  // Layer li's matrix group (li -1: Mat::Output's) and norm weight (NormW::Final: the final norm).
  const LinearGroup& mat(int li, Mat m) const { return m == Mat::Output ? output_group : layers[size_t(li)].mat(m); }
  const Tensor& norm_weight(int li, NormW n) const { return n == NormW::Final ? norm : layers[size_t(li)].norm(n); }
};

// The part of a model one device holds (layer_split.h): layers [first, first + count) (count -1:
// to the last), the embedding (embed), the final norm and the output projection (output; the
// embedding too where the output is tied to it).
struct WeightSlice {
  int first = 0, count = -1;
  bool embed = true, output = true;
};

// Uploads the model's weights, or a slice of them (with a progress bar on a terminal). The RoPE
// overrides replace the file's settings (see EngineOptions).
LlamaWeights upload_llama_weights(const Context& ctx, const ModelFile& file, std::optional<double> rope_theta,
                                  std::optional<RopeScaling> rope_scaling, const WeightSlice& slice = {});

// y[t, off + ...] = group x for n tokens (each part writing its rows side by side), optionally
// accumulating (y += W x). LinearVersion::BatchedQ8 runs the parts it cannot (not Q4_0 / Q8_0) as Batched.
void record_linear(const LlmOps& ops, Batch& b, const LinearGroup& g, const Tensor& in, const Tensor& y, int n,
                   int64_t y_stride, bool accumulate, LinearVersion v = LinearVersion::Auto);

// The same with x quantized to 8 bits (LlmOps::linear_q8); every part must take it (group_q8).
// batched: LlmOps::linear_batched_q8 instead (the serving kernel, batch-invariant; group_batched_q8).
void record_linear_q8(const LlmOps& ops, Batch& b, const LinearGroup& g, const Q8Act& in, const Tensor& y, int n,
                      int64_t y_stride, bool accumulate, bool batched = false);
// One token: x RMS-normalised with norm_w inside each part's matvec (LlmOps::rms_norm_linear;
// a group without biases).
void record_rms_norm_linear(const LlmOps& ops, Batch& b, const LinearGroup& g, const Tensor& x, const Tensor& norm_w,
                            float eps, const Tensor& y, int64_t y_stride, bool accumulate);
// One token: x RMS-normalised with norm_w and quantized inside each part's matvec
// (LlmOps::rms_norm_linear_q8; every part must take it: group_q8, matvec_q8_fusions).
void record_rms_norm_linear_q8(const LlmOps& ops, Batch& b, const LinearGroup& g, const Tensor& x, const Tensor& norm_w,
                               float eps, const Tensor& y, int64_t y_stride, bool accumulate);
// Whether every part of the group takes 8-bit activations (supports_q8), or (group_batched_q8)
// is Q4_0 or Q8_0 (linear_batched_q8).
bool group_q8(const LinearGroup& g);
bool group_batched_q8(const LinearGroup& g);

// Throws a wgc::Error naming `file` when a context of max_ctx positions does not fit: its KV cache
// (32-bit offsets, the device's buffer limits) or its rope table (the device and the host's
// memory). Checked before anything is uploaded or built. layer_rows: each layer's cache rows
// (kv_layer_rows: the sliding-window layers' rings; empty: max_ctx each).
void check_llama_context(const Context& ctx, const ModelConfig& cfg, int64_t max_ctx, const std::string& file,
                         std::span<const int> layer_rows = {});

// cos/sin of f32(pos) * inv_freq for positions < max_pos (an f32 product, as transformers computes it),
// of layer `layer`'s rope (-1: the global layers').
RopeTable make_llama_rope(const Context& ctx, const ModelConfig& cfg, int max_pos, int64_t layer = -1);

// Why the model cannot run on ctx's GPU with this context length and batch ("" when it can): a
// weight buffer (a matrix as uploaded: Q|K|V and gate|up fused), the KV cache or the logits larger
// than the device allows in one buffer. The message names the tensor, its size and the limit.
// swa_full: EngineOptions::swa_full (else the sliding-window layers' caches are rings).
std::string gpu_fit_problem(const Context& ctx, const ModelFile& file, int max_ctx, int max_batch,
                            bool swa_full = false);

}  // namespace wgc::llm
