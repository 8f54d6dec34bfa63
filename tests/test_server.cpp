// The HTTP server's parts that need no GPU and no listening socket: request bodies -> scheduler
// requests (fields, defaults, the chat template, every refusal with its field), the response
// shapes (streamed chunks add up to the whole answer), the Prometheus text, and the connection
// table's caps (over socket pairs). The server over HTTP is tested by tests/serve/*.test.mjs
// (the official openai client; slow and hostile clients in slow.test.mjs).
#include "llm/chat/chat_template.h"
#include "llm/generate/generator.h"
#include "server/connections.h"
#include "server/metrics.h"
#include "server/request.h"
#include "server/response.h"
#include "test_llm_util.h"
#include "util/json.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

using namespace wgc;
using namespace wgc::server;
namespace json = wgc::json;
namespace fs = std::filesystem;

namespace {

struct Model {
  llm::Tokenizer tok;
  llm::ChatTemplate chat;
  ModelInfo info;
};

const Model& model() {
  static Model* m = [] {
    auto file = llm::open_model(test::default_model(), {false, false});
    llm::Tokenizer tok = *llm::find_tokenizer(file);
    auto* out = new Model{tok, llm::ChatTemplate::for_tokenizer(tok), {}};
    llm::SamplingParams defaults;
    defaults.temperature = 0.7f;
    defaults.top_p = 0.9f;
    out->info = ModelInfo{"tiny", &out->tok, &out->chat, 64, defaults};
    return out;
  }();
  return *m;
}

ApiRequest parse(Api api, const std::string& body) { return parse_request(api, body, model().info); }

// The status, field and message of the refusal of `body`.
ApiError refusal(Api api, const std::string& body) {
  try {
    parse(api, body);
  } catch (const ApiError& e) {
    return e;
  }
  ADD_FAILURE() << "accepted: " << body;
  return ApiError(0, "");
}

}  // namespace

TEST(ServerRequest, CompletionsFieldsAndDefaults) {
  ApiRequest r = parse(Api::Completions, R"({"model": "x", "prompt": "The moon"})");
  EXPECT_EQ(r.generation.prompt, model().tok.encode("The moon", true));
  EXPECT_EQ(r.generation.max_tokens, kDefaultCompletionsMaxTokens);
  EXPECT_FLOAT_EQ(r.generation.sampling.temperature, 0.7f);  // the model's defaults
  EXPECT_FLOAT_EQ(r.generation.sampling.top_p, 0.9f);
  EXPECT_FALSE(r.seeded);
  EXPECT_FALSE(r.stream);
  EXPECT_FALSE(r.logprobs);
  EXPECT_EQ(r.generation.top_logprobs, -1);
  EXPECT_TRUE(r.generation.stop.empty());

  r = parse(Api::Completions, R"({"prompt": ["a b"], "max_tokens": 7, "temperature": 0, "top_p": 0.5,
      "seed": 42, "stop": "\n", "presence_penalty": 1.5, "frequency_penalty": -0.5, "top_k": 3, "min_p": 0.1,
      "repeat_penalty": 1.1, "logprobs": 3, "stream": true, "stream_options": {"include_usage": true},
      "ignore_eos": true, "user": "someone", "n": 1, "logit_bias": {}})");
  EXPECT_EQ(r.generation.prompt, model().tok.encode("a b", true));
  EXPECT_EQ(r.generation.max_tokens, 7);
  const auto& s = r.generation.sampling;
  EXPECT_EQ(s.temperature, 0.0f);
  EXPECT_FLOAT_EQ(s.top_p, 0.5f);
  EXPECT_EQ(s.seed, 42u);
  EXPECT_TRUE(r.seeded);
  EXPECT_FLOAT_EQ(s.presence_penalty, 1.5f);
  EXPECT_FLOAT_EQ(s.frequency_penalty, -0.5f);
  EXPECT_EQ(s.top_k, 3);
  EXPECT_FLOAT_EQ(s.min_p, 0.1f);
  EXPECT_FLOAT_EQ(s.repeat_penalty, 1.1f);
  EXPECT_EQ(r.generation.stop, std::vector<std::string>{"\n"});
  EXPECT_TRUE(r.logprobs);
  EXPECT_EQ(r.generation.top_logprobs, 3);
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
  EXPECT_TRUE(r.generation.ignore_eos);

  // Token ids, flat or as a list of one list; logprobs 0: the chosen token's only.
  r = parse(Api::Completions, R"({"prompt": [0, 5, 8191], "logprobs": 0, "stop": ["a", "bc"]})");
  EXPECT_EQ(r.generation.prompt, (std::vector<int32_t>{0, 5, 8191}));
  EXPECT_EQ(r.generation.top_logprobs, 0);
  EXPECT_EQ(r.generation.stop, (std::vector<std::string>{"a", "bc"}));
  r = parse(Api::Completions, R"({"prompt": [[3, 4]], "seed": -1})");
  EXPECT_EQ(r.generation.prompt, (std::vector<int32_t>{3, 4}));
  EXPECT_EQ(r.generation.sampling.seed, ~uint64_t(0));
}

