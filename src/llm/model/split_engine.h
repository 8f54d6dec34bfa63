// The GPU engine of a model split over several GPUs by layers (layer_split.h), internal to
// src/llm/model: LlamaModel makes it when EngineOptions::split_gpus is not empty.
#pragma once

#include "llm/model/layer_split.h"
#include "llm/model/llama_engine.h"

#include <memory>
#include <vector>

namespace wgc::llm {

// devices: two or more contexts, the first range of layers on devices[0].
std::unique_ptr<LlamaEngine> make_split_engine(std::vector<Context> devices, const ModelFile& file,
                                               const EngineOptions& options);
// A split engine's stages, one per device (empty for other engines), and its first context
// (nullptr for other engines).
std::vector<ModelStage> split_stages(const LlamaEngine& e);
const Context* split_context(const LlamaEngine& e);

}  // namespace wgc::llm
