// Constrained sampling: a grammar (llm/grammar) followed through one generation. The sampler then
// draws only among the tokens whose text keeps the output a prefix of a sentence of the grammar,
// and the end of generation only where it is a whole sentence.
//
// The GPU's top-k candidates (k <= 64) decide a step exactly when enough of them are allowed (the
// best allowed for greedy; k allowed for a top-k sampler: no token outside the candidates can
// beat them); otherwise the step masks the full logits.
#pragma once

#include "llm/generate/sampler.h"
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
  static std::shared_ptr<const TokenTexts> of(const Tokenizer& tok);
};

class Constraint {
 public:
  Constraint(std::shared_ptr<const Grammar> g, std::shared_ptr<const TokenTexts> texts);

  bool allows(int32_t id) const;
  // The candidates (best first) that are allowed, where that decides the step exactly for this
  // plan (Greedy, or TopK of plan.k); nullopt: the step needs mask() on the full logits.
  std::optional<TopK> filter(const TopK& candidates, const SamplePlan& plan) const;
  // -infinity where a token is not allowed.
  void mask(std::vector<float>& logits) const;
  // Takes the generated token (wgc::Error when it is not allowed).
  void accept(int32_t id);
  // The output is a whole sentence and nothing can follow it: generation must end here.
  bool must_stop() const;

 private:
  GrammarMatcher m_;
  std::shared_ptr<const TokenTexts> t_;
  bool first_ = true;
  const std::string& text(int32_t id) const { return first_ ? t_->first[size_t(id)] : t_->pieces[size_t(id)]; }
  bool is_stop(int32_t id) const;
};

}  // namespace wgc::llm