TEST(ServerRequest, ChatRendersTheTemplate) {
  ApiRequest r = parse(Api::Chat, R"({"messages": [
      {"role": "developer", "content": "Be terse."},
      {"role": "user", "content": [{"type": "text", "text": "Define "}, {"type": "text", "text": "moon"}]},
      {"role": "assistant", "content": null}, {"role": "user", "content": "again"}],
      "max_completion_tokens": 5, "logprobs": true, "top_logprobs": 2})");
  json::Value msgs = json::parse(R"([{"role": "system", "content": "Be terse."},
      {"role": "user", "content": "Define moon"}, {"role": "assistant", "content": ""},
      {"role": "user", "content": "again"}])");
  EXPECT_EQ(r.generation.prompt, model().tok.encode(model().chat.render_json(msgs), false));
  EXPECT_EQ(r.generation.max_tokens, 5);
  EXPECT_TRUE(r.logprobs);
  EXPECT_EQ(r.generation.top_logprobs, 2);
  // The built-in model has no template: the plain rendering, whose reply ends at the next turn.
  ASSERT_TRUE(model().chat.is_fallback());
  EXPECT_EQ(r.generation.stop, std::vector<std::string>{"\nuser:"});
  // No max_tokens in a chat: until a stop or the context's end.
  EXPECT_EQ(parse(Api::Chat, R"({"messages": [{"role": "user", "content": "hi"}]})").generation.max_tokens, -1);
  EXPECT_EQ(parse(Api::Chat, R"({"messages": [{"role": "user", "content": "hi"}], "logprobs": true})")
                .generation.top_logprobs,
            0);
}

