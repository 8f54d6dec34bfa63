// The HTTP API's tools, tool_choice, response_format and grammar (src/server/structured.cpp) and
// the answers with tool calls (src/server/response.cpp), without a GPU: which requests get a
// grammar and which have their reply parsed for calls, every refusal naming its field (limits
// included), a tool round trip's messages rendered through a chat template that shows tools, and
// tool calls in the whole answer and as streamed deltas that add up to it. The server over HTTP:
// tests/serve/structured.test.mjs.
#include "server/request.h"
#include "server/response.h"
#include "test_server_util.h"
#include "util/json.h"

using namespace wgc;
using namespace wgc::server;
namespace json = wgc::json;

namespace {

const test::ServerModel& model() { return test::server_model(); }

const char* kTools = R"([{"type": "function", "function": {"name": "get_weather", "description": "Weather now",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}},
    {"type": "function", "function": {"name": "add", "parameters": {"type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}}}])";

std::string chat(const std::string& extra) {
  return R"({"messages": [{"role": "user", "content": "weather in Oslo?"}])" + extra + "}";
}

ApiError refusal(Api api, const std::string& body) {
  try {
    parse_request(api, body, model().plain_info);
  } catch (const ApiError& e) {
    return e;
  }
  ADD_FAILURE() << "accepted: " << body;
  return ApiError(0, "");
}

std::string prompt_text(const ApiRequest& r) { return model().tok.decode(r.generation.prompt); }

}  // namespace

TEST(ServerStructured, WhatGetsAGrammarAndWhatIsParsed) {
  const ModelInfo& m = model().plain_info;
  const std::string tools = std::string(", \"tools\": ") + kTools;
  struct Case {
    std::string body;
    bool grammar, parse;
  };
  const Case cases[] = {
      {chat(""), false, false},
      {chat(tools), false, true},  // auto
      {chat(tools + R"(, "tool_choice": "auto")"), false, true},
      {chat(tools + R"(, "tool_choice": "none")"), false, false},
      {chat(tools + R"(, "tool_choice": "required")"), true, true},
      {chat(tools + R"(, "tool_choice": {"type": "function", "function": {"name": "add"}})"), true, true},
      {chat(R"(, "tools": [])"), false, false},
      {chat(R"(, "response_format": {"type": "text"})"), false, false},
      {chat(R"(, "response_format": {"type": "json_object"})"), true, false},
      {chat(R"(, "response_format": {"type": "json_schema", "json_schema": {"name": "x", "strict": true,
           "schema": {"type": "object", "properties": {"a": {"type": "integer"}}}}})"),
       true, false},
      {chat(R"(, "grammar": "root ::= \"yes\" | \"no\"")"), true, false},
      {R"({"prompt": "x", "response_format": {"type": "json_object"}})", true, false},
      {R"({"prompt": "x", "grammar": "root ::= [0-9]+"})", true, false},
  };
  for (const Case& c : cases) {
    const Api api = c.body.find("\"prompt\"") != std::string::npos ? Api::Completions : Api::Chat;
    ApiRequest r = parse_request(api, c.body, m);
    EXPECT_EQ(bool(r.generation.grammar), c.grammar) << c.body;
    EXPECT_EQ(r.structured.parse_tools, c.parse) << c.body;
    // Under a grammar the plain-text rendering's "\nuser:" stop is left out (the grammar ends it).
    if (api == Api::Chat) {
      EXPECT_EQ(r.generation.stop.empty(), c.grammar) << c.body;
    }
  }
  // A template without tools (the plain fallback): described in a system message.
  ApiRequest r = parse_request(Api::Chat, chat(tools), m);
  const std::string p = prompt_text(r);
  EXPECT_NE(p.find("system: You can call these functions"), std::string::npos) << p;
  EXPECT_NE(p.find("\"get_weather\""), std::string::npos) << p;
  EXPECT_NE(p.find("user: weather in Oslo?"), std::string::npos) << p;
  EXPECT_EQ(r.structured.format, llm::ToolCallFormat::Generic);
}

TEST(ServerStructured, ToolRoundTripRendersThroughTheTemplate) {
  const std::string body = std::string(R"({"messages": [{"role": "user", "content": "weather in Oslo?"},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
        "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}}]},
      {"role": "tool", "tool_call_id": "c1", "content": "4 degrees"}], "tools": )") +
                           kTools + "}";
  ApiRequest r = parse_request(Api::Chat, body, model().hermes_info);
  EXPECT_EQ(r.structured.format, llm::ToolCallFormat::Hermes);
  const std::string p = prompt_text(r);
  EXPECT_NE(p.find("<tools>get_weather;add;</tools>"), std::string::npos) << p;
  // The call's arguments reach the template as an object (tojson prints it), the result its id.
  EXPECT_NE(p.find("<|assistant|><tool_call>get_weather {\"city\": \"Oslo\"}</tool_call>"), std::string::npos) << p;
  EXPECT_NE(p.find("<|tool|>4 degrees[c1]<|assistant|>"), std::string::npos) << p;
}

TEST(ServerStructured, RefusalsNameTheFieldAndTheLimit) {
  const Api H = Api::Chat;
  std::string many = "[";
  for (size_t i = 0; i <= kMaxTools; ++i)
    many += std::string(i ? "," : "") + R"({"type": "function", "function": {"name": "f)" + std::to_string(i) + "\"}}";
  many += "]";
  struct Case {
    std::string body, param, words;
  };
  const Case cases[] = {
      {chat(R"(, "tools": {})"), "tools", "must be an array"},
      {chat(R"(, "tools": [{"type": "code"}])"), "tools", "type' must be \"function\""},
      {chat(R"(, "tools": [{"type": "function"}])"), "tools", "function' must be an object"},
      {chat(R"(, "tools": [{"type": "function", "function": {"name": "a b"}}])"), "tools", "only letters"},
      {chat(R"(, "tools": [{"type": "function", "function": {"name": ""}}])"), "tools", "1 to 64 bytes"},
      {chat(R"(, "tools": [{"type": "function", "function": {"name": "f"}}, {"type": "function",
           "function": {"name": "f"}}])"),
       "tools", "given twice"},
      {chat(R"(, "tools": [{"type": "function", "function": {"name": "f", "parameters": 3}}])"), "tools",
       "parameters' must be an object"},
      {chat(", \"tools\": " + many), "tools", "at most 128 functions"},
      {chat(R"(, "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object",
           "properties": {"s": {"type": "string", "pattern": "^a"}}}}}], "tool_choice": "required")"),
       "tools", "pattern"},
      {chat(R"(, "tool_choice": "required")"), "tool_choice", "gives none"},
      {chat(std::string(", \"tools\": ") + kTools + R"(, "tool_choice": "maybe")"), "tool_choice", "got 'maybe'"},
      {chat(std::string(", \"tools\": ") + kTools + R"(, "tool_choice": {"type": "function", "function":
           {"name": "nope"}})"),
       "tool_choice", "not in 'tools'"},
      {chat(std::string(", \"tools\": ") + kTools + R"(, "parallel_tool_calls": 1)"), "parallel_tool_calls",
       "a boolean"},
      {chat(R"(, "functions": [{"name": "f"}])"), "functions", "give 'tools'"},
      {chat(R"(, "response_format": "json")"), "response_format", "an object"},
      {chat(R"(, "response_format": {"type": "json_schema"})"), "response_format", "json_schema' must be an object"},
      {chat(R"(, "response_format": {"type": "json_schema", "json_schema": {"schema": {"type": "string",
           "format": "email"}}})"),
       "response_format", "format"},
      {chat(R"(, "response_format": {"type": "json_schema", "json_schema": {"strict": "yes", "schema": {}}})"),
       "response_format", "strict' must be a boolean"},
      {chat(R"(, "grammar": 5)"), "grammar", "a string"},
      {chat(R"(, "grammar": "root ::= (")"), "grammar", "line 1"},
      {chat(R"(, "grammar": "start ::= \"a\"")"), "grammar", "root"},
      {chat(R"(, "grammar": "root ::= root \"a\"")"), "grammar", "left-recursive"},
      {chat(", \"grammar\": \"root ::= " + std::string(kMaxGrammarBytes, 'a') + "\""), "grammar",
       "at most 65536 bytes"},
      {chat(R"(, "grammar": "root ::= \"a\"", "response_format": {"type": "json_object"})"), "grammar",
       "cannot be combined"},
      {chat(std::string(", \"tools\": ") + kTools +
            R"(, "tool_choice": "required", "response_format": {"type": "json_object"})"),
       "response_format", "cannot be combined"},
      {chat(R"(, "grammar": "root ::= \"a\"", "ignore_eos": true)"), "ignore_eos", "cannot be combined"},
      {R"({"messages": [{"role": "user", "content": "x", "tool_calls": []}]})", "messages", "for assistant"},
      {R"({"messages": [{"role": "assistant", "tool_calls": [{"function": {}}]}]})", "messages", "must be {"},
      {R"({"messages": [{"role": "tool", "tool_call_id": 5, "content": "x"}]})", "messages", "must be a string"},
      {R"({"prompt": "x", "tool_choice": "none"})", "tool_choice", "/v1/chat/completions"},
  };
  for (const Case& c : cases) {
    const Api api = c.body.find("\"prompt\"") != std::string::npos ? Api::Completions : H;
    ApiError e = refusal(api, c.body);
    EXPECT_EQ(e.status, 400) << c.body.substr(0, 300);
    EXPECT_EQ(e.param, c.param) << c.body.substr(0, 300) << " -> " << e.what();
    EXPECT_NE(std::string(e.what()).find(c.words), std::string::npos) << c.body.substr(0, 300) << " -> " << e.what();
  }
}

namespace {

std::vector<json::Value> events_in(const std::string& sse) {
  std::vector<json::Value> out;
  size_t pos = 0;
  while (pos < sse.size()) {
    const size_t end = sse.find("\n\n", pos);
    if (end == std::string::npos) break;
    const std::string ev = sse.substr(pos, end - pos);
    pos = end + 2;
    if (ev != "data: [DONE]") out.push_back(json::parse(ev.substr(6)));
  }
  return out;
}

llm::TokenEvent token(std::string text) {
  llm::TokenEvent e;
  e.id = 5;
  e.text = std::move(text);
  return e;
}

}  // namespace

TEST(ServerStructured, ToolCallsWholeAndStreamedAgree) {
  const std::string body =
      R"({"messages": [{"role": "user", "content": "hi"}], "stream": true, "tools": )" + std::string(kTools) + "}";
  ApiRequest req = parse_request(Api::Chat, body, model().hermes_info);
  // Text, then two Hermes calls, split at awkward places.
  const std::vector<std::string> pieces = {
      "Let me ", "check.\n<tool", "_call>\n{\"name\": \"get_weather\", \"argu", "ments\": {\"city\": \"Oslo\"}}\n",
      "</tool_call>\n<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}}\n</tool_call>"};
  llm::RequestResult result;
  result.stop = llm::StopReason::Eos;

  ResponseBuilder whole(req, model().hermes_info, "chatcmpl-7", 1);
  for (const auto& p : pieces) whole.add(token(p));
  const json::Value b = json::parse(whole.body(result));
  const json::Value& choice = b["choices"][0];
  EXPECT_EQ(choice["finish_reason"].as_string(), "tool_calls");
  const json::Value& msg = choice["message"];
  EXPECT_EQ(msg["content"].as_string(), "Let me check.");
  ASSERT_EQ(msg["tool_calls"].size(), 2u);
  EXPECT_EQ(msg["tool_calls"][0]["id"].as_string(), "call_7_0");
  EXPECT_EQ(msg["tool_calls"][0]["type"].as_string(), "function");
  EXPECT_EQ(msg["tool_calls"][0]["function"]["name"].as_string(), "get_weather");
  EXPECT_EQ(json::parse(msg["tool_calls"][0]["function"]["arguments"].as_string())["city"].as_string(), "Oslo");
  EXPECT_EQ(msg["tool_calls"][1]["function"]["name"].as_string(), "add");
  EXPECT_EQ(json::parse(msg["tool_calls"][1]["function"]["arguments"].as_string())["b"].as_int(), 2);

  // Streamed: the content deltas never show a call's text, and the deltas add up to the same.
  ResponseBuilder sb(req, model().hermes_info, "chatcmpl-7", 1);
  std::string sse = sb.first_chunk();
  for (const auto& p : pieces) sse += sb.chunk(token(p));
  sse += sb.last_chunks(result);
  std::string content, finish;
  json::Value calls = json::Value::array();
  for (const json::Value& ev : events_in(sse)) {
    const json::Value& c = ev["choices"][0];
    const json::Value& d = c["delta"];
    if (const json::Value* t = d.find("content"); t && t->is_string()) content += t->as_string();
    if (const json::Value* tc = d.find("tool_calls")) {
      for (const json::Value& part : tc->items()) {
        const size_t i = size_t(part["index"].as_int());
        if (i == calls.size()) {
          json::Value call = json::Value::object();
          call.set("id", part["id"]);
          call.set("name", part["function"]["name"]);
          call.set("arguments", "");
          calls.push_back(std::move(call));
        }
        ASSERT_LT(i, calls.size());
        json::Value& call = calls.items()[i];
        call.set("arguments", call["arguments"].as_string() + part["function"]["arguments"].as_string());
      }
    }
    if (c["finish_reason"].is_string()) finish = c["finish_reason"].as_string();
  }
  EXPECT_EQ(content.find("tool_call"), std::string::npos) << content;
  EXPECT_EQ(content.substr(0, 13), "Let me check.");
  EXPECT_EQ(finish, "tool_calls");
  ASSERT_EQ(calls.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(calls[i]["id"].as_string(), msg["tool_calls"][i]["id"].as_string());
    EXPECT_EQ(calls[i]["name"].as_string(), msg["tool_calls"][i]["function"]["name"].as_string());
    EXPECT_EQ(calls[i]["arguments"].as_string(), msg["tool_calls"][i]["function"]["arguments"].as_string());
  }

  // A reply without a call: plain content, finish_reason from the stop, all of it streamed.
  ResponseBuilder plain(req, model().hermes_info, "chatcmpl-8", 1);
  std::string s2;
  for (const char* p : {"It is ", "cold ", "<b>"}) s2 += plain.chunk(token(p));
  s2 += plain.last_chunks(result);
  std::string c2;
  for (const json::Value& ev : events_in(s2))
    if (const json::Value* t = ev["choices"][0]["delta"].find("content"); t && t->is_string()) c2 += t->as_string();
  EXPECT_EQ(c2, "It is cold <b>");
}
