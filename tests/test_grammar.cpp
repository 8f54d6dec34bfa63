// Constrained generation (llm/grammar, llm/chat/tool_calls): the GBNF parser's errors and limits,
// the matcher against strings it must take and refuse (multi-byte characters split between
// pieces), the token-trie mask against checking every token alone, JSON Schema grammars whose
// random sentences parse as JSON (wgc::json, which the grammar code does not use) and satisfy the
// schema, and tool calls: parsed from replies in each format, streamed, and generated under
// their grammar.
#include "llm/chat/tool_calls.h"
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

std::string_view trim_right(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

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

// ---- tool calls (llm/chat/tool_calls.h) -------------------------------------------------------

TEST(ToolCalls, FormatFromTheTemplate) {
  EXPECT_EQ(detect_tool_call_format("{% for tool in tools %}...<tool_call>\\n{{ tool_call | tojson }}"),
            ToolCallFormat::Hermes);
  EXPECT_EQ(detect_tool_call_format("{{- '[TOOL_CALLS][' }}"), ToolCallFormat::Mistral);
  EXPECT_EQ(detect_tool_call_format("{{- '<|python_tag|>' + tool_call.name }}"), ToolCallFormat::Llama3);
  EXPECT_EQ(detect_tool_call_format("{{ message.content }}"), ToolCallFormat::Generic);
}

TEST(ToolCalls, RepliesSplitIntoContentAndCalls) {
  auto one = parse_tool_calls(
      "Let me look.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
      ToolCallFormat::Hermes);
  ASSERT_EQ(one.calls.size(), 1u);
  EXPECT_EQ(one.calls[0].name, "get_weather");
  EXPECT_EQ(one.calls[0].arguments, "{\"city\":\"Paris\"}");
  EXPECT_EQ(one.content, "Let me look.");
  auto two = parse_tool_calls(
      "<tool_call>{\"name\": \"a\", \"arguments\": \"{\\\"x\\\": 1}\"}</tool_call>\n<tool_call>{\"name\": \"b\"}",
      ToolCallFormat::Hermes);  // arguments as a JSON string; the last call unclosed (stopped at EOS)
  ASSERT_EQ(two.calls.size(), 2u);
  EXPECT_EQ(two.calls[0].arguments, "{\"x\":1}");
  EXPECT_EQ(two.calls[1].name, "b");
  EXPECT_EQ(two.calls[1].arguments, "{}");
  auto bad = parse_tool_calls("Sure: <tool_call>{not json}</tool_call>", ToolCallFormat::Hermes);
  EXPECT_TRUE(bad.calls.empty());
  EXPECT_EQ(bad.content, "Sure: <tool_call>{not json}</tool_call>");

  auto llama = parse_tool_calls(
      "<|python_tag|>{\"name\": \"f\", \"parameters\": {\"q\": \"x\"}}; {\"name\": \"g\", "
      "\"parameters\": {}}",
      ToolCallFormat::Llama3);
  ASSERT_EQ(llama.calls.size(), 2u);
  EXPECT_EQ(llama.calls[0].arguments, "{\"q\":\"x\"}");
  EXPECT_TRUE(parse_tool_calls("The answer is {1, 2}.", ToolCallFormat::Llama3).calls.empty());

  auto mistral = parse_tool_calls(
      "[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {\"a\": [1, 2]}}, {\"name\": \"g\", \"arguments\": "
      "{}}]",
      ToolCallFormat::Mistral);
  ASSERT_EQ(mistral.calls.size(), 2u);
  EXPECT_EQ(mistral.calls[0].arguments, "{\"a\":[1,2]}");
  auto fenced = parse_tool_calls("```json\n{\"name\": \"f\", \"arguments\": {}}\n```", ToolCallFormat::Generic);
  ASSERT_EQ(fenced.calls.size(), 1u);
  EXPECT_EQ(parse_tool_calls("{\"no\": \"name\"}", ToolCallFormat::Generic).calls.size(), 0u);
}

TEST(ToolCalls, StreamedContentNeverShowsPartOfACall) {
  const std::string reply = "Checking now. <tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>";
  const ParsedReply final_reply = parse_tool_calls(reply, ToolCallFormat::Hermes);
  for (size_t n = 0; n <= reply.size(); ++n) {
    const std::string_view so_far = std::string_view(reply).substr(0, n);
    const size_t safe = tool_call_safe_prefix(so_far, ToolCallFormat::Hermes);
    ASSERT_LE(safe, n);
    // What is released is content of the final reply (up to trailing spaces the parse trims).
    EXPECT_EQ(std::string(trim_right(so_far.substr(0, safe))),
              final_reply.content.substr(0, trim_right(so_far.substr(0, safe)).size()))
        << n;
    EXPECT_EQ(so_far.substr(0, safe).find('<'), std::string_view::npos) << n;
  }
  EXPECT_EQ(tool_call_safe_prefix("{\"name", ToolCallFormat::Llama3), 0u);
  EXPECT_EQ(tool_call_safe_prefix("<|pyth", ToolCallFormat::Llama3), 0u);
  EXPECT_EQ(tool_call_safe_prefix("Hello", ToolCallFormat::Llama3), 5u);
  EXPECT_EQ(tool_call_safe_prefix("ok [TOOL_C", ToolCallFormat::Mistral), 3u);
}

TEST(ToolCalls, GrammarCallsParseBackWithValidArguments) {
  std::vector<ToolSpec> tools = {
      {"get_weather", json::parse(R"({"type": "object", "properties": {"city": {"type": "string", "maxLength": 8},
        "unit": {"enum": ["c", "f"]}}, "required": ["city"], "additionalProperties": false})")},
      {"add", json::parse(R"({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"], "additionalProperties": false})")}};
  std::vector<std::string> vocab;
  for (int c = 0x20; c < 0x7F; ++c) vocab.push_back(std::string(1, char(c)));
  for (const char* t : {"\n", "<tool_call>", "</tool_call>", "[TOOL_CALLS]", "\"name\": \"", "get_weather", "add"})
    vocab.push_back(t);
  TokenTrie trie(vocab);
  std::mt19937 rng(5);
  for (ToolCallFormat f :
       {ToolCallFormat::Hermes, ToolCallFormat::Llama3, ToolCallFormat::Mistral, ToolCallFormat::Generic}) {
    for (std::optional<std::string> only : {std::optional<std::string>(), std::optional<std::string>("add")}) {
      auto g = G(tool_call_grammar(f, tools, only, 3));
      for (int seed = 0; seed < 6; ++seed) {
        const std::string text = random_sentence(g, vocab, trie, rng);
        const ParsedReply r = parse_tool_calls(text, f);
        ASSERT_FALSE(r.calls.empty()) << to_string(f) << ": " << text;
        EXPECT_EQ(r.content, "") << text;
        for (const ToolCall& c : r.calls) {
          const json::Value args = json::parse(c.arguments);
          if (c.name == "add") {
            EXPECT_TRUE(args["a"].is_int() && args["b"].is_int()) << text;
          } else {
            EXPECT_FALSE(only) << text;
            EXPECT_EQ(c.name, "get_weather") << text;
            EXPECT_TRUE(args["city"].is_string()) << text;
          }
        }
      }
    }
  }
  EXPECT_THROW(tool_call_grammar(ToolCallFormat::Hermes, tools, std::string("nope")), Error);
}