TEST(ServerRequest, RefusalsNameTheField) {
  struct Case {
    Api api;
    const char* body;
    const char* param;
    const char* words;  // part of the message
  };
  const Api C = Api::Completions, H = Api::Chat;
  const Case cases[] = {
      {C, "{bad", "", "malformed JSON"},
      {C, "", "", "malformed JSON"},
      {C, "[1]", "", "must be a JSON object"},
      {C, "{}", "prompt", "required"},
      {C, R"({"prompt": 5})", "prompt", "got number"},
      {C, R"({"prompt": []})", "prompt", "must not be empty"},
      {C, R"({"prompt": ["a", "b"]})", "prompt", "one string"},
      {C, R"({"prompt": [[1], [2]]})", "prompt", "one token list"},
      {C, R"({"prompt": [1, "a"]})", "prompt", "token ids"},
      {C, R"({"prompt": [8192]})", "prompt", "[0, 8192)"},
      {C, R"({"prompt": [-1]})", "prompt", "token ids"},
      {C, R"({"prompt": [1.5]})", "prompt", "token ids"},
      {C, R"({"prompt": "x", "model": 3})", "model", "must be a string"},
      {C, R"({"prompt": "x", "temperature": 2.5})", "temperature", "[0, 2]"},
      {C, R"({"prompt": "x", "temperature": "hot"})", "temperature", "must be a number"},
      {C, R"({"prompt": "x", "temperature": 1e999})", "temperature", "[0, 2]"},
      {C, R"({"prompt": "x", "top_p": 1.5})", "top_p", "[0, 1]"},
      {C, R"({"prompt": "x", "top_p": 0})", "top_p", "(0, 1]"},
      {C, R"({"prompt": "x", "presence_penalty": 3})", "presence_penalty", "[-2, 2]"},
      {C, R"({"prompt": "x", "frequency_penalty": -2.1})", "frequency_penalty", "[-2, 2]"},
      {C, R"({"prompt": "x", "repeat_penalty": 0})", "repeat_penalty", "> 0"},
      {C, R"({"prompt": "x", "seed": 1.5})", "seed", "integer"},
      {C, R"({"prompt": "x", "seed": "1"})", "seed", "integer"},
      {C, R"({"prompt": "x", "seed": 9223372036854775808})", "seed", "must be in"},
      {C, R"({"prompt": "x", "seed": 1e19})", "seed", "must be in"},
      {C, R"({"prompt": "x", "max_tokens": 1e300})", "max_tokens", "must be in"},
      {C, R"({"prompt": "x", "max_tokens": 0})", "max_tokens", "[1, "},
      {C, R"({"prompt": "x", "max_tokens": 2.5})", "max_tokens", "integer"},
      {C, R"({"prompt": "x", "max_tokens": 3, "max_completion_tokens": 4})", "max_completion_tokens", "differ"},
      {C, R"({"prompt": "x", "stop": 1})", "stop", "string or an array"},
      {C, R"({"prompt": "x", "stop": [""]})", "stop", "must not hold an empty string"},
      {C, R"({"prompt": "x", "stop": ["a", 1]})", "stop", "holding a number"},
      {C, R"({"prompt": "x", "stop": ["a","b","c","d","e","f","g","h","i","j","k","l","m","n","o","p","q"]})", "stop",
       "at most 16"},
      {C, R"({"prompt": "x", "stream": "yes"})", "stream", "boolean"},
      {C, R"({"prompt": "x", "stream_options": {"include_usage": true}})", "stream_options", "only allowed"},
      {C, R"({"prompt": "x", "stream": true, "stream_options": 1})", "stream_options", "an object"},
      {C, R"({"prompt": "x", "n": 2})", "n", "must be 1"},
      {C, R"({"prompt": "x", "logit_bias": {"5": 10}})", "logit_bias", "not supported"},
      {C, R"({"prompt": "x", "tools": [{"type": "function"}]})", "tools", "/v1/chat/completions"},
      {C, R"({"prompt": "x", "response_format": {"type": "xml"}})", "response_format", "got 'xml'"},
      {C, R"({"prompt": "x", "echo": true})", "echo", "not supported"},
      {C, R"({"prompt": "x", "suffix": "y"})", "suffix", "not supported"},
      {C, R"({"prompt": "x", "best_of": 2})", "best_of", "must be 1"},
      {C, R"({"prompt": "x", "logprobs": 21})", "logprobs", "[0, 20]"},
      {C, R"({"prompt": "x", "logprobs": true})", "logprobs", "integer"},
      {H, "{}", "messages", "required"},
      {H, R"({"messages": []})", "messages", "must not be empty"},
      {H, R"({"messages": {}})", "messages", "an array"},
      {H, R"({"messages": ["hi"]})", "messages[0]", "an object"},
      {H, R"({"messages": [{"content": "hi"}]})", "messages", "role' must be a string"},
      {H, R"({"messages": [{"role": "wizard", "content": "hi"}]})", "messages", "got 'wizard'"},
      {H, R"({"messages": [{"role": "user", "content": 5}]})", "messages[0].content", "got number"},
      {H, R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})", "messages[0].content",
       "only text"},
      {H, R"({"messages": [{"role": "user", "content": [{"type": "text"}]}]})", "messages[0].content", "text'"},
      {H, R"({"messages": [{"role": "user", "content": "x"}], "top_logprobs": 2})", "top_logprobs", "needs 'logprobs'"},
      {H, R"({"messages": [{"role": "user", "content": "x"}], "logprobs": true, "top_logprobs": 21})", "top_logprobs",
       "[0, 20]"},
  };
  for (const Case& c : cases) {
    ApiError e = refusal(c.api, c.body);
    EXPECT_EQ(e.status, 400) << c.body;
    EXPECT_EQ(e.type, "invalid_request_error") << c.body;
    EXPECT_EQ(e.param, c.param) << c.body << " -> " << e.what();
    EXPECT_NE(std::string(e.what()).find(c.words), std::string::npos) << c.body << " -> " << e.what();
  }
}

TEST(ServerRequest, PromptMustLeaveRoomInTheContext) {
  const int ctx = model().info.max_ctx;
  std::string ids;
  for (int i = 0; i < ctx - 1; ++i) {
    if (i) ids += ',';
    ids += std::to_string(i % 100 + 10);
  }
  EXPECT_EQ(parse(Api::Completions, "{\"prompt\": [" + ids + "]}").generation.prompt.size(), size_t(ctx - 1));
  ApiError e = refusal(Api::Completions, "{\"prompt\": [" + ids + ",7]}");
  EXPECT_EQ(e.status, 400);
  EXPECT_EQ(e.code, "context_length_exceeded");
  EXPECT_NE(
      std::string(e.what()).find("has " + std::to_string(ctx) + " tokens but the context holds " + std::to_string(ctx)),
      std::string::npos)
      << e.what();
  std::string words;
  for (int i = 0; i < ctx; ++i) words += " moon";
  EXPECT_EQ(refusal(Api::Chat, R"({"messages": [{"role": "user", "content": ")" + words + "\"}]}").code,
            "context_length_exceeded");
}

