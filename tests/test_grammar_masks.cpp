// Constrained sampling's fast path (llm/generate/constrained.h: the token trie's walk with
// GrammarMatcher::advance_byte, masks as bitsets kept in the MaskCache by grammar and state)
// against the plain matcher: at random states of several grammars (JSON schemas, any JSON
// object, UTF-8 classes), over a random vocabulary whose tokens split multi-byte characters, every
// token's bit equals GrammarMatcher::can_accept of its text (the stop token: complete()), whether
// the mask was walked or came from the cache (a small cache too, so that entries are evicted), and
// mask() and filter() agree with it.
#include "llm/generate/constrained.h"
#include "llm/grammar/json_schema.h"
#include "llm/grammar/mask_cache.h"
#include "llm/model/llama.h"
#include "util/error.h"
#include "util/json.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

using namespace wgc;
using namespace wgc::llm;

namespace {

constexpr int32_t kStop = 5;  // the vocabulary's end-of-turn token (no text)

// Random tokens over JSON's characters, escapes, a 2-byte and a 3-byte character (whole and split
// into their bytes); a few empty ones (special tokens). `first` drops a leading space, as
// SentencePiece does for a text's first token.
std::shared_ptr<TokenTexts> random_texts(std::mt19937& rng, size_t n, size_t cache_bytes) {
  const std::vector<std::string> atoms = {
      "{",    "}",    "[",    "]",    "\"",    ":",    ",",        " ",      "\n",   "\t",
      "0",    "1",    "7",    "-",    ".",     "e",    "E",        "+",      "a",    "b",
      "c",    "d",    "g",    "i",    "o",     "t",    "r",        "u",      "f",    "l",
      "s",    "n",    "\\",   "x",    "A",     "9",    "\xC3\xA9", "\xC3",   "\xA9", "\xE2\x82\xAC",
      "\xE2", "\x82", "\xAC", "true", "false", "null", "\": ",     "\", \"", "name", "tags"};
  auto t = std::make_shared<TokenTexts>();
  t->pieces.resize(n);
  for (size_t id = 0; id < n; ++id) {
    if (id < 8) continue;  // specials, kStop among them
    std::string s;
    const int parts = 1 + int(rng() % 4);
    for (int k = 0; k < parts; ++k) s += atoms[rng() % atoms.size()];
    t->pieces[id] = s;
  }
  t->first = t->pieces;
  for (auto& s : t->first)
    if (s.size() > 1 && s[0] == ' ') s.erase(0, 1);
  t->stop_ids = {kStop};
  t->trie = TokenTrie(t->pieces);
  t->first_trie = TokenTrie(t->first);
  t->masks = std::make_shared<MaskCache>(cache_bytes);
  return t;
}

// The plain matcher's answer for every token at its state.
std::vector<bool> reference(const GrammarMatcher& m, const TokenTexts& t, bool first) {
  std::vector<bool> ok(t.pieces.size());
  for (size_t id = 0; id < ok.size(); ++id) {
    const std::string& s = first ? t.first[id] : t.pieces[id];
    ok[id] = id == size_t(kStop) ? m.complete() : !s.empty() && m.can_accept(s);
  }
  return ok;
}

// Random walks through the grammar: at each state the fast path's mask, mask() and filter() are
// checked against the reference, then a random allowed token is taken by both.
void check_walks(const std::string& grammar_text, const std::shared_ptr<TokenTexts>& t, std::mt19937& rng, int walks,
                 int steps) {
  SCOPED_TRACE(grammar_text.substr(0, 200));
  for (int w = 0; w < walks; ++w) {
    // Each walk parses its own copy: the cache is shared through the rules, not the object.
    auto g = std::make_shared<Grammar>(parse_grammar(grammar_text));
    Constraint c(g, t);
    GrammarMatcher ref(g);
    bool first = true;
    std::string text;
    for (int step = 0; step < steps; ++step) {
      const std::vector<bool> want = reference(ref, *t, first);
      // Candidates before the mask is known (the per-token path), then after (the bits).
      TopK cand;
      for (int k = 0; k < 64; ++k) {
        cand.ids.push_back(int32_t(rng() % t->pieces.size()));
        cand.logits.push_back(-float(k));
      }
      const SamplePlan plan{SamplePlan::TopK, 1 + int(rng() % 3)};
      const std::optional<TopK> before = c.filter(cand, plan);
      const TokenMask& bits = c.allowed();
      size_t n_ok = 0;
      for (size_t id = 0; id < want.size(); ++id) {
        ASSERT_EQ(mask_has(bits, id), want[id])
            << "after '" << text << "' token " << id << " '" << (first ? t->first[id] : t->pieces[id]) << "'";
        n_ok += want[id];
      }
      const std::optional<TopK> after = c.filter(cand, plan);
      std::vector<int32_t> kept;
      for (int32_t id : cand.ids)
        if (want[size_t(id)]) kept.push_back(id);
      for (const auto* f : {&before, &after}) {
        ASSERT_EQ(f->has_value(), kept.size() >= size_t(plan.k));
        if (*f) {
          EXPECT_EQ((*f)->ids, kept);
        }
      }
      std::vector<float> logits(want.size() + 3, 1.f);  // longer than the vocabulary: the rest masked
      if (n_ok == 0) {                                  // a dead end of this vocabulary: an error, and the walk ends
        EXPECT_THROW(c.mask(logits), Error);
        break;
      }
      c.mask(logits);
      for (size_t id = 0; id < logits.size(); ++id)
        ASSERT_EQ(std::isinf(logits[id]), id >= want.size() || !want[id]) << id;
      if (want[size_t(kStop)] && rng() % 8 == 0) break;
      // Tokens that are not the stop token, when there are some.
      std::vector<int32_t> ids;
      for (size_t id = 0; id < want.size(); ++id)
        if (want[id] && id != size_t(kStop)) ids.push_back(int32_t(id));
      if (ids.empty()) break;
      const int32_t id = ids[rng() % ids.size()];
      const std::string& s = first ? t->first[size_t(id)] : t->pieces[size_t(id)];
      c.accept(id);
      ASSERT_TRUE(ref.accept(s));
      text += s;
      first = false;
      EXPECT_EQ(c.must_stop(), ref.finished());
      if (c.must_stop()) break;
    }
  }
}

const char* kSchemas[] = {
    R"({"type": "object", "additionalProperties": false, "required": ["name", "tags", "n"],
        "properties": {"name": {"type": "string", "maxLength": 24}, "n": {"type": "integer"},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 12}, "maxItems": 4}}})",
    R"({"type": "object", "properties": {"color": {"enum": ["red", "green", "blue"]},
        "ok": {"type": "boolean"}, "none": {"type": "null"}, "x": {"type": "number"}},
        "required": ["color", "ok"], "additionalProperties": false})",
    R"({"type": "array", "items": {"anyOf": [{"type": "integer"}, {"type": "string", "minLength": 2}]},
        "minItems": 1, "maxItems": 3})",
};

}  // namespace

