// MaskCache: allowed-token masks by grammar and matcher state. Generation under a grammar comes
// back to the same states again and again (JSON's structure: after `{`, after a value, inside a
// string of so many characters), and requests share grammars (one schema, many requests, each
// parsing its own copy): a state's mask is made once (a walk of the vocabulary's token trie) and
// then looked up. The key is the state itself (its sorted parse stacks and partial character),
// compared whole, so a hit is exact. Bounded in bytes (least recently used out); thread-safe.
//
//   MaskCache cache;
//   const uint64_t g = cache.grammar_id(grammar);          // equal rules: the same id
//   std::string key = mask_key(matcher.state(), flags);
//   if (auto m = cache.find(g, key)) ...; else cache.put(g, key, computed);
#pragma once

#include "llm/grammar/matcher.h"

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace wgc::llm {

class MaskCache {
 public:
  explicit MaskCache(size_t max_bytes = 64u << 20) : max_bytes_(max_bytes) {}

  // An id for the grammar's rules: grammars with the same rules (the same text parsed twice)
  // share it, hence their masks. O(size of the grammar).
  uint64_t grammar_id(const Grammar& g);
  std::shared_ptr<const TokenMask> find(uint64_t grammar, const std::string& key);
  void put(uint64_t grammar, const std::string& key, std::shared_ptr<const TokenMask> mask);

  struct Stats {
    uint64_t hits = 0, misses = 0, entries = 0, bytes = 0;
  };
  Stats stats() const;

 private:
  struct Entry {
    std::string key;  // the grammar id's 8 bytes, then the state's key
    std::shared_ptr<const TokenMask> mask;
  };
  mutable std::mutex mu_;
  size_t max_bytes_, bytes_ = 0;
  std::list<Entry> lru_;                                                    // most recently used first
  std::unordered_map<std::string_view, std::list<Entry>::iterator> index_;  // views of Entry::key
  std::unordered_map<std::string, uint64_t> grammars_;                      // rules -> id
  size_t grammar_bytes_ = 0;
  uint64_t next_grammar_ = 1;
  uint64_t hits_ = 0, misses_ = 0;
};

// The key of a matcher state under `flags` (what else the mask depends on: the first token's
// texts, say): its stacks (sorted and unique, as the matcher keeps them) and partial character.
std::string mask_key(const GrammarMatcher::State& s, uint8_t flags);

}  // namespace wgc::llm
