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
  if (t->first != t->pieces) t->first_trie = TokenTrie(t->first);
  return t;
}

Constraint::Constraint(std::shared_ptr<const Grammar> g, std::shared_ptr<const TokenTexts> texts)
    : m_(g), t_(std::move(texts)) {
  if (!t_) throw Error("wgc: constrained sampling needs the model's tokenizer");
  grammar_id_ = t_->masks->grammar_id(*g);
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
  const TokenMask* bits = cached();
  TopK kept;
  for (size_t i = 0; i < c.ids.size(); ++i) {
    const int32_t id = c.ids[i];
    if (bits ? id >= 0 && size_t(id) < t_->pieces.size() && mask_has(*bits, size_t(id)) : allows(id)) {
      kept.ids.push_back(id);
      kept.logits.push_back(c.logits[i]);
    }
  }
  // Every token outside the candidates has a lower logit than all of them: the best `k` allowed
  // ones are known once k of the candidates are allowed.
  if (kept.ids.size() < size_t(std::max(1, plan.k))) return std::nullopt;
  return kept;
}

const TokenMask* Constraint::cached() const {
  if (!cur_) cur_ = t_->masks->find(grammar_id_, key());
  return cur_.get();
}

const TokenMask& Constraint::allowed() const {
  if (cached()) return *cur_;
  auto bits = std::make_shared<TokenMask>();
  const size_t n = t_->pieces.size();
  if (!first_) {
    t_->trie.allowed(m_, *bits);
  } else if (t_->first_trie.size() == n) {
    t_->first_trie.allowed(m_, *bits);
  } else if (t_->first == t_->pieces) {
    t_->trie.allowed(m_, *bits);
  } else {  // no trie over the first texts: each token alone
    bits->assign((n + 63) / 64, 0);
    for (size_t id = 0; id < n; ++id) {
      const std::string& s = t_->first[id];
      mask_set(*bits, id, !s.empty() && m_.can_accept(s));
    }
  }
  bits->resize((n + 63) / 64, 0);
  const bool stop_ok = m_.complete();
  for (int32_t id : t_->stop_ids)
    if (id >= 0 && size_t(id) < n) mask_set(*bits, size_t(id), stop_ok);
  t_->masks->put(grammar_id_, key(), bits);
  cur_ = std::move(bits);
  return *cur_;
}

void Constraint::mask(std::vector<float>& logits) const {
  const TokenMask& bits = allowed();
  const size_t n = std::min(logits.size(), t_->pieces.size());
  bool any = false;
  for (size_t w = 0; w * 64 < n; ++w) {
    const uint64_t word = bits[w];
    if (word == ~uint64_t(0) && w * 64 + 64 <= n) {  // all allowed: nothing to clear
      any = true;
      continue;
    }
    for (size_t id = w * 64; id < std::min(n, w * 64 + 64); ++id) {
      if ((word >> (id & 63)) & 1)
        any = true;
      else
        logits[id] = -std::numeric_limits<float>::infinity();
    }
  }
  for (size_t id = n; id < logits.size(); ++id) logits[id] = -std::numeric_limits<float>::infinity();
  if (!any) throw Error("wgc: constrained sampling: no token of the vocabulary continues the grammar here");
}

void Constraint::accept(int32_t id) {
  const bool in = id >= 0 && size_t(id) < t_->pieces.size();
  if (in && is_stop(id) && m_.complete()) return;
  // accept() checks and takes the text in one pass (nothing changes when it does not fit).
  if (!in || is_stop(id) || text(id).empty() || !m_.accept(text(id)))
    throw Error("wgc: constrained sampling: token " + std::to_string(id) + " does not fit the grammar");
  first_ = false;
  cur_.reset();
}

bool Constraint::must_stop() const { return m_.finished(); }

}  // namespace wgc::llm
