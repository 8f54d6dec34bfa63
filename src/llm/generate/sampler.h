// Sampler: picks the next token from logits, as llama.cpp's default sampler chain does:
//
//   penalties (repeat, presence, frequency over the last N tokens) -> top-k -> top-p -> min-p
//   -> temperature -> draw from the softmax (or argmax when temperature <= 0)
//
// Semantics:
//   - repeat penalty (llama.cpp / Hugging Face): every distinct token among the last N divides its
//     logit by R when positive and multiplies it by R when negative;
//   - presence / frequency penalties (OpenAI, llama.cpp): logit -= presence * (count > 0) +
//     frequency * count, counts over the same last N tokens;
//   - top-k keeps the k best (ties: lower id first); top-p keeps the smallest prefix of the sorted
//     candidates whose probability mass reaches p (at least one); min-p keeps tokens whose
//     probability is at least p times the best one's; probabilities there are the softmax of the
//     (penalized, untempered) logits of the candidates still kept;
//   - temperature divides the logits of what is left; the draw uses std::mt19937_64 with explicit
//     53-bit uniform math, so a seed gives the same tokens with every standard library.
//
// It works on full logits [vocab] or on a candidate set (ids + logits, e.g. LlamaModel::top_k). The
// engine-facing plan() says which is exact for the current history: the GPU argmax, the GPU top-k
// with k <= 64 candidates, or the full logits.
//
//   Sampler s(params);
//   s.accept(prompt_ids);                         // history for the penalties
//   auto plan = s.plan();
//   int32_t id = plan.kind == SamplePlan::Greedy ? model.greedy(tokens)
//              : plan.kind == SamplePlan::TopK   ? s.sample(model.top_k(tokens, plan.k))
//                                                : s.sample(model.logits(tokens));
//   s.accept(id);
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace wgc::llm {

struct TopK;

struct SamplingParams {
  float temperature = 0.8f;        // <= 0: greedy (argmax)
  int top_k = 0;                   // <= 0: off
  float top_p = 1.0f;              // >= 1: off
  float min_p = 0.0f;              // <= 0: off
  float repeat_penalty = 1.0f;     // 1: off
  float presence_penalty = 0.0f;   // 0: off
  float frequency_penalty = 0.0f;  // 0: off
  int penalty_last_n = 64;         // tokens the penalties look back over; -1: all; 0: penalties off
  uint64_t seed = 0;

  bool greedy() const { return temperature <= 0.0f; }
  bool has_penalties() const;
  // Every penalty only lowers logits (R >= 1, presence >= 0, frequency >= 0).
  bool penalties_only_lower() const;
  // "temp 0.80, top-k 40, top-p 0.95, ..." (what is on).
  std::string describe() const;
};

// Throws wgc::OptionError naming the first field out of range: a value that is NaN or infinite,
// top_p outside (0, 1], min_p outside [0, 1], repeat_penalty <= 0, penalty_last_n < -1. Every
// front end (CLI, server, bindings) checks requests with it before sampling.
void validate(const SamplingParams& p);

// How the next token can be picked exactly with what the engine offers.
struct SamplePlan {
  enum Kind { Greedy, TopK, Full } kind = Full;
  int k = 0;  // candidates for TopK
};

class Sampler {
 public:
  explicit Sampler(SamplingParams p = {});

  const SamplingParams& params() const { return p_; }

  // History: tokens already in the context (prompt and generated), for the penalties.
  void accept(int32_t id);
  void accept(std::span<const int32_t> ids);
  void reset();  // forgets the history and re-seeds the random generator
  const std::vector<int32_t>& history() const { return history_; }

  // Greedy: temperature <= 0 and no penalties. TopK: a candidate set of k <= 64 from the GPU holds
  // every token the chain could keep (top_k in 1..64, widened by the number of distinct penalized
  // tokens when penalties only lower logits). Full: everything else.
  SamplePlan plan() const;

  // The next token from full logits [vocab].
  int32_t sample(std::span<const float> logits);
  // The next token from a candidate set (ids with their logits, any order).
  int32_t sample(std::span<const int32_t> ids, std::span<const float> logits);
  int32_t sample(const TopK& candidates);

  // The chain without the draw: the candidates left (descending by penalized logit, ties by id)
  // and their final probabilities. For tests and for --verbose output.
  struct Candidate {
    int32_t id;
    float logit;  // after penalties
    double p;     // after every filter and the temperature
  };
  std::vector<Candidate> candidates(std::span<const int32_t> ids, std::span<const float> logits) const;
  std::vector<Candidate> candidates(std::span<const float> logits) const;

  // Uniform in [0, 1) from the seeded generator: the top 53 bits of one mt19937_64 draw.
  double uniform();

 private:
  std::unordered_map<int32_t, int> window_counts() const;
  std::vector<Candidate> chain(std::vector<Candidate> c) const;
  int32_t draw(const std::vector<Candidate>& c);

  SamplingParams p_;
  std::vector<int32_t> history_;
  std::mt19937_64 rng_;
};

}  // namespace wgc::llm
