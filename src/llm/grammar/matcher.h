// GrammarMatcher: where generated text stands in a grammar (grammar.h), as the set of parse
// stacks that are still alive, advanced one UTF-8 byte sequence at a time. A token is allowed
// when its bytes keep some stack alive; the end of generation is allowed where the grammar is
// complete. Tokens may end inside a multi-byte character: the partial character is carried.
//
//   GrammarMatcher m(std::make_shared<Grammar>(parse_grammar(text)));
//   if (m.can_accept(piece)) m.accept(piece);
//   bool may_stop = m.complete();
//
// For masks over a whole vocabulary, TokenTrie walks the tokens' shared prefixes once (and
// mask_cache.h keeps the masks by state, since generation comes back to the same states).
#pragma once

#include "llm/grammar/grammar.h"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace wgc::llm {

class GrammarMatcher {
 public:
  // max_stacks bounds the ambiguity a grammar may build up (an error names it when passed).
  explicit GrammarMatcher(std::shared_ptr<const Grammar> g, size_t max_stacks = 4096);

  // Whether bytes can follow the text so far; accept() takes them (false and no change when not).
  bool can_accept(std::string_view bytes) const;
  bool accept(std::string_view bytes);
  // The text so far is a whole sentence of the grammar (generation may end here).
  bool complete() const;
  // Nothing can follow: only the end (complete()) or a dead end.
  bool finished() const;

  // A stack position: element `elem` of alternative `alt` of rule `rule`.
  struct Pos {
    uint32_t rule, alt, elem;
    auto operator<=>(const Pos&) const = default;
  };
  using Stack = std::vector<Pos>;
  // The matcher's state (stacks whose tops are character elements, an empty stack: complete) and
  // a partial UTF-8 character; copied by value for look-ahead (TokenTrie).
  struct State {
    std::vector<Stack> stacks;
    uint32_t partial = 0;  // the code point's bits so far
    int need = 0;          // continuation bytes still missing
  };
  const State& state() const { return st_; }
  // The state after bytes (stacks empty: rejected).
  State advance(const State& s, std::string_view bytes) const;
  static bool alive(const State& s) { return !s.stacks.empty(); }
  // advance() by one byte into `out` (false, `out` then unspecified, where nothing takes it):
  // the trie walk's step, which refuses a byte before it copies anything.
  bool advance_byte(const State& s, uint8_t b, State& out) const;

 private:
  std::shared_ptr<const Grammar> g_;
  size_t max_stacks_;
  State st_;

  void expand(Stack s, std::vector<Stack>& out) const;
  std::vector<Stack> step(const std::vector<Stack>& stacks, uint32_t cp) const;
};

// Allowed tokens as bits: token id is allowed where bit id % 64 of word id / 64 is set.
using TokenMask = std::vector<uint64_t>;
inline bool mask_has(const TokenMask& m, size_t id) { return (m[id >> 6] >> (id & 63)) & 1; }
inline void mask_set(TokenMask& m, size_t id, bool on) {
  const uint64_t bit = uint64_t(1) << (id & 63);
  m[id >> 6] = on ? m[id >> 6] | bit : m[id >> 6] & ~bit;
}

// A vocabulary's token byte strings as a trie, for allowed-token masks.
class TokenTrie {
 public:
  // pieces[id]: the bytes token id appends to the text ("" for tokens that never match: special
  // tokens, which the caller allows or not itself).
  TokenTrie() = default;
  explicit TokenTrie(const std::vector<std::string>& pieces);
  // allowed[id] = 1 where m.can_accept(pieces[id]); one walk over the shared prefixes, a subtree
  // left as soon as its prefix is refused.
  void allowed(const GrammarMatcher& m, std::vector<uint8_t>& allowed) const;
  void allowed(const GrammarMatcher& m, TokenMask& bits) const;
  size_t size() const { return n_tokens_; }

 private:
  struct Node {
    std::vector<std::pair<uint8_t, uint32_t>> next;  // byte -> node, sorted
    std::vector<int32_t> ends;                       // tokens whose bytes end here
  };
  std::vector<Node> nodes_ = std::vector<Node>(1);
  size_t n_tokens_ = 0;
};

}  // namespace wgc::llm
