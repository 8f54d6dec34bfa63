#include "llm/generate/constrained.h"

#include "llm/model/llama.h"
#include "llm/tokenizer/tokenizer.h"
#include "util/error.h"

#include <algorithm>
#include <limits>

namespace wgc::llm {

std::shared_ptr<const TokenTexts> TokenTexts::of(const Tokenizer& tok) {
  auto t = std::make_shared<TokenTexts>();
  const auto n = int32_t(tok.vocab_size());
  t->pieces.resize(size_t(n));
  t->first.resize(size_t(n));
  // What a token adds after another: the text of (anchor, id) past the anchor's (decoders treat
  // the first token of a text apart: SentencePiece drops its leading space).
  int32_t anchor = -1;
  for (int32_t id = 0; id < n && anchor < 0; ++id)
    if (!tok.is_special(id) && !tok.token(id).empty() && tok.decode_bytes(std::span(&id, 1)) == "a") anchor = id;
  for (int32_t id = 0; id < n && anchor < 0; ++id)
    if (!tok.is_special(id) && !tok.decode_bytes(std::span(&id, 1)).empty()) anchor = id;
  const std::string anchor_text = anchor >= 0 ? tok.decode_bytes(std::span(&anchor, 1)) : "";
  for (int32_t id = 0; id < n; ++id) {
    if (tok.is_special(id) || tok.token(id).empty()) continue;  // never part of constrained text
    t->first[size_t(id)] = tok.decode_bytes(std::span(&id, 1));
    if (anchor < 0) {
      t->pieces[size_t(id)] = t->first[size_t(id)];
      continue;
    }
    const int32_t pair[2] = {anchor, id};
    const std::string both = tok.decode_bytes(pair);
    t->pieces[size_t(id)] = both.starts_with(anchor_text) ? both.substr(anchor_text.size()) : t->first[size_t(id)];
  }
  t->stop_ids = tok.stop_ids();
  t->trie = TokenTrie(t->pieces);
  return t;
}

Constraint::Constraint(std::shared_ptr<const Grammar> g, std::shared_ptr<const TokenTexts> texts)
    : m_(std::move(g)), t_(std::move(texts)) {
  if (!t_) throw Error("wgc: constrained sampling needs the model's tokenizer");
}

bool Constraint::is_stop(int32_t id) const {
  return std::find(t_->stop_ids.begin(), t_->stop_ids.end(), id) != t_->stop_ids.end();
}

bool Constraint::allows(int32_t id) const {
  if (id < 0 || size_t(id) >= t_->pieces.size()) return false;
  if (is_stop(id)) return m_.complete();
  const std::string& s = text(id);
  return !s.empty() && m_.can_accept(s);
}

std::optional<TopK> Constraint::filter(const TopK& c, const SamplePlan& plan) const {
  if (plan.kind == SamplePlan::Full) return std::nullopt;
  TopK kept;
  for (size_t i = 0; i < c.ids.size(); ++i)
    if (allows(c.ids[i])) {
      kept.ids.push_back(c.ids[i]);
      kept.logits.push_back(c.logits[i]);
    }
  // Every token outside the candidates has a lower logit than all of them: the best `k` allowed
  // ones are known once k of the candidates are allowed.
  if (kept.ids.size() < size_t(std::max(1, plan.k))) return std::nullopt;
  return kept;
}

void Constraint::mask(std::vector<float>& logits) const {
  std::vector<uint8_t> ok;
  t_->trie.allowed(m_, ok);
  if (first_)  // the trie holds mid-text pieces: check the first token's own text
    for (size_t id = 0; id < ok.size(); ++id) ok[id] = allows(int32_t(id));
  const bool stop_ok = m_.complete();
  for (int32_t id : t_->stop_ids)
    if (size_t(id) < ok.size()) ok[size_t(id)] = stop_ok;
  bool any = false;
  for (size_t id = 0; id < logits.size(); ++id) {
    if (id >= ok.size() || !ok[id])
      logits[id] = -std::numeric_limits<float>::infinity();
    else
      any = true;
  }
  if (!any) throw Error("wgc: constrained sampling: no token of the vocabulary continues the grammar here");
}

void Constraint::accept(int32_t id) {
  if (!allows(id)) throw Error("wgc: constrained sampling: token " + std::to_string(id) + " does not fit the grammar");
  if (is_stop(id)) return;
  m_.accept(text(id));
  first_ = false;
}

bool Constraint::must_stop() const { return m_.finished(); }

}  // namespace wgc::llm
