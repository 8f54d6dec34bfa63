// Constrained generation (llm/generate/constrained.h) on the built-in model, whose weights know
// nothing of JSON: every output, greedy and sampled under many seeds, parses as JSON (wgc::json)
// and satisfies its schema; a tool call's arguments too. The CPU engine runs them (fast); the GPU
// engine (SwiftShader here: slow) one greedy run, since the constraint is the host's work.
#include "llm/chat/tool_calls.h"
#include "llm/generate/constrained.h"
#include "llm/generate/generator.h"
#include "llm/grammar/json_schema.h"
#include "test_llm_util.h"

using namespace wgc;
using namespace wgc::llm;
using wgc::test::ctx;
using wgc::test::default_model;

namespace {

// The built-in model and a Generator on it, once per engine.
struct Dict {
  explicit Dict(Device d)
      : file(open_model(default_model(), {false, false})),
        model(ctx(), file, options(d)),
        gen(model, find_tokenizer(file)) {}
  static EngineOptions options(Device d) {
    EngineOptions eo;
    eo.max_ctx = 256;
    eo.max_batch = 64;
    eo.progress = false;
    eo.device = d;
    return eo;
  }
  ModelFile file;
  LlamaModel model;
  Generator gen;
};
Dict& dict(Device device) {
  auto load = [](Device d) { return new Dict(d); };
  static Dict* cpu = load(Device::Cpu);
  if (device == Device::Cpu) return *cpu;
  static Dict* gpu = load(Device::Gpu);
  return *gpu;
}

std::shared_ptr<const Grammar> grammar(const std::string& text) {
  return std::make_shared<Grammar>(parse_grammar(text));
}

}  // namespace

class ConstrainedOn : public testing::TestWithParam<Device> {};
INSTANTIATE_TEST_SUITE_P(Engines, ConstrainedOn, testing::Values(Device::Cpu, Device::Gpu),
                         [](const testing::TestParamInfo<Device>& i) { return std::string(to_string(i.param)); });

TEST_P(ConstrainedOn, JsonSchemaOutputValidates) {
  WGC_REQUIRE_FILE(default_model());
  const bool gpu = GetParam() == Device::Gpu;
  Dict& d = dict(GetParam());
  const json::Value schema = json::parse(R"({"type": "object", "properties": {
      "word": {"type": "string", "minLength": 1, "maxLength": 6},
      "count": {"type": "integer", "minimum": 0},
      "kind": {"enum": ["noun", "verb"]}}, "required": ["word", "kind"], "additionalProperties": false})");
  GenerateOptions o;
  o.grammar = grammar(json_schema_to_grammar(schema));
  o.max_tokens = 100;
  const int runs = gpu ? 1 : 6;
  for (int seed = 0; seed < runs; ++seed) {
    o.sampling.temperature = seed == 0 ? 0.f : 1.2f;
    o.sampling.seed = uint64_t(seed);
    d.gen.reset();
    const GenerateResult r = d.gen.generate("Define moon:", o);
    ASSERT_NE(r.stop, StopReason::MaxTokens) << "seed " << seed << ": " << r.text;
    json::Value v;
    ASSERT_NO_THROW(v = json::parse(r.text)) << "seed " << seed << ": " << r.text;
    ASSERT_TRUE(v.is_object()) << r.text;
    ASSERT_TRUE(v.find("word") && v["word"].is_string() && !v["word"].as_string().empty()) << r.text;
    ASSERT_TRUE(v.find("kind") && (v["kind"].as_string() == "noun" || v["kind"].as_string() == "verb")) << r.text;
    if (const json::Value* c = v.find("count")) {
      EXPECT_TRUE(c->is_int() && c->as_int() >= 0) << r.text;
    }
    for (const auto& [k, x] : v.members()) EXPECT_TRUE(k == "word" || k == "count" || k == "kind") << r.text;
  }
}

TEST(Constrained, ToolCallArgumentsValidate) {
  WGC_REQUIRE_FILE(default_model());
  Dict& d = dict(Device::Cpu);
  std::vector<ToolSpec> tools = {{"lookup", json::parse(R"({"type": "object", "properties": {
      "term": {"type": "string", "maxLength": 10}, "limit": {"type": "integer", "minimum": 1, "maximum": 5}},
      "required": ["term", "limit"], "additionalProperties": false})")}};
  GenerateOptions o;
  o.grammar = grammar(tool_call_grammar(ToolCallFormat::Hermes, tools, std::nullopt, 1));
  o.max_tokens = 120;
  o.sampling.temperature = 0.9f;
  o.sampling.seed = 3;
  d.gen.reset();
  const GenerateResult r = d.gen.generate("Look up the moon.", o);
  const ParsedReply p = parse_tool_calls(r.text, ToolCallFormat::Hermes);
  ASSERT_EQ(p.calls.size(), 1u) << r.text;
  EXPECT_EQ(p.calls[0].name, "lookup");
  const json::Value args = json::parse(p.calls[0].arguments);
  EXPECT_TRUE(args["term"].is_string()) << r.text;
  EXPECT_GE(args["limit"].as_int(), 1);
  EXPECT_LE(args["limit"].as_int(), 5);
}

TEST(Constrained, TokenTextsMatchTheDecoder) {
  WGC_REQUIRE_FILE(default_model());
  ModelFile f = open_model(default_model(), {false, false});
  const Tokenizer tok = *find_tokenizer(f);
  auto texts = TokenTexts::of(tok);
  ASSERT_EQ(texts->pieces.size(), tok.vocab_size());
  // Texts made of tokens: the first token's text, then each one's piece, give what decode gives.
  for (const char* s : {"The moon is a satellite.", " {\"a\": [1, 2]}", "naïve café"}) {
    const auto ids = tok.encode(s, false);
    std::string joined;
    for (size_t i = 0; i < ids.size(); ++i)
      joined += i == 0 ? texts->first[size_t(ids[i])] : texts->pieces[size_t(ids[i])];
    EXPECT_EQ(joined, tok.decode_bytes(ids)) << s;
  }
}