TEST(ServerRequest, NestingAndSizesAreBounded) {
  std::string deep = std::string(kMaxJsonDepth + 1, '[') + std::string(kMaxJsonDepth + 1, ']');
  EXPECT_EQ(refusal(Api::Completions, "{\"prompt\": " + deep + "}").status, 400);
  std::string many = R"({"messages": [)";
  for (size_t i = 0; i <= kMaxChatMessages; ++i) many += std::string(i ? "," : "") + R"({"role":"user","content":""})";
  EXPECT_NE(std::string(refusal(Api::Chat, many + "]}").what()).find("at most"), std::string::npos);
  std::string long_stop(llm::kMaxStopBytes + 1, 'x');
  EXPECT_EQ(refusal(Api::Completions, R"({"prompt": "x", "stop": ")" + long_stop + "\"}").param, "stop");
}

TEST(ServerRequest, TokenizeAndDetokenize) {
  const auto& tok = model().tok;
  auto ids = tok.encode("Hello world", false);
  json::Value out = json::parse(tokenize(R"({"content": "Hello world"})", tok));
  ASSERT_EQ(out["tokens"].size(), ids.size());
  for (size_t i = 0; i < ids.size(); ++i) EXPECT_EQ(out["tokens"][i].as_int(), ids[i]);
  out = json::parse(tokenize(R"({"content": "Hello", "add_special": true, "with_pieces": true})", tok));
  auto with_bos = tok.encode("Hello", true);
  ASSERT_EQ(out["tokens"].size(), with_bos.size());
  std::string joined;
  for (size_t i = 0; i < with_bos.size(); ++i) {
    EXPECT_EQ(out["tokens"][i]["id"].as_int(), with_bos[i]);
    joined += out["tokens"][i]["piece"].as_string();
  }
  EXPECT_EQ(joined, tok.decode(with_bos));
  // A piece that is not valid UTF-8 alone comes as its bytes.
  out = json::parse(tokenize(R"({"content": "\u00e9\u00e9\u00e9 \u4e2d\u6587", "with_pieces": true})", tok));
  std::string bytes;
  for (const auto& t : out["tokens"].items()) {
    if (t["piece"].is_string())
      bytes += t["piece"].as_string();
    else
      for (const auto& b : t["piece"].items()) bytes += char(b.as_int());
  }
  EXPECT_EQ(bytes, "\u00e9\u00e9\u00e9 \u4e2d\u6587");

  std::string body = R"({"tokens": [)";
  for (size_t i = 0; i < ids.size(); ++i) body += (i ? "," : "") + std::to_string(ids[i]);
  EXPECT_EQ(json::parse(detokenize(body + "]}", tok))["content"].as_string(), "Hello world");
  for (const char* bad : {R"({})", R"({"tokens": "1"})", R"({"tokens": [99999]})", R"({"content": 1})"}) {
    EXPECT_THROW(detokenize(bad, tok), ApiError) << bad;
  }
  EXPECT_THROW(tokenize(R"({"content": 1})", tok), ApiError);
  EXPECT_THROW(tokenize(R"({})", tok), ApiError);
}

namespace {

// The events of a made-up generation, with logprobs (ids of ASCII tokens).
std::vector<llm::TokenEvent> events_of(const std::vector<std::string>& texts) {
  auto ids = model().tok.encode("Hello, brave new world of tokens", false);
  std::vector<llm::TokenEvent> ev;
  for (size_t i = 0; i < texts.size(); ++i) {
    llm::TokenEvent e;
    e.id = ids.at(i);
    e.text = texts[i];
    e.logprob = -0.25f * float(i + 1);
    e.top = {{e.id, e.logprob}, {ids.at(i + 1), -3.0f}};
    ev.push_back(e);
  }
  return ev;
}

llm::RequestResult result_of(llm::StopReason stop, std::string tail) {
  llm::RequestResult r;
  r.stop = stop;
  r.text_tail = std::move(tail);
  r.prompt_tokens = 5;
  r.cached_tokens = 2;
  r.completion_tokens = 4;
  return r;
}

// The JSON payloads of an SSE stream, without "[DONE]" (checked to be last).
std::vector<json::Value> events_in(const std::string& sse) {
  std::vector<json::Value> out;
  size_t pos = 0;
  bool done = false;
  while (pos < sse.size()) {
    size_t end = sse.find("\n\n", pos);
    EXPECT_NE(end, std::string::npos) << "unterminated event";
    if (end == std::string::npos) break;
    std::string ev = sse.substr(pos, end - pos);
    pos = end + 2;
    EXPECT_TRUE(ev.starts_with("data: ")) << ev;
    EXPECT_FALSE(done) << "an event after [DONE]";
    if (ev == "data: [DONE]")
      done = true;
    else
      out.push_back(json::parse(ev.substr(6)));
  }
  EXPECT_TRUE(done);
  return out;
}

}  // namespace

