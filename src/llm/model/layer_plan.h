// The layer plan: what a decoder layer runs, decided once from the model's config, its weights'
// types, the mode and what the device's kernels take, as a list of steps that the engines execute
// (the GPU single-stream engine, the serving engine and the CPU engine; none spells a layer out).
//
// Every fusion decision is one entry of the rule table in layer_plan.cpp: a rule names the
// stage it serves (the QKV projection, attention and the o projection, the MLP, the output), the
// modes where it applies, the facts it needs and those it must not meet, and the steps it emits.
// The first rule of a stage whose conditions hold wins; the last rule of each stage is the plain
// (canonical) form every engine runs. Quantization to 8 bits is an epilogue of the step that
// produces an activation (q8_out), taken by the linear steps that read it (q8_in).
//
// The plan knows no GPU: the facts are plain booleans that the engines work out from their
// weights and their kernels (LlmOps's answers), so the rules are tested without a device.
#pragma once

#include "llm/formats/model_config.h"
#include "llm/formats/tensor_names.h"

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace wgc::llm {

enum class PlanMode : uint8_t {
  Decode,   // one token of one sequence (the engine's one-token steps)
  Prefill,  // several tokens of one sequence
  Serve,    // the serving engine's step: many sequences, batch-invariant kernels, a paged cache
};
std::string_view to_string(PlanMode m);

// A layer's matrix groups (matrices that one input feeds are one group: Q|K|V, gate|up) and the
// output projection.
enum class Mat : uint8_t { Qkv, O, GateUp, Down, Output };
// Norm weights: before attention, before the MLP, q and k heads (qk_norm), after attention and
// after the MLP (Gemma's sandwich norms), the final norm.
enum class NormW : uint8_t { Attn, Mlp, Q, K, PostAttn, PostMlp, Final };
inline constexpr Mat kLayerMats[] = {Mat::Qkv, Mat::O, Mat::GateUp, Mat::Down};
inline constexpr NormW kLayerNorms[] = {NormW::Attn, NormW::Mlp, NormW::Q, NormW::K, NormW::PostAttn, NormW::PostMlp};
// The file's tensors behind a layer's matrix group (its matrices' outputs side by side), their
// biases (empty: the group never has any), and behind a layer's norm weight.
std::vector<TensorRole> mat_tensors(Mat m);
// The same for a layer that may be a mixture of experts: its GateUp and Down are the shared
// expert's (Qwen2-MoE; absent in the file otherwise); Qkv and GateUp one fused matrix as stored
// where the config says so (Phi-3's qkv_proj and gate_up_proj, q|k|v and gate|up rows: the
// group's output as the separate matrices' side by side).
std::vector<TensorRole> layer_mat_tensors(Mat m, bool moe, const ModelConfig& c);
std::vector<TensorRole> mat_biases(Mat m);
TensorRole norm_tensor(NormW n);

// Activations: the residual stream, a normalised copy, Q|K|V, attention's output, gate|up,
// the MLP's activation, the logits. A q8 step reads or writes the 8-bit copy of its buffer.
enum class Buf : uint8_t { X, H, Qkv, Attn, Gu, Act, Logits };

enum class Op : uint8_t {
  Norm,        // out = rms_norm(in) * w[norm]
  Linear,      // out (+)= W[mat] in
  HeadNorm,    // the q heads (norm Q) and k heads (norm K) of in (Qkv) RMS-normalised in place
  RopeAppend,  // RoPE of in's (Qkv) q and k heads, its k and v heads appended to the KV cache
  Attention,   // out = attention of in's q heads over the cache
  Quantize,    // the 8-bit copy of in
  Glu,         // out = act(gate) * up of in (Gu): SiLU, or GELU-tanh (ModelConfig::activation)
  // Fusions, one dispatch each (per part of a group where its parts differ in type):
  NormLinear,       // Linear of Norm(in)
  NormLinearRope,   // NormLinear of Mat::Qkv with RopeAppend in its epilogue
  LinearRope,       // Linear of Mat::Qkv with RopeAppend in its epilogue
  LinearGlu,        // Linear of Mat::GateUp and Glu
  NormLinearGlu,    // Norm, Linear of Mat::GateUp and Glu
  AttentionLinear,  // one token's attention combined inside the o projection's matvec
  NormAdd,          // out += rms_norm(in) * w[norm] (Gemma's norms of the attention and MLP outputs)
  Softcap,          // in place: x -> cap * tanh(x / cap), the final logit soft-cap (Gemma 2)
  // Mixture of experts (the MLP of an MoE layer): out += the routed experts' SwiGLU MLPs of in,
  // weighted by the router (and the shared expert's, gated, where the model has one). The
  // engines run the router, the top-k and the grouping of tokens by expert themselves.
  Moe,
};
std::string_view to_string(Op o);

// q8_in on a Norm* fusion: the matvec runs on 8-bit activations (its input normalised and quantized
// inside each workgroup).
struct Step {
  Op op = Op::Norm;
  Mat mat = Mat::Qkv;
  NormW norm = NormW::Attn;
  Buf in = Buf::X, out = Buf::X;
  bool q8_in = false;       // reads in's 8-bit copy
  bool q8_out = false;      // writes out's 8-bit copy (instead of out)
  bool accumulate = false;  // out += (the residual)
  std::string_view rule;    // the rule that emitted it
  bool operator==(const Step& o) const {
    return op == o.op && mat == o.mat && norm == o.norm && in == o.in && out == o.out && q8_in == o.q8_in &&
           q8_out == o.q8_out && accumulate == o.accumulate;
  }
};
std::string to_string(const Step& s);  // e.g. "NormLinear Qkv X->Qkv q8 (norm_qkv_q8)"

// What a rule may ask of a layer. The engines fill these in (layer_plan_facts.h for the GPU).
enum class Fact : uint8_t {
  Gpu,         // a GPU adapter (the f32-activation matvec fusions only pay there)
  QkNorm,      // per-head q/k norms (Qwen 3)
  QkvQ8,       // the group takes 8-bit activations (Serve: set by the serve_q8 rule)
  QkvOnePart,  // its matrices fused into one weight (one type)
  QkvBias,
  OQ8,
  OOnePart,
  OBias,
  GateUpQ8,
  GateUpOnePart,
  GateUpBias,
  DownQ8,
  OutputQ8,
  // What the device's kernels take at this model's shapes:
  FitsNormQ8,      // x RMS-normalised and quantized inside an 8-bit matvec (hidden)
  FitsRopeQ8,      // RoPE and the cache append in the 8-bit QKV matvec (hidden)
  FitsNormF32,     // x RMS-normalised inside an f32-activation matvec (hidden)
  FitsRopeF32,     // RoPE and the cache append in the f32-activation QKV matvec (hidden)
  FitsAttnQ8,      // attention writing 8-bit output (Decode: head_dim; Serve: the paged kernel's)
  FitsGluQ8,       // gate|up + GLU quantizing its output in one matvec (ffn)
  FitsGluF32,      // gate|up + GLU with f32 activations in one matvec (ffn)
  FitsLinearRope,  // the batched QKV linear with RoPE in its epilogue (head_dim)
  NextToken,       // greedy decoding: the argmax's last pass may embed the next token
  AllBatchedQ8,    // serving: every matrix of the layer Q4_0/Q8_0 and the engine has 8-bit buffers
  Moe,             // the layer's MLP is a mixture of experts
  // What the architecture asks (ModelConfig):
  PostNorms,     // norms of the attention and MLP outputs before the residual add (Gemma's sandwich)
  GeluGlu,       // the GLU's activation is GELU-tanh (Gemma): the SwiGLU fusions do not apply
  FinalSoftcap,  // the logits are soft-capped (Gemma 2)
  // The KV cache is stored packed (f16 or q8_0, EngineOptions::cache_type): only the RopeAppend
  // step writes it (the fused RoPE epilogues of the QKV matvecs and batched linear store f32).
  PackedKv,
};
inline constexpr size_t kFacts = size_t(Fact::PackedKv) + 1;
static_assert(kFacts <= 32, "the rules' fact masks are 32 bits");
std::string_view to_string(Fact f);

struct PlanFacts {
  PlanMode mode = PlanMode::Prefill;
  std::array<bool, kFacts> has{};
  bool operator[](Fact f) const { return has[size_t(f)]; }
  PlanFacts& set(Fact f, bool v = true) {
    has[size_t(f)] = v;
    return *this;
  }
  // Names of rules not to apply (tests, A/B runs); unknown names are an error (plan_layer).
  std::vector<std::string> off;
};

// A model's plan for one mode: the layers' steps, then the final norm and output projection's.
struct LayerPlan {
  std::vector<Step> steps;
  std::vector<Step> output;  // from X (the last row where one is wanted) into Logits
  bool next_token = false;   // Decode: the argmax's last pass embeds the next token (next_token)
  std::string to_string() const;
};

// The plan of a layer with these facts (the same facts give the same plan).
LayerPlan plan_layer(const PlanFacts& f);

// Every rule's name, stage by stage (for errors, `wgc inspect --plan` and tests).
std::vector<std::string_view> plan_rule_names();
// Throws wgc::Error naming the unknown rule and listing the known ones.
void check_rule_names(const std::vector<std::string>& names);

}  // namespace wgc::llm
