#include "llm/generate/perplexity.h"

#include "util/error.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>

namespace wgc::llm {

double PerplexityResult::ppl() const { return scored > 0 ? std::exp(nll / double(scored)) : 0.0; }

double PerplexityResult::ppl_error() const {
  if (scored < 2) return 0.0;
  const double n = double(scored), mean = nll / n, var = nll2 / n - mean * mean;
  return var > 0 ? std::sqrt(var / (n - 1)) * ppl() : 0.0;
}

int perplexity_chunks(size_t n_tokens, const PerplexityOptions& o) {
  if (o.n_ctx < 2) return 0;
  size_t n = n_tokens / size_t(o.n_ctx);
  if (o.max_chunks >= 0) n = std::min(n, size_t(o.max_chunks));
  return int(std::min<size_t>(n, size_t(INT32_MAX)));
}

double token_nll(std::span<const float> logits, int32_t target) {
  if (target < 0 || size_t(target) >= logits.size())
    throw Error("wgc: perplexity: token " + std::to_string(target) + " is outside the model's " +
                std::to_string(logits.size()) + "-entry vocabulary");
  double mx = -INFINITY;
  for (float v : logits) mx = std::max(mx, double(v));
  double sum = 0;
  for (float v : logits) sum += std::exp(double(v) - mx);
  return std::log(sum) + mx - double(logits[size_t(target)]);
}

PerplexityResult perplexity(LlamaModel& model, std::span<const int32_t> tokens, const PerplexityOptions& o,
                            const std::function<void(const PerplexityResult&)>& on_chunk) {
  const int n_ctx = o.n_ctx;
  if (n_ctx < 2) throw Error("wgc: perplexity: the context must hold at least 2 tokens, got " + std::to_string(n_ctx));
  if (n_ctx > model.max_ctx())
    throw Error("wgc: perplexity: chunks of " + std::to_string(n_ctx) + " tokens do not fit the model's " +
                std::to_string(model.max_ctx()) + "-token cache");
  const int first = o.first < 0 ? n_ctx / 2 : o.first;
  if (first > n_ctx - 2)
    throw Error("wgc: perplexity: the first scored position " + std::to_string(first) + " leaves nothing to score in " +
                std::to_string(n_ctx) + "-token chunks");
  if (tokens.size() < size_t(n_ctx))
    throw Error("wgc: perplexity: the text has " + std::to_string(tokens.size()) + " tokens, fewer than one chunk of " +
                std::to_string(n_ctx) + " (give a longer text or a smaller context)");
  const int64_t vocab = model.config().vocab_size;
  const int step = std::max(1, std::min(o.logits_step, model.max_batch()));

  PerplexityResult r;
  r.total_chunks = perplexity_chunks(tokens.size(), o);
  std::vector<int32_t> chunk(static_cast<size_t>(n_ctx));
  for (int c = 0; c < r.total_chunks; ++c) {
    if (o.cancel && o.cancel->load()) {
      r.cancelled = true;
      break;
    }
    const auto t0 = std::chrono::steady_clock::now();
    auto src = tokens.subspan(size_t(c) * size_t(n_ctx), size_t(n_ctx));
    std::copy(src.begin(), src.end(), chunk.begin());
    if (o.bos) chunk[0] = *o.bos;
    model.rewind(0);
    if (first > 0) model.prefill(std::span(chunk).first(size_t(first)));
    // Positions first .. n_ctx - 2: their logits score the tokens after them; the chunk's last
    // token is never run (nothing after it is scored).
    for (int p = first; p < n_ctx - 1; p += step) {
      const int n = std::min(step, n_ctx - 1 - p);
      std::vector<float> logits = model.all_logits(std::span(chunk).subspan(size_t(p), size_t(n)));
      for (int j = 0; j < n; ++j) {
        const double l =
            token_nll(std::span(logits).subspan(size_t(j) * size_t(vocab), size_t(vocab)), chunk[size_t(p + j + 1)]);
        r.nll += l;
        r.nll2 += l * l;
        ++r.scored;
      }
    }
    r.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ++r.chunks;
    r.running_ppl.push_back(r.ppl());
    if (on_chunk) on_chunk(r);
  }
  return r;
}

}  // namespace wgc::llm
