#include "llm/grammar/matcher.h"

#include "util/error.h"

#include <algorithm>

namespace wgc::llm {

namespace {

// Whether e matches some code point in [lo, hi].
bool matches_some(const GrammarElement& e, uint32_t lo, uint32_t hi) {
  if (!e.negated) {
    for (auto [a, b] : e.ranges)
      if (a <= hi && b >= lo) return true;
    return false;
  }
  // Negated: some point of [lo, hi] outside every range. Walk the ranges that cover from lo.
  uint32_t cur = lo;
  for (bool moved = true; moved && cur <= hi;) {
    moved = false;
    for (auto [a, b] : e.ranges)
      if (a <= cur && b >= cur) {
        if (b >= hi) return false;
        cur = b + 1;
        moved = true;
      }
  }
  return cur <= hi;
}

void dedupe(std::vector<GrammarMatcher::Stack>& v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
}

}  // namespace

GrammarMatcher::GrammarMatcher(std::shared_ptr<const Grammar> g, size_t max_stacks)
    : g_(std::move(g)), max_stacks_(max_stacks) {
  if (!g_ || g_->rules.empty()) throw Error("grammar: no rules");
  const auto& root = g_->rules[g_->root];
  for (uint32_t a = 0; a < root.alternatives.size(); ++a) expand(Stack{{g_->root, a, 0}}, st_.stacks);
  dedupe(st_.stacks);
}

// Follows rule references and finished frames until the top is a character element (or the
// stack is empty: the grammar is complete there), adding each such stack to out. A frame's Pos is
// the next element it matches; a reference moves its frame past itself before the callee is
// pushed, and a frame at its end is popped first (no frame waits on nothing: repetitions, being
// right-recursive, keep stacks flat).
void GrammarMatcher::expand(Stack s, std::vector<Stack>& out) const {
  for (;;) {
    while (!s.empty() && s.back().elem >= g_->rules[s.back().rule].alternatives[s.back().alt].size()) s.pop_back();
    if (s.empty()) {
      out.push_back(s);
      return;
    }
    const GrammarElement& e = g_->rules[s.back().rule].alternatives[s.back().alt][s.back().elem];
    if (e.kind == GrammarElement::Chars) {
      out.push_back(std::move(s));
      if (out.size() > 16 * max_stacks_)
        throw Error("grammar: more than " + std::to_string(max_stacks_) + " parse stacks alive (an ambiguous grammar)");
      return;
    }
    ++s.back().elem;
    while (!s.empty() && s.back().elem >= g_->rules[s.back().rule].alternatives[s.back().alt].size()) s.pop_back();
    const auto& alts = g_->rules[e.rule].alternatives;
    for (uint32_t a = 0; a + 1 < alts.size(); ++a) {
      Stack c = s;
      c.push_back({e.rule, a, 0});
      expand(std::move(c), out);
    }
    s.push_back({e.rule, uint32_t(alts.size() - 1), 0});
  }
}

std::vector<GrammarMatcher::Stack> GrammarMatcher::step(const std::vector<Stack>& stacks, uint32_t cp) const {
  std::vector<Stack> out;
  for (const Stack& s : stacks) {
    if (s.empty()) continue;
    const Pos& top = s.back();
    if (!g_->rules[top.rule].alternatives[top.alt][top.elem].matches(cp)) continue;
    Stack t = s;
    ++t.back().elem;
    expand(std::move(t), out);
  }
  dedupe(out);
  if (out.size() > max_stacks_)
    throw Error("grammar: more than " + std::to_string(max_stacks_) + " parse stacks alive (an ambiguous grammar)");
  return out;
}

GrammarMatcher::State GrammarMatcher::advance(const State& s, std::string_view bytes) const {
  State r = s;
  for (char ch : bytes) {
    const auto b = static_cast<unsigned char>(ch);
    if (r.need == 0) {
      int n = 0;
      if (b < 0x80) {
        r.stacks = step(r.stacks, b);
      } else if ((b >> 5) == 6) {
        n = 1, r.partial = b & 0x1F;
      } else if ((b >> 4) == 14) {
        n = 2, r.partial = b & 0x0F;
      } else if ((b >> 3) == 30) {
        n = 3, r.partial = b & 0x07;
      } else {
        r.stacks.clear();  // not a lead byte
      }
      r.need = n;
    } else if ((b & 0xC0) == 0x80) {
      r.partial = (r.partial << 6) | (b & 0x3F);
      if (--r.need == 0) r.stacks = step(r.stacks, r.partial);
    } else {
      r.stacks.clear();
    }
    if (r.stacks.empty()) return r;
    if (r.need > 0) {
      // Keep only stacks that some completion of the partial character can continue.
      const uint32_t lo = r.partial << (6 * r.need), hi = lo | ((1u << (6 * r.need)) - 1);
      std::erase_if(r.stacks, [&](const Stack& st) {
        return st.empty() ||
               !matches_some(g_->rules[st.back().rule].alternatives[st.back().alt][st.back().elem], lo, hi);
      });
      if (r.stacks.empty()) return r;
    }
  }
  return r;
}

bool GrammarMatcher::advance_byte(const State& s, uint8_t b, State& out) const {
  auto top = [&](const Stack& st) -> const GrammarElement& {
    return g_->rules[st.back().rule].alternatives[st.back().alt][st.back().elem];
  };
  // The stacks that some code point of [lo, hi] continues (the partial character's completions).
  auto keep = [&](uint32_t lo, uint32_t hi) {
    out.stacks.clear();
    for (const Stack& st : s.stacks)
      if (!st.empty() && matches_some(top(st), lo, hi)) out.stacks.push_back(st);
    return !out.stacks.empty();
  };
  // A whole code point: refused without a copy when no top takes it.
  auto whole = [&](uint32_t cp) {
    bool any = false;
    for (const Stack& st : s.stacks)
      if (!st.empty() && top(st).matches(cp)) {
        any = true;
        break;
      }
    if (!any) return false;
    out.stacks = step(s.stacks, cp);
    out.partial = 0;
    out.need = 0;
    return !out.stacks.empty();
  };
  if (s.need == 0) {
    int n = 0;
    uint32_t partial = 0;
    if (b < 0x80) return whole(b);
    if ((b >> 5) == 6)
      n = 1, partial = b & 0x1F;
    else if ((b >> 4) == 14)
      n = 2, partial = b & 0x0F;
    else if ((b >> 3) == 30)
      n = 3, partial = b & 0x07;
    else
      return false;  // not a lead byte
    const uint32_t lo = partial << (6 * n), hi = lo | ((1u << (6 * n)) - 1);
    if (!keep(lo, hi)) return false;
    out.partial = partial;
    out.need = n;
    return true;
  }
  if ((b & 0xC0) != 0x80) return false;
  const uint32_t partial = (s.partial << 6) | (b & 0x3F);
  const int need = s.need - 1;
  if (need == 0) return whole(partial);
  const uint32_t lo = partial << (6 * need), hi = lo | ((1u << (6 * need)) - 1);
  if (!keep(lo, hi)) return false;
  out.partial = partial;
  out.need = need;
  return true;
}

bool GrammarMatcher::can_accept(std::string_view bytes) const { return alive(advance(st_, bytes)); }

bool GrammarMatcher::accept(std::string_view bytes) {
  State r = advance(st_, bytes);
  if (!alive(r)) return false;
  st_ = std::move(r);
  return true;
}

bool GrammarMatcher::complete() const {
  if (st_.need) return false;
  for (const Stack& s : st_.stacks)
    if (s.empty()) return true;
  return false;
}

bool GrammarMatcher::finished() const {
  for (const Stack& s : st_.stacks)
    if (!s.empty()) return false;
  return true;
}

TokenTrie::TokenTrie(const std::vector<std::string>& pieces) : nodes_(1), n_tokens_(pieces.size()) {
  for (size_t id = 0; id < pieces.size(); ++id) {
    if (pieces[id].empty()) continue;
    uint32_t n = 0;
    for (char ch : pieces[id]) {
      const auto b = static_cast<uint8_t>(ch);
      auto& next = nodes_[n].next;
      auto it = std::lower_bound(next.begin(), next.end(), std::make_pair(b, uint32_t(0)),
                                 [](const auto& x, const auto& y) { return x.first < y.first; });
      if (it == next.end() || it->first != b) {
        const auto child = uint32_t(nodes_.size());
        it = next.insert(it, {b, child});
        nodes_.emplace_back();
      }
      n = it->second;
    }
    nodes_[n].ends.push_back(int32_t(id));
  }
}

void TokenTrie::allowed(const GrammarMatcher& m, std::vector<uint8_t>& allowed) const {
  TokenMask bits;
  this->allowed(m, bits);
  allowed.assign(n_tokens_, 0);
  for (size_t id = 0; id < n_tokens_; ++id) allowed[id] = mask_has(bits, id);
}

void TokenTrie::allowed(const GrammarMatcher& m, TokenMask& bits) const {
  bits.assign((n_tokens_ + 63) / 64, 0);
  // Depth-first: at[d] is the state after the node's d bytes (reused, so that a walk allocates
  // about once per depth and per surviving byte, not per node tried).
  struct Frame {
    uint32_t node;
    uint32_t next;  // the child tried next
  };
  std::vector<Frame> path{{0, 0}};
  std::vector<GrammarMatcher::State> at(1, m.state());
  while (!path.empty()) {
    Frame& f = path.back();
    const Node& n = nodes_[f.node];
    if (f.next == n.next.size()) {
      path.pop_back();
      continue;
    }
    const auto [byte, child] = n.next[f.next++];
    const size_t d = path.size();
    if (at.size() <= d) at.resize(d + 1);
    if (!m.advance_byte(at[d - 1], byte, at[d])) continue;  // the whole subtree is refused
    for (int32_t id : nodes_[child].ends) mask_set(bits, size_t(id), true);
    path.push_back({child, 0});
  }
}

}  // namespace wgc::llm
