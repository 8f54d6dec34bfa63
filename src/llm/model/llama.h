// LlamaModel: a Llama-family transformer (Llama 2/3/3.1/3.2, Mistral, Qwen 2/2.5/3) on one of two
// engines behind the same API, chosen at construction (EngineOptions::device):
//  - the GPU engine (WebGPU): weights uploaded in their file's type (f32; f16/bf16 packed;
//    Q8_0/Q4_0/Q4_K/Q6_K dequantized inside the kernels); the forward pass of a step (one token
//    or a whole prompt) is one submit;
//  - the CPU engine (llama_cpu.h): weights read in place from the file's mapping in their type,
//    SIMD kernels with 8-bit activations for the quantized types, worker threads.
// Activations are f32; the KV cache holds max_ctx positions (f32, or packed in 16 or 8 bits:
// EngineOptions::cache_type) and is appended in place; a sliding-window layer's holds only its
// window and a chunk, as a ring (EngineOptions::swa_full).
#pragma once

#include "cpu/llm/cpu_features.h"
#include "gpu/batch.h"
#include "llm/formats/model_file.h"
#include "ops/llm/kv_type.h"
#include "util/device.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace wgc::llm {

// Where a model runs (util/device.h). Auto: the CPU engine when there is no GPU context, when the
// context's adapter is a CPU that was not asked for by name (ContextOptions::backend Auto,
// WGC_BACKEND unset, and the only adapter is SwiftShader: WebGPU emulated on these same cores is
// ~1000x slower than the CPU engine), or when the model does not fit the GPU's limits; else the GPU.
using wgc::Device;

// The GPU engine's kernel knobs and ops: internal (src/ops/llm/llm_ops.h), for benchmarks and tests.
struct LlmTuning;
class LlmOps;
struct RopeTable;

struct EngineOptions {
  int max_ctx = 0;       // KV cache length; 0: the model's context, at most kDefaultMaxCtx
  int max_batch = 512;   // prompt tokens per forward step (longer prompts are split)
  bool progress = true;  // progress bar while uploading weights (on a terminal)
  // decode_greedy: steps in flight. 1 waits for each token before recording the next; 2 records
  // step t+1 while the GPU runs step t, which hides the host's recording time.
  int decode_ahead = 2;
  // Kernel tuning knobs (src/ops/llm/llm_ops.h, internal; benchmarks set them); none: the
  // defaults, which suit the H200.
  std::shared_ptr<const LlmTuning> tuning;
  // Layer-plan rules not to apply (layer_plan.h's table, e.g. "norm_qkv_rope_q8"), for tests and
  // A/B runs; an unknown name is an error.
  std::vector<std::string> plan_off;
  // Projections whose weights are Q4_0 / Q8_0 / Q4_K / Q6_K take their input quantized to 8 bits
  // per block of 32 and multiply with integer dot products, as llama.cpp does (results differ
  // from f32 activations by that rounding); false: f32 activations throughout.
  bool q8_activations = true;
  // Overrides of the file's RoPE settings, like llama.cpp's --rope-freq-base / --rope-scaling:
  // some GGUF files lack them (converters older than transformers 5's `rope_parameters` drop
  // them, and the readers then assume theta 10000 without scaling).
  std::optional<double> rope_theta;
  std::optional<RopeScaling> rope_scaling;
  Device device = Device::Auto;
  // Layer split over several GPUs (layer_split.h): the GPUs after the context's, in order (the
  // context runs the first range of layers, these the next ones); empty: the context alone. A
  // context may be another one on the same adapter (two devices on one GPU). GPU engine only.
  std::vector<Context> split_gpus;
  // Each GPU's share of the layers, the context's first (llama.cpp's --tensor-split: 3,1 gives
  // the first three quarters); empty: by free memory where the devices report it, else equal.
  std::vector<double> tensor_split;
  // How the KV cache stores keys and values (ops/llm/kv_type.h): f32, f16 (half the memory) or
  // q8_0 (36 bytes per 32 values; head_dim % 32 == 0). GPU engine only: the CPU engine keeps f32
  // and refuses the others (wgc::OptionError naming cache_type). The serving engine takes it too.
  KvType cache_type = KvType::F32;
  // The sliding-window layers' caches (Mistral's every layer, Gemma's local ones) keep every
  // position, as the other layers', instead of a ring of window + max_batch positions (llama.cpp's
  // --swa-full). The ring's memory does not grow with the context, but it cannot rewind past
  // what it holds (LlamaModel::can_rewind), which prefix reuse far back needs. Both engines.
  bool swa_full = false;
  int threads = 0;  // CPU engine: worker threads (0: every processor this process may run on)
  // CPU engine: the kernel level (wgc::Error when the processor lacks it); none: the best it runs,
  // or WGC_CPU_ISA's (cpu_features.h).
  std::optional<cpu::Isa> cpu_isa;
};
inline constexpr int kDefaultMaxCtx = 4096;

