// --backend for the commands that run a language model (generate, chat, score, serve, bench-llm,
// bench-batched): auto | gpu | cpu | cpu-vulkan, or WGC_BACKEND when the flag is auto.
//  - cpu: the CPU engine (src/llm/model/llama_cpu.h), no WebGPU context at all;
//  - gpu, cpu-vulkan: the GPU engine on that Vulkan adapter (cpu-vulkan: SwiftShader);
//  - auto: a WebGPU context and the engine the library picks (llm::choose_device: the CPU engine
//    when the only adapter is a CPU or the model does not fit the GPU).
// Other GPU commands keep parse_backend's meaning, where "cpu" names the CPU Vulkan adapter.
#pragma once

#include "cli/command.h"
#include "gpu/context.h"
#include "llm/model/llama.h"

#include <optional>
#include <string>
#include <vector>

namespace wgc::cli {

// The engine flags of the commands that build one (generate, chat, serve, bench-llm, bench-batched):
// --gpus and --tensor-split (one model split by layers over several GPUs: llm/model/layer_split.h)
// --cache-type (EngineOptions::cache_type) and --swa-full (EngineOptions::swa_full).
struct EngineFlags {
  std::vector<int> gpus;                  // adapter indices (wgc info lists them); one index may repeat
  std::vector<double> proportions;        // --tensor-split: each GPU's share of the layers
  std::optional<std::string> cache_type;  // --cache-type: f32 (when absent), f16 or q8_0
  bool swa_full = false;                  // --swa-full (EngineOptions::swa_full)
};
void add_engine_flags(CLI::App& app, EngineFlags& s);

struct LlmBackend {
  std::optional<Context> ctx;  // none: the CPU engine
  llm::Device device = llm::Device::Auto;
  // --gpus: the contexts after ctx (EngineOptions::split_gpus) and --tensor-split.
  std::vector<Context> split_gpus;
  std::vector<double> tensor_split;
  llm::KvType cache_type = llm::KvType::F32;  // --cache-type
  bool swa_full = false;                      // --swa-full
  // The engine options' device, layer split, KV cache type and sliding-window cache.
  void apply(llm::EngineOptions& eo) const;
};
// adapter_index: ContextOptions::adapter_index (-1: chosen by the backend). split: --gpus and
// --tensor-split (a usage error beside --gpu or --backend cpu), --cache-type.
LlmBackend llm_backend(const GpuFlags& g, int adapter_index = -1, const EngineFlags* split = nullptr);
// --cache-type's value (f32 when absent); a usage error for an unknown name, or a packed type on
// the CPU engine (--backend cpu).
llm::KvType cache_type_flag(const EngineFlags& e, bool cpu_engine);

// Where the model runs, for status lines: "CPU (<processor>, N threads, kernels avx2)" or the
// adapter's name.
std::string engine_name(const llm::LlamaModel& m, const LlmBackend& b);

// When auto chose the CPU engine: one line on stderr that fits 80 columns (unless --quiet); the
// library's whole reason and how to keep the GPU engine with --verbose.
void say_engine_choice(const std::string& reason);
inline void say_engine_choice(const llm::LlamaModel& m) { say_engine_choice(m.device_reason()); }
// The one line (for tests): "wgc: CPU engine: ..." of at most 80 columns.
std::string engine_choice_line(const std::string& reason);

}  // namespace wgc::cli
