// A float64 forward pass of every architecture ModelConfig describes (Llama, Mistral with its window,
// Qwen2/3, Gemma 2/3, Phi-3, Mixtral, Qwen2/3-MoE, OLMoE, BERT/RoBERTa encoders, decoder embedding
// models), read straight from a ModelFile by tensor role (tensor_names.h). Plain loops, no GPU, no
// cache: the truth the engines are checked against on awkward shapes, itself checked against
// transformers on tests/data/arch. For small models only (the weights are held as f64).
//
//   ModelFile m = open_model(path, {.any_architecture = true});
//   reference::ForwardRef ref(m);
//   std::vector<double> logits = ref.logits(tokens);   // [tokens.size()][vocab]
//   std::vector<double> e = ref.embedding(tokens);     // pooled, L2-normalised (embedding models)
#pragma once

#include "llm/formats/model_config.h"

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace wgc::llm {
class ModelFile;
}

namespace wgc::llm::reference {

struct RefOptions {
  // Rope angles as transformers computes them: f32(f32(inv_freq) * f32(pos)), cos/sin of that (it keeps
  // rope in float32 even for a float64 model); false: all in f64.
  bool f32_rope_angles = true;
  // LongRoPE picks its factors by this length (transformers: the sequence's length; llama.cpp: the
  // context size); 0: the length of each forward pass.
  int64_t longrope_length = 0;
  // Refuse models with more weights than this (they are held as f64).
  int64_t max_params = int64_t(1) << 26;
};

class ForwardRef {
 public:
  // Reads (dequantizes) every weight the config needs; wgc::Error naming the tensor when one is
  // missing or misshapen.
  explicit ForwardRef(const ModelFile& file, RefOptions options = {});
  ~ForwardRef();
  ForwardRef(ForwardRef&&) noexcept;

  const ModelConfig& config() const;

  // The last hidden states [tokens][hidden] of one pass over `tokens` at positions 0..n-1: after
  // the final norm (decoders), after the last layer (encoders). `layers`, when given, receives the
  // input of each layer and the final result ([n_layers + 1][tokens][hidden]).
  std::vector<double> hidden(std::span<const int32_t> tokens, std::vector<std::vector<double>>* layers = nullptr) const;
  // Logits [tokens][vocab] of a language model (the final soft-cap applied).
  std::vector<double> logits(std::span<const int32_t> tokens) const;
  // The pooled, L2-normalised sentence embedding of an embedding model (config().pooling).
  std::vector<double> embedding(std::span<const int32_t> tokens) const;
  // n greedy tokens after `prompt`, each step a whole pass over the sequence so far.
  std::vector<int32_t> greedy(std::span<const int32_t> prompt, int n) const;

 private:
  struct Weights;
  std::unique_ptr<Weights> w_;
  RefOptions opt_;
};

// The pieces, for tests of their own.
double silu(double x);
double gelu_tanh(double x);            // the tanh approximation (gelu_pytorch_tanh)
double gelu(double x);                 // exact (erf)
double softcap(double x, double cap);  // cap * tanh(x / cap); x when cap == 0

}  // namespace wgc::llm::reference
