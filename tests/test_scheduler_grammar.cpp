// Constrained sampling in the serving scheduler's batched steps (Request::grammar) on the built-in
// model, whose weights know nothing of JSON: constrained requests batched beside free ones give
// output that parses and satisfies its schema (greedy and under several seeds), greedy ones the
// same tokens as the Generator's own constrained path (a separate implementation: full masked
// logits every step), and the free requests in the same batch the tokens they give alone (the
// constraint is per sequence); on the GPU engine (SwiftShader) too, once. A grammar with
// ignore_eos is refused at submit().
#include "llm/chat/tool_calls.h"
#include "llm/generate/generator.h"
#include "llm/grammar/json_schema.h"
#include "llm/serve/scheduler.h"
#include "test_llm_util.h"

#include <algorithm>
#include <condition_variable>
#include <mutex>

using namespace wgc;
using namespace wgc::llm;
using wgc::test::ctx;
using wgc::test::default_model;

namespace {

struct Dict {
  ModelFile file;
  LlamaModel model;
  Tokenizer tok;
};
Dict* load(Device device) {
  ModelFile f = open_model(default_model(), {false, false});
  EngineOptions eo;
  eo.max_ctx = 256;
  eo.max_batch = 32;
  eo.progress = false;
  eo.q8_activations = false;  // as the scheduler's f32 linears (compared with the Generator)
  eo.device = device;
  LlamaModel lm(ctx(), f, eo);
  Tokenizer t = *find_tokenizer(f);
  return new Dict{std::move(f), std::move(lm), std::move(t)};
}
// The CPU engine (fast here: most tests), and the GPU engine (SwiftShader: one small test of the
// batched GPU step that brings back a constrained row's candidates and full logits together).
Dict& dict(Device device = Device::Cpu) {
  static Dict* cpu = load(Device::Cpu);
  if (device == Device::Cpu) return *cpu;
  static Dict* gpu = load(Device::Gpu);
  return *gpu;
}

struct Outcome {
  std::vector<int32_t> ids;
  std::string text;
  RequestResult result;
  bool done = false;
};

// Submits every request at once (they run in the same steps) and waits for all.
std::vector<Outcome> run_all(std::vector<Request> reqs, int parallel, Device device = Device::Cpu) {
  SchedulerOptions so;
  so.parallel = parallel;
  so.prefill_chunk = 8;
  if (device == Device::Gpu) so.linear = LinearVersion::Batched;  // f32 activations, as the Generator's
  Scheduler s(dict(device).model, dict(device).tok, so);
  std::vector<Outcome> runs(reqs.size());
  std::mutex mu;
  std::condition_variable cv;
  for (size_t i = 0; i < reqs.size(); ++i) {
    s.submit(
        std::move(reqs[i]),
        [&, i](const TokenEvent& e) {
          std::lock_guard lk(mu);
          runs[i].ids.push_back(e.id);
          runs[i].text += e.text;
          return true;
        },
        [&, i](const RequestResult& r) {
          std::lock_guard lk(mu);
          runs[i].text += r.text_tail;
          runs[i].result = r;
          runs[i].done = true;
          cv.notify_all();
        });
  }
  std::unique_lock lk(mu);
  cv.wait(lk, [&] {
    for (auto& r : runs)
      if (!r.done) return false;
    return true;
  });
  return runs;
}

Request request(const std::string& prompt, int max_tokens, float temperature, uint64_t seed) {
  Request r;
  r.prompt = dict().tok.encode(prompt);
  r.max_tokens = max_tokens;
  r.sampling.temperature = temperature;
  r.sampling.top_p = 0.95f;
  r.sampling.seed = seed;
  return r;
}

const char* kSchema = R"({"type": "object", "properties": {
    "word": {"type": "string", "minLength": 1, "maxLength": 8},
    "n": {"type": "integer", "minimum": 0, "maximum": 99},
    "tags": {"type": "array", "items": {"enum": ["a", "b", "c"]}, "minItems": 1, "maxItems": 3},
    "ok": {"type": "boolean"}},
  "required": ["word", "n", "tags"], "additionalProperties": false})";

