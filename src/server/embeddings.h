// POST /v1/embeddings (OpenAI's shape): the request read and checked, the model run, the answer
// written. Independent of HTTP (the server registers it), so tests call it directly.
//
// Request: {"input": "text" | ["text", ...] | [id, ...] | [[id, ...], ...], "model": "...",
//           "encoding_format": "float" | "base64", "dimensions": N, "user": "..."}
// Answer:  {"object": "list", "data": [{"object": "embedding", "index": i, "embedding": [...] or
//           base64 of little-endian float32}], "model": "...", "usage": {"prompt_tokens": n,
//           "total_tokens": n}}
// dimensions < the model's: the first N values, L2-normalised again (as OpenAI's text-embedding-3
// shortens its vectors). Errors: ApiError (400 naming the field, 404 for another model's name).
#pragma once

#include "llm/tokenizer/tokenizer.h"

#include <cstdint>
#include <functional>
#include <mutex>
#include <span>
#include <string>
#include <vector>

namespace wgc::server {

struct Embedder {
  std::string model_id;  // what "model" must say (when given)
  const llm::Tokenizer* tokenizer = nullptr;
  // A text's ids (none: tokenizer->encode with its special tokens).
  std::function<std::vector<int32_t>(const std::string&)> encode;
  int64_t dim = 0, max_tokens = 0, vocab = 0;
  size_t max_inputs = 2048;  // inputs per request (OpenAI's limit)
  // Pooled, L2-normalised vectors [seqs][dim] of the token sequences (called under `mu`).
  std::function<std::vector<float>(std::span<const std::vector<int32_t>>)> run;
  std::mutex mu;  // one request at a time through the model
};

// The JSON answer to `body`.
std::string embeddings_response(const std::string& body, Embedder& e);

}  // namespace wgc::server
