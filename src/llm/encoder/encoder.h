// EncoderModel: BERT-family sentence-embedding models (bge, gte, e5, all-MiniLM; RoBERTa with its
// position offset): token + learned position + token-type embeddings and their LayerNorm, then per
// layer bidirectional attention with biases, residual and LayerNorm, GELU MLP with biases, residual
// and LayerNorm; the last hidden states pooled (CLS, mean or last token, as the file says) and
// L2-normalised. ModernBERT instead: token embeddings and a bias-free LayerNorm, pre-norm layers
// with rotary q/k (global and local layers, each with its base; the local ones see the keys at
// most local_attention / 2 away), a GeGLU MLP, and a final norm. nomic-bert: BERT's post-norm
// layers without a position table, a fused Wqkv with rotary q/k, a SwiGLU MLP. Two engines with the same
// interface: the GPU one (existing ops and kernels/encoder/attention.wgsl, several sequences packed
// into one forward pass without padding) and the CPU one (src/cpu's kernels, a thread pool). Checked against
// reference::ForwardRef (f64) and, where tests/data/arch holds them, transformers' outputs.
//
//   ModelFile m = open_model(path, {.any_architecture = true});
//   EncoderModel enc(m, ctx);                       // std::nullopt: the CPU engine
//   std::vector<float> e = enc.embed({tok.encode("hello"), tok.encode("world")});   // [2][dim()]
#pragma once

#include "gpu/context.h"
#include "llm/formats/model_config.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace wgc::llm {

class ModelFile;

struct EncoderOptions {
  int max_batch_tokens = 4096;  // tokens per forward pass (longer lists of inputs take several)
  int threads = 0;              // CPU engine: 0 = hardware threads
  bool progress = true;
};

// Whether EncoderModel runs this config (BERT / RoBERTa / XLM-RoBERTa / ModernBERT / nomic-bert encoders), and
// why not when it does not.
bool encoder_runs(const ModelConfig& c);
std::string encoder_refusal(const ModelConfig& c);

// Pools the hidden states of sequences packed back to back (hidden [sum(lengths)][dim]) into
// [lengths.size()][dim]: the first token, the mean or the last token; L2-normalised when asked.
std::vector<float> pool_hidden(std::span<const float> hidden, std::span<const int64_t> lengths, int64_t dim,
                               Pooling pooling, bool normalize);

class EncoderModel {
 public:
  // Uploads (GPU) or maps (CPU) the weights; wgc::Error naming the file and tensor when one is
  // missing or of a type the engine does not read, or encoder_refusal() when the config is not an
  // encoder this runs.
  EncoderModel(const ModelFile& file, std::optional<Context> ctx, EncoderOptions options = {});
  ~EncoderModel();
  EncoderModel(EncoderModel&&) noexcept;

  const ModelConfig& config() const;
  bool on_gpu() const;
  int64_t dim() const;         // the embedding's length (hidden size)
  int64_t max_tokens() const;  // the longest sequence (learned positions, or the rotary model's)

  // The last hidden states of each sequence, back to back: [sum of lengths][dim()]. Every
  // sequence is checked first (empty, too long, ids outside the vocabulary: wgc::Error naming it).
  std::vector<float> hidden(std::span<const std::vector<int32_t>> seqs);
  // The sentence embeddings [seqs.size()][dim()] (config().pooling unless `pooling` says otherwise;
  // Pooling::None pools the mean), pooled pass by pass (the host holds one pass's hidden states).
  std::vector<float> embed(std::span<const std::vector<int32_t>> seqs, bool normalize = true,
                           std::optional<Pooling> pooling = std::nullopt);

  struct Engine;

 private:
  // Every sequence checked, then whole sequences per forward pass: done(first, last + 1, hidden of
  // those sequences back to back).
  void check(std::span<const std::vector<int32_t>> seqs) const;
  void passes(std::span<const std::vector<int32_t>> seqs,
              const std::function<void(size_t, size_t, std::span<const float>)>& done);

  std::unique_ptr<Engine> e_;
  int max_batch_ = 0;
  int64_t max_tokens_ = 0;
};

}  // namespace wgc::llm
