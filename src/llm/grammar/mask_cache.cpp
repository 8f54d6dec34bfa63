#include "llm/grammar/mask_cache.h"

#include <cstring>

namespace wgc::llm {

namespace {

constexpr size_t kMaxGrammarBytes = 16u << 20;  // of the grammars' fingerprints kept for ids
constexpr size_t kEntryOverhead = 128;          // bytes an entry costs beside its key and mask

void put_u32(std::string& s, uint32_t v) { s.append(reinterpret_cast<const char*>(&v), sizeof v); }

// The rules, written out whole: equal strings, equal grammars.
std::string fingerprint(const Grammar& g) {
  std::string s;
  put_u32(s, g.root);
  put_u32(s, uint32_t(g.rules.size()));
  for (const GrammarRule& r : g.rules) {
    put_u32(s, uint32_t(r.alternatives.size()));
    for (const auto& alt : r.alternatives) {
      put_u32(s, uint32_t(alt.size()));
      for (const GrammarElement& e : alt) {
        put_u32(s, uint32_t(e.kind) | (e.negated ? 2u : 0u));
        if (e.kind == GrammarElement::Rule) {
          put_u32(s, e.rule);
          continue;
        }
        put_u32(s, uint32_t(e.ranges.size()));
        for (auto [lo, hi] : e.ranges) put_u32(s, lo), put_u32(s, hi);
      }
    }
  }
  return s;
}

}  // namespace

std::string mask_key(const GrammarMatcher::State& st, uint8_t flags) {
  std::string s;
  size_t n = 0;
  for (const auto& stack : st.stacks) n += 1 + 3 * stack.size();
  s.reserve(4 * (n + 3));
  put_u32(s, flags);
  put_u32(s, st.partial);
  put_u32(s, uint32_t(st.need));
  for (const auto& stack : st.stacks) {
    put_u32(s, uint32_t(stack.size()));
    for (const auto& p : stack) put_u32(s, p.rule), put_u32(s, p.alt), put_u32(s, p.elem);
  }
  return s;
}

uint64_t MaskCache::grammar_id(const Grammar& g) {
  std::string f = fingerprint(g);
  std::lock_guard lk(mu_);
  if (auto it = grammars_.find(f); it != grammars_.end()) return it->second;
  // Forgetting the ids drops nothing wrong: a grammar seen again gets a new id, and its old
  // entries age out of the LRU.
  if (grammar_bytes_ + f.size() > kMaxGrammarBytes) grammars_.clear(), grammar_bytes_ = 0;
  grammar_bytes_ += f.size();
  const uint64_t id = next_grammar_++;
  grammars_.emplace(std::move(f), id);
  return id;
}

std::shared_ptr<const TokenMask> MaskCache::find(uint64_t grammar, const std::string& key) {
  std::string k(reinterpret_cast<const char*>(&grammar), sizeof grammar);
  k += key;
  std::lock_guard lk(mu_);
  auto it = index_.find(std::string_view(k));
  if (it == index_.end()) {
    ++misses_;
    return nullptr;
  }
  ++hits_;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->mask;
}

void MaskCache::put(uint64_t grammar, const std::string& key, std::shared_ptr<const TokenMask> mask) {
  std::string k(reinterpret_cast<const char*>(&grammar), sizeof grammar);
  k += key;
  const size_t cost = k.size() + mask->size() * sizeof(uint64_t) + kEntryOverhead;
  if (cost > max_bytes_ / 4) return;  // one state may not push out most of the others
  std::lock_guard lk(mu_);
  if (index_.count(std::string_view(k))) return;  // another thread made it meanwhile
  lru_.push_front({std::move(k), std::move(mask)});
  index_.emplace(std::string_view(lru_.front().key), lru_.begin());
  bytes_ += cost;
  while (bytes_ > max_bytes_ && !lru_.empty()) {
    const Entry& e = lru_.back();
    bytes_ -= e.key.size() + e.mask->size() * sizeof(uint64_t) + kEntryOverhead;
    index_.erase(std::string_view(e.key));
    lru_.pop_back();
  }
}

MaskCache::Stats MaskCache::stats() const {
  std::lock_guard lk(mu_);
  return {hits_, misses_, uint64_t(lru_.size()), uint64_t(bytes_)};
}

}  // namespace wgc::llm
