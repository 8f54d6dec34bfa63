// Grammars for constrained generation (llm/grammar): the GBNF parser's errors and limits, the
// matcher against strings it must take and refuse (multi-byte characters split between pieces),
// the token-trie mask against checking every token alone, and JSON Schema grammars whose random
// sentences parse as JSON (wgc::json, which the grammar code does not use) and satisfy the schema.
#include "llm/grammar/grammar.h"
#include "llm/grammar/json_schema.h"
#include "llm/grammar/matcher.h"
#include "util/error.h"
#include "util/json.h"

#include <gtest/gtest.h>

#include <random>

using namespace wgc;
using namespace wgc::llm;

namespace {

std::shared_ptr<const Grammar> G(std::string_view text) { return std::make_shared<Grammar>(parse_grammar(text)); }

bool matches(const std::shared_ptr<const Grammar>& g, std::string_view s) {
  GrammarMatcher m(g);
  return m.accept(s) && m.complete();
}

std::string error_of(std::string_view text) {
  try {
    parse_grammar(text);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Grammar, ParserErrorsNameWhereAndWhat) {
  EXPECT_NE(error_of("root ::= foo\n").find("'foo' is used but never defined"), std::string::npos);
  EXPECT_NE(error_of("a ::= \"x\"\n").find("no rule named 'root'"), std::string::npos);
  EXPECT_NE(error_of("root ::= root \"x\" | \"y\"\n").find("'root' is left-recursive"), std::string::npos);
  EXPECT_NE(error_of("root ::= a\na ::= b? root \"x\"\nb ::= \"y\"\n").find("left-recursive"), std::string::npos);
  EXPECT_NE(error_of("root ::= \"abc\n").find("line 1"), std::string::npos);
  EXPECT_NE(error_of("root ::= [a-\n").find("closing ']'"), std::string::npos);
  EXPECT_NE(error_of("root ::= \"a\"\nroot ::= \"b\"\n").find("line 2, column 1: the rule 'root' is defined twice"),
            std::string::npos);
  EXPECT_NE(error_of("root ::= \"\\q\"").find("unknown escape"), std::string::npos);
  EXPECT_NE(error_of("root ::= \"a\"{2,1}").find("n < m"), std::string::npos);
  EXPECT_NE(error_of("root ::= \"a\"{99999}").find("limit of 1024"), std::string::npos);
  EXPECT_NE(error_of("root ::= " + std::string(100, '(') + "\"a\"" + std::string(100, ')')).find("nested deeper"),
            std::string::npos);
  EXPECT_NE(error_of("root ::= [z-a]").find("end comes before its start"), std::string::npos);
  EXPECT_EQ(error_of("root ::= \"a\" # a comment\n  | \"b\"   # another\n"), "");
}

TEST(Grammar, MatcherTakesTheLanguageAndNothingElse) {
  auto g = G(R"G(root ::= expr
expr ::= term (("+" | "-") term)*
term ::= [0-9]+ | "(" expr ")"
)G");
  for (const char* good : {"1", "12+3", "(1-2)+30", "((7))"}) EXPECT_TRUE(matches(g, good)) << good;
  for (const char* bad : {"", "+", "1+", "(1", "1)", "a", "1 + 2"}) EXPECT_FALSE(matches(g, bad)) << bad;
  GrammarMatcher m(g);
  EXPECT_TRUE(m.accept("(1"));
  EXPECT_FALSE(m.complete());
  EXPECT_FALSE(m.accept("x"));  // refused, state unchanged
  EXPECT_TRUE(m.accept(")"));
  EXPECT_TRUE(m.complete());
  EXPECT_FALSE(m.finished());  // "+..." may follow

  auto rep = G(R"(root ::= "a"{2,3} "b"? [^"\n]{0,2} "!")");
  for (const char* good : {"aa!", "aaa!", "aab!", "aaxy!", "aaab!!"}) EXPECT_TRUE(matches(rep, good)) << good;
  for (const char* bad : {"a!", "aaaaaa!", "aaxyz!", "aa\"!", "aa\n!"}) EXPECT_FALSE(matches(rep, bad)) << bad;
}

TEST(Grammar, MultiByteCharactersSplitBetweenPieces) {
  auto g = G(R"(root ::= [é-ë]+ "€" .)");  // U+00E9..U+00EB, the euro sign (3 bytes), any character
  GrammarMatcher m(g);
  EXPECT_TRUE(m.accept("\xC3"));       // half of é
  EXPECT_FALSE(m.can_accept("\xA0"));  // U+00E0 is outside the class
  EXPECT_TRUE(m.accept("\xA9\xC3\xAB\xE2\x82"));
  EXPECT_FALSE(m.complete());
  EXPECT_TRUE(m.accept("\xAC\xF0\x9F\x98\x80"));  // ... the euro sign's last byte, then an emoji
  EXPECT_TRUE(m.complete());
  EXPECT_TRUE(m.finished());
  GrammarMatcher b(g);
  EXPECT_FALSE(b.can_accept("\xE2\x82\xAC"));  // the class first
  EXPECT_FALSE(b.can_accept("\xA9"));          // a continuation byte without its lead
  EXPECT_FALSE(b.can_accept("\xFF"));
}

TEST(Grammar, TrieMaskEqualsEveryTokenChecked) {
  std::mt19937 rng(3);
  std::vector<std::string> vocab;
  const std::string alphabet = "{}[]\":, 0123456789-.eEtrufalsn\\\xC3\xA9";
  for (int i = 0; i < 3000; ++i) {
    std::string t;
    const int len = 1 + int(rng() % 4);
    for (int k = 0; k < len; ++k) t += alphabet[rng() % alphabet.size()];
    vocab.push_back(t);
  }
  vocab.push_back("");  // a special token: never allowed by the trie
  TokenTrie trie(vocab);
  GrammarMatcher m(G(json_object_grammar(4)));
  for (const char* prefix : {"", "{", "{\"a\": [1, ", "{\"a\": \"x\\", "{\"\xC3"}) {
    GrammarMatcher at = m;
    ASSERT_TRUE(at.accept(prefix)) << prefix;
    std::vector<uint8_t> mask;
    trie.allowed(at, mask);
    ASSERT_EQ(mask.size(), vocab.size());
    size_t n = 0;
    for (size_t id = 0; id < vocab.size(); ++id) {
      const bool want = !vocab[id].empty() && at.can_accept(vocab[id]);
      EXPECT_EQ(mask[id] != 0, want) << "prefix '" << prefix << "' token '" << vocab[id] << "'";
      n += want;
    }
    EXPECT_GT(n, 0u) << prefix;
  }
}

namespace {

// A random sentence of the grammar: random tokens among the allowed ones, stopping when complete
// (at random, or when the length budget is spent).
std::string random_sentence(const std::shared_ptr<const Grammar>& g, const std::vector<std::string>& vocab,
                            const TokenTrie& trie, std::mt19937& rng) {
  GrammarMatcher m(g);
  std::string text;
  std::vector<uint8_t> mask;
  for (int step = 0; step < 400; ++step) {
    if (m.complete() && (rng() % 4 == 0 || step > 300 || m.finished())) return text;
    trie.allowed(m, mask);
    std::vector<size_t> ok;
    for (size_t i = 0; i < mask.size(); ++i)
      if (mask[i]) ok.push_back(i);
    if (ok.empty()) break;
    const std::string& t = vocab[ok[rng() % ok.size()]];
    EXPECT_TRUE(m.accept(t));
    text += t;
  }
  EXPECT_TRUE(m.complete()) << "no way to finish: " << text;
  return text;
}

// Whether v satisfies the schemas used below (the keywords they use).
bool satisfies(const json::Value& v, const json::Value& s, const json::Value& root) {
  if (const json::Value* r = s.find("$ref")) return satisfies(v, root["$defs"][r->as_string().substr(8)], root);
  if (const json::Value* e = s.find("enum")) {
    for (const auto& x : e->items())
      if (x.dump() == v.dump()) return true;
    return false;
  }
  if (const json::Value* any = s.find("anyOf")) {
    for (const auto& x : any->items())
      if (satisfies(v, x, root)) return true;
    return false;
  }
  const std::string t = s.find("type") ? s["type"].as_string() : "";
  if (t == "string") {
    if (!v.is_string()) return false;
    size_t chars = 0;
    for (unsigned char c : v.as_string()) chars += (c & 0xC0) != 0x80;
    if (s.find("minLength") && chars < size_t(s["minLength"].as_int())) return false;
    return !s.find("maxLength") || chars <= size_t(s["maxLength"].as_int());
  }
  if (t == "integer") {
    if (!v.is_int()) return false;
    if (s.find("minimum") && v.as_int() < s["minimum"].as_int()) return false;
    return !s.find("maximum") || v.as_int() <= s["maximum"].as_int();
  }
  if (t == "number") return v.is_number();
  if (t == "boolean") return v.is_bool();
  if (t == "null") return v.is_null();
  if (t == "array") {
    if (!v.is_array()) return false;
    if (s.find("minItems") && v.size() < size_t(s["minItems"].as_int())) return false;
    if (s.find("maxItems") && v.size() > size_t(s["maxItems"].as_int())) return false;
    for (const auto& x : v.items())
      if (!satisfies(x, s["items"], root)) return false;
    return true;
  }
  if (t == "object") {
    if (!v.is_object()) return false;
    const json::Value& props = s["properties"];
    if (const json::Value* req = s.find("required"))
      for (const auto& r : req->items())
        if (!v.find(r.as_string())) return false;
    for (const auto& [k, x] : v.members()) {
      const json::Value* p = props.find(k);
      if (!p) return false;  // these schemas say additionalProperties: false
      if (!satisfies(x, *p, root)) return false;
    }
    return true;
  }
  return true;
}

}  // namespace

TEST(Grammar, JsonSchemaSentencesParseAndValidate) {
  const char* schemas[] = {
      R"({"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0}},
          "required": ["name"], "additionalProperties": false})",
      R"({"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 4})",
      R"({"type": "object", "properties": {"color": {"enum": ["red", "green", "blue"]},
          "tags": {"type": "array", "items": {"type": "string", "maxLength": 3}, "maxItems": 3},
          "ok": {"type": "boolean"}, "none": {"type": "null"}},
          "required": ["color", "ok"], "additionalProperties": false})",
      R"({"$defs": {"node": {"type": "object", "properties": {"v": {"type": "integer", "minimum": 1, "maximum": 9},
          "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}, "maxItems": 2}},
          "required": ["v"], "additionalProperties": false}},
          "type": "object", "properties": {"tree": {"$ref": "#/$defs/node"}}, "required": ["tree"],
          "additionalProperties": false})",
      R"({"type": "object", "properties": {"x": {"anyOf": [{"type": "integer"}, {"type": "string", "minLength": 2}]},
          "y": {"type": "string", "minLength": 1, "maxLength": 2}}, "required": ["x", "y"],
          "additionalProperties": false})",
  };
  std::vector<std::string> vocab;
  for (int c = 0x20; c < 0x7F; ++c) vocab.push_back(std::string(1, char(c)));
  for (const char* t : {"\n", "\"", "\": ", "true", "false", "null", "{\"", "\xC3\xA9", "\xE2\x82", "\xAC", "12"})
    vocab.push_back(t);
  TokenTrie trie(vocab);
  std::mt19937 rng(11);
  for (const char* text : schemas) {
    const json::Value schema = json::parse(text);
    auto g = G(json_schema_to_grammar(schema));
    for (int seed = 0; seed < 8; ++seed) {
      const std::string s = random_sentence(g, vocab, trie, rng);
      json::Value v;
      ASSERT_NO_THROW(v = json::parse(s)) << s;
      EXPECT_TRUE(satisfies(v, schema, schema)) << "schema " << text << "\noutput " << s;
    }
  }
  // Any JSON object.
  auto obj = G(json_object_grammar());
  for (int seed = 0; seed < 8; ++seed) {
    const std::string s = random_sentence(obj, vocab, trie, rng);
    EXPECT_TRUE(json::parse(s).is_object()) << s;
  }
}

TEST(Grammar, JsonSchemaRefusesWhatItCannotGuarantee) {
  auto refusal = [](const char* text) {
    try {
      json_schema_to_grammar(json::parse(text));
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(refusal(R"({"type": "object", "properties": {"a": {"type": "string", "pattern": "^x"}}})")
                .find("at /properties/a: 'pattern' is not supported"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"type": "number", "minimum": 1})").find("minimum/maximum on a number"), std::string::npos);
  EXPECT_NE(refusal(R"({"$ref": "#/$defs/missing"})").find("does not name a schema"), std::string::npos);
  EXPECT_NE(refusal(R"({"type": "frobnicate"})").find("unknown type"), std::string::npos);
  EXPECT_NE(refusal(R"({"type": "array", "minItems": 100000})").find("minItems must be an integer"), std::string::npos);
  std::string deep = R"({"type": "string"})";
  for (int i = 0; i < 40; ++i) deep = R"({"type": "array", "items": )" + deep + "}";
  EXPECT_NE(refusal(deep.c_str()).find("nested deeper"), std::string::npos);
}
