// The built-in default model (wgc-tiny-dict, see models/README.md) and per-model default sampling.
#pragma once

#include "llm/generate/sampler.h"

#include <filesystem>
#include <vector>

namespace wgc::llm {

inline constexpr const char* kDefaultModelFile = "wgc-tiny-dict-q8_0.gguf";

// Where the default model is looked for, in order: $WGC_DEFAULT_MODEL (a file, or a folder holding
// the file; when set, the only candidate: a path that leads nowhere is an error, never a fall
// back), the source tree's models/ (compile-time path), and <prefix>/share/wgc/models beside the
// installed executable.
std::vector<std::filesystem::path> default_model_candidates();
// The first candidate that exists; wgc::Error listing what was tried when none does.
std::filesystem::path default_model_path();

// Sampling a model gets when the user sets none: wgc-tiny-dict (greedy decoding loops on it):
// temperature 0.8, top-p 0.95; any other model: llama.cpp's defaults (temperature 0.8, top-k 40,
// top-p 0.95, min-p 0.05).
SamplingParams default_sampling(const std::filesystem::path& model);

}  // namespace wgc::llm
