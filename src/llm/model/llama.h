// LlamaModel: a Llama-family transformer (Llama 2/3/3.1/3.2, Mistral, Qwen 2/2.5/3) on the GPU.
// Weights stay in their file's type (f32; f16/bf16 packed; Q8_0/Q4_0/Q4_K/Q6_K dequantized inside
// the kernels); activations are f32; the KV cache is preallocated for max_ctx positions and
// appended in place. The forward pass of a step (one token or a whole prompt) is one submit.
#pragma once

#include "gpu/batch.h"
#include "llm/formats/model_file.h"
#include "ops/llm/llm_ops.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

namespace wgc::llm {

struct EngineOptions {
  int max_ctx = 0;       // KV cache length; 0: the model's context, at most kDefaultMaxCtx
  int max_batch = 512;   // prompt tokens per forward step (longer prompts are split)
  bool progress = true;  // progress bar while uploading weights (on a terminal)
  // decode_greedy: steps in flight. 1 waits for each token before recording the next; 2 records
  // step t+1 while the GPU runs step t, which hides the host's recording time.
  int decode_ahead = 2;
  LlmTuning tuning;  // kernel tuning knobs (defaults suit the H200)
  // Projections whose weights are Q4_0 / Q8_0 / Q4_K / Q6_K take their input quantized to 8 bits
  // per block of 32 and multiply with integer dot products, as llama.cpp does (results differ
  // from f32 activations by that rounding); false: f32 activations throughout.
  bool q8_activations = true;
  // Overrides of the file's RoPE settings, like llama.cpp's --rope-freq-base / --rope-scaling:
  // some GGUF files lack them (converters older than transformers 5's `rope_parameters` drop
  // them, and the readers then assume theta 10000 without scaling).
  std::optional<double> rope_theta;
  std::optional<RopeScaling> rope_scaling;
};
inline constexpr int kDefaultMaxCtx = 4096;

// What decode_greedy did, with the host's share of the time.
struct DecodeStats {
  int tokens = 0;        // tokens handed to on_token
  int recorded = 0;      // steps sent to the GPU (more than tokens when stopped early)
  double record_ms = 0;  // host time recording and submitting steps
  double wait_ms = 0;    // host time blocked on token readbacks
};

struct TopK {
  std::vector<float> logits;  // descending
  std::vector<int32_t> ids;
};

struct LlamaWeights;

class LlamaModel {
 public:
  LlamaModel(const Context& ctx, const ModelFile& file, EngineOptions options = {});
  ~LlamaModel();
  LlamaModel(LlamaModel&&) noexcept;

  const ModelConfig& config() const;
  // New kernel tuning knobs (EngineOptions::tuning) for what runs from now on (the single-token
  // step is recorded again): for sweeps in one process.
  void set_tuning(const LlmTuning& t);
  int max_ctx() const;
  int max_batch() const;          // prompt tokens per forward step (EngineOptions::max_batch)
  int n_past() const;             // tokens in the KV cache
  void rewind(int n_past);        // forget cached tokens from position n_past on (0: all)
  uint64_t weight_bytes() const;  // bytes of weights on the GPU

  // Runs `tokens` at positions n_past() .. and appends them to the cache. Throws wgc::Error when
  // the context would overflow. The result variants:
  std::vector<float> logits(std::span<const int32_t> tokens);      // last position: [vocab]
  std::vector<float> all_logits(std::span<const int32_t> tokens);  // every position: [n][vocab]
  int32_t greedy(std::span<const int32_t> tokens);                 // argmax on the GPU: one int read back
  TopK top_k(std::span<const int32_t> tokens, int k);              // k <= 64, on the GPU
  // No result: `tokens` go into the cache in steps of max_batch(); `progress` hears the tokens
  // done and the total after each step.
  void prefill(std::span<const int32_t> tokens, const std::function<void(int, int)>& progress = {});

  // Greedy decoding from `first` (a token not yet in the cache): each step runs one token and
  // hands the argmax to on_token, which returns false to stop; at most max_steps steps (fewer
  // when the context fills). The next step reads the argmax on the GPU, so with
  // EngineOptions::decode_ahead > 1 the host records ahead instead of waiting for each token;
  // steps recorded past a stop are dropped (the cache keeps only the tokens handed out).
  DecodeStats decode_greedy(int32_t first, int max_steps, const std::function<bool(int32_t)>& on_token);

  // GPU time of each dispatch of one decode step of `token` at position n_past() (the cache is
  // left as it was): for profiles. Single-token steps (decode_greedy, and greedy/logits/top_k of
  // one token) replay one recording made on first use, whose position is read on the GPU.
  std::vector<DispatchTiming> profile_decode_step(int32_t token);

  // For the serving engine (BatchedLlama), which runs its own forward on these weights: the
  // weights, the ops (with EngineOptions::tuning; not thread-safe), the RoPE table (max_ctx
  // positions) and the context.
  const LlamaWeights& weights() const;
  const LlmOps& ops() const;
  const RopeTable& rope() const;
  const Context& context() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace wgc::llm
