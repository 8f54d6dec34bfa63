// Flags of the commands that run a language model (generate, chat, score, bench-llm): the model,
// the sampling parameters, token ids, and loading the model with what the user should hear.
#pragma once

#include "cli/command.h"
#include "cli/llm_backend.h"
#include "llm/formats/model_file.h"
#include "llm/generate/generator.h"
#include "llm/generate/sampler.h"
#include "llm/model/llama.h"
#include "llm/tokenizer/tokenizer.h"
#include "util/waiting.h"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace wgc {
class Context;
}

namespace wgc::cli {

// --tokens values as token ids (0 .. 2^31-1); the error names `flag`.
std::vector<int32_t> token_ids(const std::vector<int64_t>& values, std::string_view flag);

// The text of a prompt file ("-": stdin) without the line end after its last line. At most
// kMaxPromptFileBytes.
inline constexpr uint64_t kMaxPromptFileBytes = 64ull << 20;
std::string read_prompt_file(const std::string& path);

// The sampling flags as given; unset ones take the model's defaults (llm::default_sampling).
struct SamplingFlags {
  std::optional<float> temperature, top_p, min_p, repeat_penalty, presence_penalty, frequency_penalty;
  std::optional<int> top_k, repeat_last_n;
  std::optional<uint64_t> seed;
};
void add_sampling_flags(CLI::App& app, SamplingFlags& s);
// The model's defaults with the flags on top, checked (llm::validate; errors name the flags). A
// seed not given is drawn from std::random_device.
llm::SamplingParams sampling_params(const SamplingFlags& s, const std::filesystem::path& model);

// llm::validate(o), with the options' errors in the flags' names (-n, --stop, the sampling flags).
void check_generate_options(const llm::GenerateOptions& o);

// --model's value: a file or folder; else owner/name[/FILE] pulled into the hub cache (`wgc pull`);
// else a name: the built-in model's (wgc-tiny-dict, wgc-tiny-dict-q8_0), or a pulled file's name or
// stem or a pulled folder's repository name (`wgc list`); absent: the built-in model
// (llm::default_model_path).
std::filesystem::path model_path(const std::optional<std::string>& model);
inline constexpr const char* kBuiltinModelName = "wgc-tiny-dict";
// Whether `name` names the built-in model (wgc-tiny-dict, wgc-tiny-dict-q8_0[.gguf]).
bool is_builtin_name(std::string_view name);
inline constexpr const char* kModelHelp =
    "a GGUF file, a Hugging Face folder, owner/name[/FILE] pulled with wgc pull, or a name wgc list shows "
    "(default: the built-in wgc-tiny-dict)";

// The flags of commands that generate text (generate, chat).
struct ModelFlags {
  GpuFlags gpu;
  EngineFlags split;  // --gpus, --tensor-split
  std::optional<std::string> model;
  std::string tokenizer;
  SamplingFlags sampling;
  int n = 128;
  int ctx = 0;
  int threads = 0;  // the CPU engine's (0: every processor)
  std::vector<std::string> stop;
  bool ignore_eos = false;
  // f32 activations for quantized weights (EngineOptions::q8_activations off): what `wgc serve`,
  // whose batched kernels read f32 activations, gives.
  bool no_q8 = false;
  // Speculative decoding: a draft model of the same tokenizer and its proposals per round.
  std::optional<std::string> draft_model;
  int draft_tokens = llm::SpeculativeOptions{}.draft_tokens;
};
void add_model_flags(CLI::App& app, ModelFlags& f, int default_n);
// The generation options the flags give for `model` (checked; errors name the flags).
llm::GenerateOptions generate_options(const ModelFlags& f, const std::filesystem::path& model);

// A model as the commands load it: the file and its tokenizer first (CPU only: bad input fails
// before the GPU starts; model notes with --verbose), then the engine (warnings: a context above
// the one the model was trained for, a large model on a CPU adapter).
struct LoadedModel {
  std::filesystem::path path;
  llm::ModelFile file;
  std::optional<llm::Tokenizer> tok;
  std::optional<llm::LlamaModel> model;
  double load_ms = 0;
  bool emulated = false;  // the GPU engine on a CPU adapter (SwiftShader): slow, silent first steps
};
LoadedModel open_model_files(const std::filesystem::path& path, const std::string& tokenizer);
// threads: the CPU engine's worker threads (0: every processor).
llm::LlamaModel& start_engine(LoadedModel& m, const LlmBackend& backend, int max_ctx, bool q8_activations = true,
                              int threads = 0);

// --draft-model: the draft model loaded on the target's backend with the target's context and
// set on gen (Generator::set_draft: the tokenizers must agree); null without the flag.
std::unique_ptr<LoadedModel> start_draft(const ModelFlags& f, const LoadedModel& target, const LlmBackend& backend,
                                         llm::Generator& gen);

// The bench commands' speculative-decoding sweeps: each --draft-tokens count 1 .. kMaxDraftTokens,
// each --draft-acceptance rate 0 .. 1.
void check_draft_sweep(const std::vector<int>& tokens, const std::vector<double>& acceptance);

// The flags llama.cpp users reach for, as aliases of wgc's (the help names wgc's first):
// --ctx (-c, --ctx-size) and --threads (-t).
CLI::Option* add_ctx_flag(CLI::App& app, int& ctx, const std::string& help);
CLI::Option* add_threads_flag(CLI::App& app, int& threads);
// --threads' value checked (0 .. 4096).
int checked_threads(int threads);

// While the first steps of a model on SwiftShader run (each kernel compiles on first use: tens of
// seconds with nothing to show), a line saying so with the seconds passing; empty elsewhere. Reset
// it when the first token arrives.
std::unique_ptr<Waiting> first_steps_wait(const LoadedModel& m);

// Prefill progress on stderr ("[prompt 1536/4000 tokens]") for prompts longer than one engine
// step, where progress bars are drawn (util/progress.h: a terminal, or WGC_PROGRESS=1) and not
// with --quiet; empty otherwise.
std::function<void(int, int)> prefill_progress();

// A library message in the command's terms: "the engine's max_ctx" is --ctx.
std::string in_flag_terms(std::string message);

// Timings as JSON (generate --json).
json::Value timings_json(const llm::Timings& t);

}  // namespace wgc::cli
