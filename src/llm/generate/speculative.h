// Speculative decoding (greedy): a small draft model of the same tokenizer proposes k tokens one
// step at a time, the target model runs its last token and the k proposals in ONE forward pass
// (LlamaModel::greedy_all) and keeps the longest prefix of proposals that equal its own argmax at
// each position, plus its own next token. Both caches are rewound to what was kept, so the output
// is the target's greedy output token for token (up to near-ties that the many-token kernels round
// otherwise than the one-token ones), in fewer target passes when the draft agrees often.
//
//   SpeculativeDecoder spec(draft, {.draft_tokens = 5});
//   // target.n_past() == cached.size(); `next` is the token after them, in neither cache yet
//   std::vector<int32_t> out = spec.step(target, cached, next, 5);  // 1 .. 6 tokens
//
// Sampling (temperature > 0, no penalties): step_sampled draws each proposal from the draft's
// distribution q (the Sampler's chain: top-k, top-p, min-p, temperature) and keeps it by the
// speculative sampling rule (Leviathan et al. 2023; Chen et al. 2023): with probability
// min(1, p/q), p the target's distribution through the same chain; at the first one not kept the
// token is drawn from max(0, p - q) renormalised, and after k kept ones from p. The tokens are
// then distributed as sampling the target alone (not the same tokens for a seed).
#pragma once

#include "llm/generate/sampler.h"
#include "llm/model/llama.h"
#include "llm/tokenizer/tokenizer.h"

#include <cstdint>
#include <functional>
#include <random>
#include <span>
#include <string>
#include <vector>

namespace wgc::llm {

inline constexpr int kMaxDraftTokens = 32;  // proposals per step (the verify pass runs k + 1 tokens)

struct SpeculativeOptions {
  int draft_tokens = 5;  // proposals per step, 1 .. kMaxDraftTokens
  // For benchmarks only (< 0: off): each proposal is kept with this probability (seeded, in a run
  // that stops at the first one not kept) instead of by comparing with the target's argmax, so the
  // cost of a chosen acceptance rate can be measured with random-weight models. The output is then
  // NOT the target's greedy output.
  double forced_acceptance = -1;
  uint64_t seed = 1;  // of forced_acceptance's draws
};
// Throws wgc::OptionError naming draft_tokens or forced_acceptance when out of range.
void validate(const SpeculativeOptions& o);

// What speculative decoding did.
struct SpeculativeStats {
  int steps = 0;     // target verification passes
  int proposed = 0;  // draft tokens proposed
  int accepted = 0;  // of them kept
  double draft_ms = 0, verify_ms = 0;
  double acceptance() const { return proposed ? double(accepted) / proposed : 0; }
};

// wgc::Error unless `draft` can propose tokens for `target`: the same vocabulary size and, where
// both have a tokenizer, the same tokenizer (every id's token text and the special ids).
void check_draft(const ModelConfig& target, const Tokenizer* target_tok, const ModelConfig& draft,
                 const Tokenizer* draft_tok, const std::string& draft_name);

// The speculative sampling rule for one round: draft[i] was drawn from q[i]; p has a row more
// (the target's distribution after each proposal and after the last). Rows are dense over the
// vocabulary. `uniform` gives numbers in [0, 1). Returns how many proposals are kept and the token
// after them.
struct SampledRound {
  size_t kept = 0;
  int32_t next = -1;
};
SampledRound speculative_sample(std::span<const std::vector<double>> p, std::span<const std::vector<double>> q,
                                std::span<const int32_t> draft, const std::function<double()>& uniform);
// The same over the Sampler's chains (Sampler::candidates: the ids it keeps, with their
// probabilities), as the serving scheduler has them: the rule on the union of their ids, outside
// which p and q are 0 (the same draws as the dense rows with the same numbers).
SampledRound speculative_sample(std::span<const std::vector<Sampler::Candidate>> p,
                                std::span<const std::vector<Sampler::Candidate>> q, std::span<const int32_t> draft,
                                const std::function<double()>& uniform);

class SpeculativeDecoder {
 public:
  SpeculativeDecoder(LlamaModel& draft, SpeculativeOptions o);

  LlamaModel& draft() { return draft_; }
  const SpeculativeOptions& options() const { return o_; }
  const SpeculativeStats& stats() const { return stats_; }
  void reset_stats() { stats_ = {}; }

  // One round. target.n_past() must equal cached.size() (the tokens in its cache); `next` follows
  // them and is in neither cache. Proposes up to k tokens (fewer where either context would
  // overflow; none for k = 0), verifies them in one target pass and leaves the target's cache
  // holding cached + next + the kept proposals. Returns the kept proposals and then the target's
  // own next token (which is in neither cache): 1 .. k + 1 tokens.
  std::vector<int32_t> step(LlamaModel& target, std::span<const int32_t> cached, int32_t next, int k);
  // The same under sampling (s: temperature > 0 and no penalties, else wgc::OptionError): the
  // proposals drawn from the draft's distributions, kept by speculative_sample with s's random
  // numbers.
  std::vector<int32_t> step_sampled(LlamaModel& target, std::span<const int32_t> cached, int32_t next, int k,
                                    Sampler& s);
  // The draft's cache brought to hold `context` (e.g. the prompt before the first round), so that
  // the rounds run only new tokens on it.
  void prime(std::span<const int32_t> context);

 private:
  // Up to k draft tokens after cached + next.
  std::vector<int32_t> propose(std::span<const int32_t> cached, int32_t next, int k);
  // The draft's cache rewound to the longest prefix it shares with cached + next, but not all of
  // it; returns the tokens of cached + next it still has to run (at least `next`).
  std::vector<int32_t> sync(std::span<const int32_t> cached, int32_t next);
  // k bounded by the round's limits (kMaxDraftTokens, both contexts).
  int round_size(const LlamaModel& target, size_t cached, int k) const;

  LlamaModel& draft_;
  SpeculativeOptions o_;
  SpeculativeStats stats_;
  std::vector<int32_t> draft_cached_;  // the tokens in the draft's cache
  std::mt19937_64 rng_;
};

}  // namespace wgc::llm
