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
// Sampling with temperature > 0 is not done here (GenerateOptions with a draft refuses it): the
// Leviathan et al. acceptance rule (accept with min(1, p/q), resample from max(0, p - q)) would
// need the draft's full distributions, which its greedy decode does not read back.
#pragma once

#include "llm/model/llama.h"
#include "llm/tokenizer/tokenizer.h"

#include <cstdint>
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
  // The draft's cache brought to hold `context` (e.g. the prompt before the first round), so that
  // the rounds run only new tokens on it.
  void prime(std::span<const int32_t> context);

 private:
  // Up to k draft tokens after cached + next.
  std::vector<int32_t> propose(std::span<const int32_t> cached, int32_t next, int k);
  // The draft's cache rewound to the longest prefix it shares with cached + next, but not all of
  // it; returns the tokens of cached + next it still has to run (at least `next`).
  std::vector<int32_t> sync(std::span<const int32_t> cached, int32_t next);

  LlamaModel& draft_;
  SpeculativeOptions o_;
  SpeculativeStats stats_;
  std::vector<int32_t> draft_cached_;  // the tokens in the draft's cache
  std::mt19937_64 rng_;
};

}  // namespace wgc::llm