TEST(ServerResponse, StreamedChunksAddUpToTheWholeAnswer) {
  for (Api api : {Api::Completions, Api::Chat}) {
    ApiRequest req = parse(api, api == Api::Chat ? R"({"messages": [{"role": "user", "content": "x"}],
        "logprobs": true, "top_logprobs": 2, "stream": true, "stream_options": {"include_usage": true}})"
                                                 : R"({"prompt": "x", "logprobs": 2, "stream": true,
        "stream_options": {"include_usage": true}})");
    auto events = events_of({"Hel", "", "lo", " w"});  // an empty piece: text held back
    auto result = result_of(llm::StopReason::MaxTokens, "orld");

    ResponseBuilder whole(req, model().info, "id-1", 1234);
    for (const auto& e : events) whole.add(e);
    json::Value body = json::parse(whole.body(result));
    EXPECT_EQ(body["id"].as_string(), "id-1");
    EXPECT_EQ(body["model"].as_string(), "tiny");
    EXPECT_EQ(body["created"].as_int(), 1234);
    EXPECT_EQ(body["object"].as_string(), api == Api::Chat ? "chat.completion" : "text_completion");
    const json::Value& c = body["choices"][0];
    std::string text = api == Api::Chat ? c["message"]["content"].as_string() : c["text"].as_string();
    EXPECT_EQ(text, "Hello world");
    if (api == Api::Chat) {
      EXPECT_EQ(c["message"]["role"].as_string(), "assistant");
    }
    EXPECT_EQ(c["finish_reason"].as_string(), "length");
    EXPECT_EQ(body["usage"]["prompt_tokens"].as_int(), 5);
    EXPECT_EQ(body["usage"]["completion_tokens"].as_int(), 4);
    EXPECT_EQ(body["usage"]["total_tokens"].as_int(), 9);
    EXPECT_EQ(body["usage"]["prompt_tokens_details"]["cached_tokens"].as_int(), 2);

    // Logprobs: one entry per token, the chosen token's logprob and the N best.
    const json::Value& lp = c["logprobs"];
    if (api == Api::Chat) {
      ASSERT_EQ(lp["content"].size(), 4u);
      for (size_t i = 0; i < 4; ++i) {
        const json::Value& entry = lp["content"][i];
        int32_t id = events[i].id;
        EXPECT_EQ(entry["token"].as_string(), model().tok.decode(std::span<const int32_t>(&id, 1)));
        EXPECT_FLOAT_EQ(float(entry["logprob"].as_double()), events[i].logprob);
        EXPECT_EQ(entry["bytes"].size(), entry["token"].as_string().size());
        ASSERT_EQ(entry["top_logprobs"].size(), 2u);
        EXPECT_FLOAT_EQ(float(entry["top_logprobs"][1]["logprob"].as_double()), -3.0f);
      }
    } else {
      ASSERT_EQ(lp["tokens"].size(), 4u);
      ASSERT_EQ(lp["token_logprobs"].size(), 4u);
      ASSERT_EQ(lp["top_logprobs"].size(), 4u);
      ASSERT_EQ(lp["text_offset"].size(), 4u);
      size_t offset = 0;
      for (size_t i = 0; i < 4; ++i) {
        EXPECT_EQ(lp["text_offset"][i].as_int(), int64_t(offset));
        offset += lp["tokens"][i].as_string().size();  // ASCII here: characters = bytes
        EXPECT_FLOAT_EQ(float(lp["token_logprobs"][i].as_double()), events[i].logprob);
        EXPECT_EQ(lp["top_logprobs"][i].size(), 2u);
      }
    }

    // Streamed: the same text, the same logprobs entries, the reason on the last choice chunk, the
    // usage in a chunk of its own, then [DONE].
    ResponseBuilder streamed(req, model().info, "id-1", 1234);
    std::string sse = streamed.first_chunk();
    for (const auto& e : events) sse += streamed.chunk(e);
    sse += streamed.last_chunks(result);
    auto chunks = events_in(sse);
    ASSERT_GE(chunks.size(), 3u);
    std::string streamed_text;
    json::Value streamed_lp = json::Value::array();
    for (size_t i = 0; i + 1 < chunks.size(); ++i) {
      const json::Value& ch = chunks[i];
      EXPECT_EQ(ch["object"].as_string(), api == Api::Chat ? "chat.completion.chunk" : "text_completion");
      EXPECT_EQ(ch["id"].as_string(), "id-1");
      ASSERT_EQ(ch["choices"].size(), 1u);
      const json::Value& cc = ch["choices"][0];
      if (api == Api::Chat) {
        if (const json::Value* t = cc["delta"].find("content")) streamed_text += t->as_string();
        if (i == 0) {
          EXPECT_EQ(cc["delta"]["role"].as_string(), "assistant");
        }
      } else {
        streamed_text += cc["text"].as_string();
      }
      bool last_choice = i + 2 == chunks.size();
      EXPECT_EQ(cc["finish_reason"].is_null(), !last_choice);
      if (!cc["logprobs"].is_null())
        for (const auto& entry : (api == Api::Chat ? cc["logprobs"]["content"] : cc["logprobs"]["tokens"]).items())
          streamed_lp.push_back(entry);
    }
    EXPECT_EQ(streamed_text, text);
    EXPECT_EQ(streamed_lp, api == Api::Chat ? lp["content"] : lp["tokens"]);
    EXPECT_EQ(chunks.back()["choices"].size(), 0u);
    EXPECT_EQ(chunks.back()["usage"], body["usage"]);
    EXPECT_EQ(chunks[chunks.size() - 2]["choices"][0]["finish_reason"].as_string(), "length");
  }
}

