// Constrained sampling: a grammar (llm/grammar) followed through one generation. The sampler then
// draws only among the tokens whose text keeps the output a prefix of a sentence of the grammar,
// and the end of generation only where it is a whole sentence.
//
// The GPU's top-k candidates (k <= 64) decide a step exactly when enough of them are allowed (the
// best allowed for greedy; k allowed for a top-k sampler: no token outside the candidates can
// beat them); otherwise the step masks the full logits.
//
// A state's mask (a bitset over the vocabulary) is made once by a walk of the token trie and kept
// in the texts' MaskCache, keyed by the grammar's rules and the matcher's state: JSON's
// structural states repeat within an output and across the requests of one schema, so a mask is
// mostly a lookup. prepare() makes the current state's mask ahead of its step (while the GPU runs
// the forward); filter() then reads the candidates' bits too.
#pragma once

#include "llm/generate/sampler.h"
#include "llm/grammar/mask_cache.h"
#include "llm/grammar/matcher.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace wgc::llm {

class Tokenizer;
struct TopK;

// The text each token adds to generated text (after other tokens; special tokens: none), a trie
// over it, and the ids that end a turn. Made once per tokenizer (a pass over the vocabulary).
struct TokenTexts {
  std::vector<std::string> pieces;
  std::vector<std::string> first;  // as the first generated token (SentencePiece drops a leading space)
  std::vector<int32_t> stop_ids;
  TokenTrie trie;
  TokenTrie first_trie;  // over `first` (empty: the first token's mask checks each token alone)
  std::shared_ptr<MaskCache> masks = std::make_shared<MaskCache>();  // shared by its Constraints
  static std::shared_ptr<const TokenTexts> of(const Tokenizer& tok);
};

class Constraint {
 public:
  Constraint(std::shared_ptr<const Grammar> g, std::shared_ptr<const TokenTexts> texts);

  bool allows(int32_t id) const;
  // The candidates (best first) that are allowed, where that decides the step exactly for this
  // plan (Greedy, or TopK of plan.k); nullopt: the step needs mask() on the full logits.
  std::optional<TopK> filter(const TopK& candidates, const SamplePlan& plan) const;
  // -infinity where a token is not allowed (wgc::Error when none is).
  void mask(std::vector<float>& logits) const;
  // The allowed tokens of the current state as bits (stop ids included), from the cache or made
  // (and cached) now; prepare() makes it ahead of need.
  const TokenMask& allowed() const;
  void prepare() const { allowed(); }
  // The current state's mask is known without a walk (made, or in the cache).
  bool ready() const { return cached() != nullptr; }
  // Takes the generated token (wgc::Error when it is not allowed).
  void accept(int32_t id);
  // The output is a whole sentence and nothing can follow it: generation must end here.
  bool must_stop() const;

 private:
  GrammarMatcher m_;
  std::shared_ptr<const TokenTexts> t_;
  uint64_t grammar_id_;
  bool first_ = true;
  mutable std::shared_ptr<const TokenMask> cur_;  // the current state's mask, once looked up
  // The current state's mask when the cache has it (no walk).
  const TokenMask* cached() const;
  std::string key() const { return mask_key(m_.state(), first_ ? 1 : 0); }
  const std::string& text(int32_t id) const { return first_ ? t_->first[size_t(id)] : t_->pieces[size_t(id)]; }
  bool is_stop(int32_t id) const;
};

}  // namespace wgc::llm