// What EngineOptions::device comes to for this context (none: no GPU) and model, and why when
// Auto chose the CPU (one line for the user). wgc::Error for Device::Gpu without a context.
struct DeviceChoice {
  Device device = Device::Gpu;
  std::string reason;
};
DeviceChoice choose_device(const std::optional<Context>& ctx, const ModelFile& file, const EngineOptions& options);

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
struct ModelStage;
struct CpuWeights;
namespace cpu {
class ThreadPool;
}
class LlamaEngine;

class LlamaModel {
 public:
  // ctx: the GPU context (none: the CPU engine). The file's tensors are read during construction
  // (GPU) or for the model's lifetime (CPU: the engine keeps the file's mapping alive itself).
  LlamaModel(std::optional<Context> ctx, const ModelFile& file, EngineOptions options = {});
  ~LlamaModel();
  LlamaModel(LlamaModel&&) noexcept;

  Device device() const;                     // Gpu or Cpu
  const std::string& device_reason() const;  // why Auto chose the CPU ("" otherwise)
  int threads() const;                       // the CPU engine's threads (0 on the GPU)

  const ModelConfig& config() const;
  // New kernel tuning knobs (EngineOptions::tuning) for what runs from now on (the single-token
  // step is recorded again): for sweeps in one process.
  void set_tuning(const LlmTuning& t);
  int max_ctx() const;
  int max_batch() const;  // prompt tokens per forward step (EngineOptions::max_batch)
  int n_past() const;     // tokens in the KV cache
  // Forget cached tokens from position n_past on (0: all). wgc::Error where !can_rewind(n_past).
  void rewind(int n_past);
  // Whether rewind(n_past) keeps a cache that the next token can run on: always on a full cache;
  // with the sliding-window layers' rings (EngineOptions::swa_full off), only back to the
  // positions whose windows the rings still hold (about max_batch() before the last position
  // written; 0 always). Callers that reuse a cached prefix run it again from 0 otherwise.
  bool can_rewind(int n_past) const;
  uint64_t weight_bytes() const;  // bytes of weights the engine reads (on the GPU, or mapped)
  // Bytes of the KV cache (every layer's keys and values for max_ctx() positions, in
  // EngineOptions::cache_type); / max_ctx(): per token.
  uint64_t kv_bytes() const;
  KvType cache_type() const;  // EngineOptions::cache_type (the serving engine's pool takes it too)
  // Bytes of K and V one position takes over every layer, in the cache type (the serving engine's
  // paged pool, which keeps every position of every layer).
  double kv_bytes_per_token() const;
  // This engine's cache as fixed + per_token * max_ctx() bytes (= kv_bytes()): the sliding-window
  // layers' rings are the fixed part (window + max_batch() positions each, whatever the context),
  // the other layers' positions the per-token part. With EngineOptions::swa_full, fixed is 0.
  struct KvFootprint {
    uint64_t fixed = 0;
    double per_token = 0;
  };
  KvFootprint kv_footprint() const;

  // Runs `tokens` at positions n_past() .. and appends them to the cache. Throws wgc::Error when
  // the context would overflow. The result variants:
  std::vector<float> logits(std::span<const int32_t> tokens);      // last position: [vocab]
  std::vector<float> all_logits(std::span<const int32_t> tokens);  // every position: [n][vocab]
  // The last position's hidden state after the final norm: [hidden] (decoder embedding models,
  // e.g. Qwen3-Embedding, pool it).
  std::vector<float> last_hidden(std::span<const int32_t> tokens);
  int32_t greedy(std::span<const int32_t> tokens);  // argmax on the GPU: one int read back
  // The argmax of every position: [n] (speculative decoding's verification: one forward pass, n ids
  // read back on the GPU engine).
  std::vector<int32_t> greedy_all(std::span<const int32_t> tokens);
  TopK top_k(std::span<const int32_t> tokens, int k);  // k <= 64, on the GPU
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
  // left as it was): for profiles. GPU engine only (wgc::Error on the CPU). Single-token steps
  // (decode_greedy, and greedy/logits/top_k of one token) replay one recording made on first use,
  // whose position is read on the GPU.
  std::vector<DispatchTiming> profile_decode_step(int32_t token);

  // For the serving engine (BatchedLlama), which runs its own forward on these weights. GPU
  // engine on one GPU (wgc::Error on the CPU or split: see stages()): the weights, the ops (with EngineOptions::tuning;
  // not thread-safe), the RoPE table (max_ctx positions) and the context.
  const LlamaWeights& weights() const;
  const LlmOps& ops() const;
  const RopeTable& rope() const;
  const RopeTable* sliding_rope() const;  // the sliding layers' where it differs (Gemma 3), else null
  // The first device's context (the only one unless the model is split over several GPUs).
  const Context& context() const;
  // Each device's share (layer_split.h): one stage on one GPU, one per GPU of a layer split.
  // GPU engine only; the stages point into this model.
  std::vector<ModelStage> stages() const;
  // CPU engine (wgc::Error on the GPU): the weights and the worker threads.
  std::shared_ptr<const CpuWeights> cpu_weights() const;
  std::shared_ptr<cpu::ThreadPool> cpu_threads() const;

 private:
  std::unique_ptr<LlamaEngine> impl_;
  std::string reason_;
};

}  // namespace wgc::llm