TEST(ServerResponse, FinishReasonsAndFailures) {
  EXPECT_STREQ(finish_reason(llm::StopReason::Eos), "stop");
  EXPECT_STREQ(finish_reason(llm::StopReason::StopString), "stop");
  EXPECT_STREQ(finish_reason(llm::StopReason::MaxTokens), "length");
  EXPECT_STREQ(finish_reason(llm::StopReason::ContextFull), "length");

  ApiRequest req = parse(Api::Completions, R"({"prompt": "x", "stream": true})");
  // Without include_usage: no usage chunk; without logprobs: no empty chunks for held-back text.
  ResponseBuilder b(req, model().info, "id", 1);
  EXPECT_EQ(b.first_chunk(), "");
  EXPECT_EQ(b.chunk(events_of({""})[0]), "");
  auto chunks = events_in(b.last_chunks(result_of(llm::StopReason::Eos, "")));
  ASSERT_EQ(chunks.size(), 1u);
  EXPECT_EQ(chunks[0]["choices"][0]["finish_reason"].as_string(), "stop");
  EXPECT_FALSE(chunks[0].find("usage"));

  llm::RequestResult failed = result_of(llm::StopReason::MaxTokens, "");
  failed.error = "the KV pool is too small";
  chunks = events_in(ResponseBuilder(req, model().info, "id", 1).last_chunks(failed));
  ASSERT_EQ(chunks.size(), 1u);
  EXPECT_NE(chunks[0]["error"]["message"].as_string().find("KV pool"), std::string::npos);
  EXPECT_EQ(chunks[0]["error"]["type"].as_string(), "server_error");
  try {
    ResponseBuilder(req, model().info, "id", 1).body(failed);
    FAIL() << "a failed generation gave a body";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status, 500);
  }
  try {
    ResponseBuilder(req, model().info, "id", 1).body(result_of(llm::StopReason::Cancelled, ""));
    FAIL() << "a cancelled generation gave a body";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status, 503);
  }
}

TEST(ServerResponse, ErrorBodyIsOpenAIs) {
  json::Value e = json::parse(error_body(ApiError(400, "bad \"x\"", "invalid_request_error", "x", "c")));
  EXPECT_EQ(e["error"]["message"].as_string(), "bad \"x\"");
  EXPECT_EQ(e["error"]["type"].as_string(), "invalid_request_error");
  EXPECT_EQ(e["error"]["param"].as_string(), "x");
  EXPECT_EQ(e["error"]["code"].as_string(), "c");
  e = json::parse(error_body(ApiError(401, "no")));
  EXPECT_TRUE(e["error"]["param"].is_null());
  EXPECT_TRUE(e["error"]["code"].is_null());
}

