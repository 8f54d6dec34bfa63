// EmbeddingModel: sentence embeddings from whichever kind of embedding model a file holds: a
// BERT-family encoder (EncoderModel: CLS / mean / last pooling, sequences packed into one pass),
// or a decoder embedding model (Qwen3-Embedding: the decoder engines' final hidden state of the
// last token, LlamaModel::last_hidden, one sequence at a time). What `wgc embed` and `wgc serve
// --embedding-model` run.
//
//   ModelFile m = open_model(path, {.any_architecture = true});
//   EmbeddingModel em(m, ctx);                                    // std::nullopt: the CPU engines
//   std::vector<float> v = em.embed({tok.encode("hello")});      // [1][em.dim()], L2-normalised
#pragma once

#include "gpu/context.h"
#include "llm/formats/model_config.h"

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace wgc::llm {

class ModelFile;

class Tokenizer;

// The ids of `text` as the model's embedding pipeline feeds them: the tokenizer's special tokens
// added, and for a decoder pooled by its last token, "<|endoftext|>" (else the EOS) at the end
// where the tokenizer did not put it there (Qwen3-Embedding's tokenizer.json appends it; llama.cpp's
// GGUF of it does not say so).
std::vector<int32_t> embedding_tokens(const Tokenizer& tok, const ModelConfig& c, std::string_view text);

// Why this config is not an embedding model wgc runs ("" when it is).
std::string embedding_refusal(const ModelConfig& c);

struct EmbeddingOptions {
  int threads = 0;  // CPU engines' worker threads (0: every processor)
  bool progress = true;
};

class EmbeddingModel {
 public:
  // `file` outlives the model. wgc::Error with embedding_refusal() when it is not one.
  EmbeddingModel(const ModelFile& file, std::optional<Context> ctx, EmbeddingOptions options = {});
  ~EmbeddingModel();
  EmbeddingModel(EmbeddingModel&&) noexcept;

  const ModelConfig& config() const;
  bool on_gpu() const;
  bool is_decoder() const;
  int64_t dim() const;
  int64_t max_tokens() const;  // the longest input

  // [seqs][dim()]: pooled as the model says (or `pooling`: a decoder takes only Last), and
  // L2-normalised when asked. wgc::Error naming the input that is empty, too long or holds ids
  // outside the vocabulary.
  std::vector<float> embed(std::span<const std::vector<int32_t>> seqs, bool normalize = true,
                           std::optional<Pooling> pooling = std::nullopt);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace wgc::llm