TEST(GrammarMasks, FastPathEqualsThePlainMatcher) {
  std::mt19937 rng(7);
  auto t = random_texts(rng, 1500, 64u << 20);
  for (const char* schema : kSchemas) check_walks(json_schema_to_grammar(json::parse(schema)), t, rng, 6, 60);
  check_walks(json_object_grammar(3), t, rng, 6, 60);
  // Classes of multi-byte characters: tokens that end inside one are kept only where some
  // completion fits.
  check_walks("root ::= \"\\\"\" ([\\u00e0-\\u00ff] | [\\u20a0-\\u20af] | [a-z])* \"\\\"\"", t, rng, 6, 30);
  const MaskCache::Stats st = t->masks->stats();
  EXPECT_GT(st.hits, 0u);  // states came back, and their masks came from the cache
  EXPECT_GT(st.entries, 0u);
}

TEST(GrammarMasks, EvictedMasksAreMadeAgainTheSame) {
  std::mt19937 rng(11);
  auto t = random_texts(rng, 700, 16u << 10);  // a few masks at most: entries go and come back
  check_walks(json_schema_to_grammar(json::parse(kSchemas[0])), t, rng, 8, 50);
  EXPECT_LE(t->masks->stats().bytes, 16u << 10);
}

TEST(GrammarMasks, GrammarsShareMasksByTheirRules) {
  MaskCache cache;
  const std::string a = json_schema_to_grammar(json::parse(kSchemas[0]));
  const std::string b = json_schema_to_grammar(json::parse(kSchemas[1]));
  EXPECT_EQ(cache.grammar_id(parse_grammar(a)), cache.grammar_id(parse_grammar(a)));
  EXPECT_NE(cache.grammar_id(parse_grammar(a)), cache.grammar_id(parse_grammar(b)));
  // A key is the whole state: two states apart are two entries.
  auto g = std::make_shared<Grammar>(parse_grammar(a));
  GrammarMatcher m(g), n(g);
  ASSERT_TRUE(n.accept("{"));
  EXPECT_NE(mask_key(m.state(), 0), mask_key(n.state(), 0));
  EXPECT_NE(mask_key(m.state(), 0), mask_key(m.state(), 1));
  const uint64_t id = cache.grammar_id(*g);
  cache.put(id, mask_key(m.state(), 0), std::make_shared<TokenMask>(TokenMask{1, 2}));
  ASSERT_TRUE(cache.find(id, mask_key(m.state(), 0)));
  EXPECT_EQ(*cache.find(id, mask_key(m.state(), 0)), (TokenMask{1, 2}));
  EXPECT_FALSE(cache.find(id, mask_key(n.state(), 0)));
  EXPECT_FALSE(cache.find(id + 1, mask_key(m.state(), 0)));
}