TEST(ServerMetrics, PrometheusText) {
  Metrics m;
  m.request("/v1/completions", 200);
  m.request("/v1/completions", 200);
  m.request("/v1/completions", 400);
  m.first_token(0.03);
  m.first_token(0.3);
  m.first_token(1000);
  m.finished(2);
  EngineGauges g;
  g.scheduler.queued = 3;
  g.scheduler.running = 5;
  g.scheduler.kv_blocks_used = 10;
  g.scheduler.kv_blocks_total = 32;
  g.scheduler.generated_tokens = 1234;
  g.scheduler.decode_tokens_per_s = 56.5;
  g.scheduler.draft_proposed = 90;
  g.scheduler.draft_accepted = 61;
  g.scheduler.draft_verifies = 30;
  g.gpu_buffer_bytes = 4096;
  std::string text = m.text(g);
  auto has = [&](const std::string& line) {
    EXPECT_NE(text.find("\n" + line + "\n"), std::string::npos) << "missing: " << line << "\n" << text;
  };
  has(R"(wgc_requests_total{route="/v1/completions",status="200"} 2)");
  has(R"(wgc_requests_total{route="/v1/completions",status="400"} 1)");
  has(R"(wgc_time_to_first_token_seconds_bucket{le="0.025"} 0)");
  has(R"(wgc_time_to_first_token_seconds_bucket{le="0.05"} 1)");
  has(R"(wgc_time_to_first_token_seconds_bucket{le="0.5"} 2)");
  has(R"(wgc_time_to_first_token_seconds_bucket{le="120"} 2)");
  has(R"(wgc_time_to_first_token_seconds_bucket{le="+Inf"} 3)");
  has("wgc_time_to_first_token_seconds_count 3");
  has("wgc_time_to_first_token_seconds_sum 1000.33");
  has("wgc_request_duration_seconds_count 1");
  has("wgc_queue_length 3");
  has("wgc_running_sequences 5");
  has("wgc_kv_blocks_used 10");
  has("wgc_kv_blocks_free 22");
  has("wgc_generation_tokens_total 1234");
  has("wgc_generation_tokens_per_second 56.5");
  has("wgc_gpu_buffer_bytes 4096");
  has("wgc_draft_tokens_total 90");
  has("wgc_draft_tokens_accepted_total 61");
  has("wgc_draft_verify_passes_total 30");
  has("# TYPE wgc_time_to_first_token_seconds histogram");
  // Every sample line is "name{labels} value" or "name value", with HELP and TYPE before it.
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.starts_with("#")) continue;
    size_t sp = line.rfind(' ');
    ASSERT_NE(sp, std::string::npos) << line;
    char* end = nullptr;
    std::strtod(line.c_str() + sp + 1, &end);
    EXPECT_EQ(*end, '\0') << line;
    std::string name = line.substr(0, std::min(line.find('{'), sp));
    for (const char* suffix : {"_bucket", "_sum", "_count"}) {
      std::string base = name.substr(0, name.size() - std::strlen(suffix));
      if (name.ends_with(suffix) && text.find("# TYPE " + base + " histogram") != std::string::npos) name = base;
    }
    EXPECT_NE(text.find("# TYPE " + name + " "), std::string::npos) << line;
  }
}

TEST(ServerRequest, TokenizeAnswerInParts) {
  // A long /tokenize answer is written in parts (its pieces are ~10x the text): the parts, joined,
  // are the whole answer, at any part size.
  const auto& tok = model().tok;
  std::string text;
  for (int i = 0; i < 40; ++i) text += "The moon \u00e9\u4e2d " + std::to_string(i) + ". ";
  for (bool pieces : {false, true}) {
    std::string body = R"({"content": ")" + text + R"(", "with_pieces": )" + (pieces ? "true" : "false") + "}";
    std::string whole = tokenize(body, tok);
    TokenizeAnswer t = tokenize_request(body, tok);
    ASSERT_GT(t.ids.size(), 40u);
    for (size_t part : {size_t(1), size_t(7), t.ids.size()}) {
      std::string joined;
      for (size_t at = 0; at < t.ids.size(); at += part)
        joined += tokenize_answer_part(t, at, std::min(at + part, t.ids.size()), tok);
      EXPECT_EQ(joined, whole) << "parts of " << part;
    }
    EXPECT_EQ(json::parse(whole)["tokens"].size(), t.ids.size());
  }
  TokenizeAnswer none = tokenize_request(R"({"content": ""})", tok);
  EXPECT_EQ(tokenize_answer_part(none, 0, 0, tok), R"({"tokens":[]})");
}

// ---- The connection table (server/connections.h), over socket pairs ------------------------------