// v satisfies kSchema (checked by hand, not by the code that made the grammar).
void expect_valid(const std::string& text) {
  json::Value v;
  ASSERT_NO_THROW(v = json::parse(text)) << text;
  ASSERT_TRUE(v.is_object()) << text;
  for (const auto& [k, x] : v.members()) EXPECT_TRUE(k == "word" || k == "n" || k == "tags" || k == "ok") << text;
  ASSERT_TRUE(v.find("word") && v["word"].is_string()) << text;
  size_t chars = 0;
  for (unsigned char c : v["word"].as_string()) chars += (c & 0xC0) != 0x80;
  EXPECT_TRUE(chars >= 1 && chars <= 8) << text;
  ASSERT_TRUE(v.find("n") && v["n"].is_int()) << text;
  EXPECT_TRUE(v["n"].as_int() >= 0 && v["n"].as_int() <= 99) << text;
  ASSERT_TRUE(v.find("tags") && v["tags"].is_array()) << text;
  EXPECT_TRUE(v["tags"].size() >= 1 && v["tags"].size() <= 3) << text;
  for (const json::Value& t : v["tags"].items())
    EXPECT_TRUE(t.is_string() && (t.as_string() == "a" || t.as_string() == "b" || t.as_string() == "c")) << text;
  if (const json::Value* ok = v.find("ok")) {
    EXPECT_TRUE(ok->is_bool()) << text;
  }
}

}  // namespace

TEST(SchedulerGrammar, ConstrainedBesideFreeRequests) {
  WGC_REQUIRE_FILE(default_model());
  auto g = std::make_shared<const Grammar>(parse_grammar(json_schema_to_grammar(json::parse(kSchema))));
  std::vector<Request> reqs;
  reqs.push_back(request("The moon", 10, 0, 0));  // free, greedy: as alone
  for (uint64_t seed = 0; seed < 5; ++seed) {
    Request r = request("Describe the sea as JSON:", 120, seed == 0 ? 0.f : 1.1f, seed);
    r.grammar = g;
    reqs.push_back(std::move(r));
  }
  reqs.push_back(request("A cat is", 10, 0.8f, 7));  // free, seeded: as alone
  const std::vector<Outcome> together = run_all(reqs, 4);
  for (size_t i = 1; i + 1 < reqs.size(); ++i) {
    SCOPED_TRACE("constrained request " + std::to_string(i));
    EXPECT_TRUE(together[i].result.error.empty()) << together[i].result.error;
    EXPECT_EQ(together[i].result.stop, StopReason::Eos) << together[i].text;
    expect_valid(together[i].text);
  }
  // The free ones, each alone.
  for (size_t i : {size_t(0), reqs.size() - 1}) {
    const std::vector<Outcome> alone = run_all({reqs[i]}, 1);
    EXPECT_EQ(together[i].ids, alone[0].ids) << i;
    EXPECT_EQ(together[i].text, alone[0].text) << i;
  }
  // Greedy constrained: the Generator's constrained path gives the same tokens.
  Generator gen(dict().model, dict().tok);
  GenerateOptions o;
  o.sampling = reqs[1].sampling;
  o.max_tokens = reqs[1].max_tokens;
  o.grammar = g;
  const GenerateResult want = gen.generate(std::span<const int32_t>(reqs[1].prompt), o);
  EXPECT_EQ(together[1].ids, want.ids);
  EXPECT_EQ(together[1].text, want.text);
}

