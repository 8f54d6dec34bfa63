// Perplexity of a model on a text, by llama-perplexity's method (llama.cpp tools/perplexity), so
// that its numbers compare with llama.cpp's across quantizations: the tokens are cut into chunks of
// n_ctx; each chunk is run from an empty cache, its first token replaced by BOS where the
// vocabulary adds one; only the second half of each chunk is scored (positions n_ctx/2 .. n_ctx-2
// predicting the token after them: every scored token has at least n_ctx/2 tokens of context).
// PPL = exp(mean negative log-likelihood) over every scored token of every chunk.
//
//   PerplexityOptions o;  o.n_ctx = 512;  o.bos = tok.bos_id();   // when the tokenizer adds BOS
//   PerplexityResult r = perplexity(model, tok.encode(text), o);  // r.ppl(), r.ppl_error()
#pragma once

#include "llm/model/llama.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

namespace wgc::llm {

struct PerplexityOptions {
  int n_ctx = 512;  // tokens per chunk (the model must hold them: LlamaModel::max_ctx)
  // The first scored position of each chunk (its logits predict the token after it); -1: n_ctx / 2,
  // as llama-perplexity. Scored are first .. n_ctx - 2.
  int first = -1;
  int max_chunks = -1;         // -1: every whole chunk of the text (a partial last one is left out)
  std::optional<int32_t> bos;  // replaces each chunk's first token (llama-perplexity does when BOS is added)
  // Scored positions per LlamaModel::all_logits call: bounds the logits held at once (this times
  // the vocabulary, in floats); never more than the model's max_batch.
  int logits_step = 256;
  const std::atomic<bool>* cancel = nullptr;  // set: stops after the chunk being run
};

// Negative log-likelihood sums over the scored tokens (llama-perplexity's nll and nll2).
struct PerplexityResult {
  int chunks = 0;                   // chunks run
  int total_chunks = 0;             // chunks the text holds (up to max_chunks)
  int64_t scored = 0;               // tokens scored
  double nll = 0, nll2 = 0;         // sum of -log p and of its square
  std::vector<double> running_ppl;  // the estimate after each chunk (llama-perplexity's [i] values)
  double seconds = 0;               // the chunks' time
  bool cancelled = false;

  double ppl() const;  // exp(nll / scored)
  // llama-perplexity's "+/-": ppl times the standard error of the mean -log p (0 with fewer than
  // two scored tokens).
  double ppl_error() const;
};

// Chunks in a text of n_tokens tokens (llama-perplexity: whole chunks only).
int perplexity_chunks(size_t n_tokens, const PerplexityOptions& o);

// Runs the chunks on `model` (its cache is cleared before each one and left holding the last).
// `on_chunk` hears the result so far after each chunk. wgc::Error when the text has fewer than
// n_ctx tokens, n_ctx is under 2 or over the model's context, or `first` is out of [0, n_ctx - 2].
PerplexityResult perplexity(LlamaModel& model, std::span<const int32_t> tokens, const PerplexityOptions& o,
                            const std::function<void(const PerplexityResult&)>& on_chunk = {});

// -log softmax(logits)[target] in double precision (the scored quantity, for references).
double token_nll(std::span<const float> logits, int32_t target);

}  // namespace wgc::llm
