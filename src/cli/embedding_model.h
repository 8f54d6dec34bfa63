// The embedding model `wgc serve --embedding-model` serves at /v1/embeddings (llm/encoder/embedding_model.h:
// a BERT-family encoder or a decoder embedding model), on the chat model's GPU context or the CPU engines.
#pragma once

#include "cli/llm_backend.h"
#include "server/embeddings.h"

#include <filesystem>
#include <memory>
#include <string>

namespace wgc::cli {

// Loads the model (wgc::Error naming the file when it is not an embedding model wgc runs, or has no
// tokenizer); the Embedder keeps it alive. id: the model's name in the API.
std::shared_ptr<server::Embedder> load_embedder(const std::filesystem::path& path, const std::string& id,
                                                const LlmBackend& backend, int threads);

}  // namespace wgc::cli