TEST(SchedulerGrammar, ForcedToolCallParses) {
  WGC_REQUIRE_FILE(default_model());
  std::vector<ToolSpec> tools = {
      {"lookup", json::parse(R"({"type": "object", "properties": {"term": {"type": "string", "maxLength": 12}},
          "required": ["term"]})")},
      {"add", json::parse(R"({"type": "object", "properties": {"a": {"type": "integer", "minimum": 0},
          "b": {"type": "integer", "minimum": 0}}, "required": ["a", "b"], "additionalProperties": false})")}};
  std::vector<Request> reqs;
  for (ToolCallFormat f :
       {ToolCallFormat::Hermes, ToolCallFormat::Llama3, ToolCallFormat::Mistral, ToolCallFormat::Generic}) {
    Request r = request("Add two and three.", 240, 0.9f, uint64_t(f) + 1);
    r.grammar = std::make_shared<const Grammar>(parse_grammar(tool_call_grammar(f, tools, std::nullopt, 2)));
    reqs.push_back(std::move(r));
  }
  const std::vector<Outcome> runs = run_all(reqs, 4);
  const ToolCallFormat formats[] = {ToolCallFormat::Hermes, ToolCallFormat::Llama3, ToolCallFormat::Mistral,
                                    ToolCallFormat::Generic};
  for (size_t i = 0; i < runs.size(); ++i) {
    SCOPED_TRACE(std::string(to_string(formats[i])) + ": " + runs[i].text);
    EXPECT_EQ(runs[i].result.stop, StopReason::Eos);
    const ParsedReply p = parse_tool_calls(runs[i].text, formats[i]);
    ASSERT_GE(p.calls.size(), 1u);
    ASSERT_LE(p.calls.size(), 2u);
    for (const ToolCall& c : p.calls) {
      const json::Value args = json::parse(c.arguments);
      ASSERT_TRUE(args.is_object());
      if (c.name == "add") {
        EXPECT_TRUE(args["a"].is_int() && args["a"].as_int() >= 0);
        EXPECT_TRUE(args["b"].is_int() && args["b"].as_int() >= 0);
      } else {
        ASSERT_EQ(c.name, "lookup");
        EXPECT_TRUE(args["term"].is_string());
      }
    }
  }
}

TEST(SchedulerGrammar, RefusesIgnoreEos) {
  WGC_REQUIRE_FILE(default_model());
  Scheduler s(dict().model, dict().tok, {});
  Request r = request("x", 4, 0, 0);
  r.grammar = std::make_shared<const Grammar>(parse_grammar("root ::= \"a\""));
  r.ignore_eos = true;
  EXPECT_THROW(s.submit(r, nullptr, nullptr), Error);
}

TEST(SchedulerGrammar, GpuEngineStepGivesTheGeneratorsTokens) {
  WGC_REQUIRE_FILE(default_model());
  auto g = std::make_shared<const Grammar>(parse_grammar("root ::= (\"yes\" | \"no\") \", \" [a-z]{2,6} \".\""));
  std::vector<Request> reqs;
  reqs.push_back(request("Is the moon round?", 16, 0, 0));
  reqs.back().grammar = g;
  reqs.push_back(request("The sea", 6, 0, 0));  // free, beside it
  const std::vector<Outcome> runs = run_all(reqs, 2, Device::Gpu);
  EXPECT_TRUE(runs[0].result.error.empty()) << runs[0].result.error;
  EXPECT_EQ(runs[0].result.stop, StopReason::Eos) << runs[0].text;
  bool ok = false;
  for (const char* head : {"yes, ", "no, "})
    if (runs[0].text.starts_with(head)) {
      const std::string word = runs[0].text.substr(std::string(head).size());
      ok = word.size() >= 3 && word.size() <= 7 && word.back() == '.' &&
           std::all_of(word.begin(), word.end() - 1, [](char c) { return c >= 'a' && c <= 'z'; });
    }
  EXPECT_TRUE(ok) << runs[0].text;
  Generator gen(dict(Device::Gpu).model, dict(Device::Gpu).tok);
  GenerateOptions o;
  o.sampling = reqs[0].sampling;
  o.max_tokens = reqs[0].max_tokens;
  o.grammar = g;
  const GenerateResult want = gen.generate(std::span<const int32_t>(reqs[0].prompt), o);
  EXPECT_EQ(runs[0].ids, want.ids);
  EXPECT_EQ(runs[0].text, want.text);
}
