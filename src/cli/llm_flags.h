// Flags of the commands that run a language model (generate, chat, score, bench-llm): the model,
// the sampling parameters, token ids.
#pragma once

#include "cli/command.h"
#include "llm/generate/generator.h"
#include "llm/generate/sampler.h"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace wgc::cli {

// --tokens values as token ids (0 .. 2^31-1); the error names `flag`.
std::vector<int32_t> token_ids(const std::vector<int64_t>& values, std::string_view flag);

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

}  // namespace wgc::cli