namespace {

struct Pair {
  int ours = -1, theirs = -1;
  Pair() {
    int fds[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0) {
      ours = fds[0];
      theirs = fds[1];
    }
  }
  ~Pair() {
    ::close(ours);
    ::close(theirs);
  }
  // Our end was shut for reading by the table (a cut): a read sees the end at once.
  bool cut_for_reading() const {
    char c;
    return ::recv(ours, &c, 1, MSG_DONTWAIT) == 0;
  }
};

}  // namespace

TEST(ServerConnections, CapsRefuseOrMakeRoomFromIdleAndSlowConnections) {
  ConnectionTable table({.total = 3, .per_client = 2, .evictable_after = std::chrono::milliseconds(20)});
  Pair a1, a2, a3, b1, b2;
  std::string why;
  auto c1 = table.admit(a1.ours, "10.0.0.1", why);
  auto c2 = table.admit(a2.ours, "10.0.0.1", why);
  ASSERT_TRUE(c1 && c2);
  table.enter(*c1, Phase::Handling);
  table.enter(*c2, Phase::Handling);
  // The per-client cap, and nothing to cut (both run a request): refused, saying which cap.
  EXPECT_EQ(table.admit(a3.ours, "10.0.0.1", why), nullptr);
  EXPECT_NE(why.find("too many connections from 10.0.0.1 (at most 2 per client"), std::string::npos) << why;
  // Another client still gets in, up to the total.
  auto c3 = table.admit(b1.ours, "10.0.0.2", why);
  ASSERT_TRUE(c3);
  table.enter(*c3, Phase::Head);  // receiving its request, but for less than evictable_after
  EXPECT_EQ(table.admit(b2.ours, "10.0.0.2", why), nullptr);
  EXPECT_NE(why.find("too many connections (at most 3"), std::string::npos) << why;
  // Once it has been receiving for longer, it is cut to make room (never the ones that run a request).
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  auto c4 = table.admit(b2.ours, "10.0.0.2", why);
  ASSERT_TRUE(c4);
  EXPECT_EQ(c3->cut.load(), Cut::Evicted);
  EXPECT_TRUE(b1.cut_for_reading());
  EXPECT_EQ(c1->cut.load(), Cut::None);
  EXPECT_FALSE(a1.cut_for_reading());
  // An idle connection of the same client makes room under the per-client cap.
  table.enter(*c2, Phase::Idle);
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  table.release(*c3);  // the cut one leaves
  auto c5 = table.admit(a3.ours, "10.0.0.1", why);
  ASSERT_TRUE(c5) << why;
  EXPECT_EQ(c2->cut.load(), Cut::Evicted);
  auto n = table.counts();
  EXPECT_EQ(n.open, 4u);  // c1, c2 (cut, not yet released), c4, c5
  EXPECT_EQ(n.refused, 2u);
  EXPECT_EQ(n.evicted, 2u);
  // Shutdown: every connection cut, new ones refused.
  table.close_all();
  EXPECT_EQ(c1->cut.load(), Cut::Stopping);
  EXPECT_EQ(c2->cut.load(), Cut::Evicted);  // an earlier cut stays
  EXPECT_TRUE(a1.cut_for_reading());
  Pair late;
  EXPECT_EQ(table.admit(late.ours, "10.0.0.3", why), nullptr);
  EXPECT_EQ(why, "the server is shutting down");
}

// docs/serving.md's table of options and `wgc serve --help` name the same flags (the docs listed
// four that the binary had lost).
TEST(ServeDocs, OptionsTableMatchesTheBinary) {
  auto flags = [](const std::string& text) {
    std::set<std::string> out;
    for (size_t at = text.find("--"); at != std::string::npos; at = text.find("--", at + 2)) {
      size_t end = at + 2;
      while (end < text.size() && (std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '-')) ++end;
      if (end > at + 2) out.insert(text.substr(at, end - at));
      at = end - 2;
    }
    return out;
  };
  std::ifstream in(std::string(WGC_SOURCE_DIR) + "/docs/serving.md");
  std::string line, table;
  bool inside = false;
  while (std::getline(in, line)) {
    if (line.starts_with("## ")) inside = line == "## Options";
    if (inside && line.starts_with("| `")) table += line.substr(0, line.find(" | ", 2)) + "\n";  // the first column
  }
  auto documented = flags(table);
  ASSERT_GT(documented.size(), 10u);
  test::CliResult help = test::run_cli("serve --help");
  ASSERT_EQ(help.rc, 0) << help.err;
  auto binary = flags(help.out);
  binary.erase("--help");
  EXPECT_EQ(documented, binary);
  // The queue's refusal is a 503 (it once said 429).
  EXPECT_EQ(help.out.find("429"), std::string::npos);
}
