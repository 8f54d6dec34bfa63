// OpenAI's Responses API (src/server/responses.cpp) without a GPU or HTTP: a Responses body
// translated into the chat request it means (instructions, string and item inputs, function
// calls and their outputs fed back, flat tools, tool_choice, text formats) and run through
// parse_request and a chat template that shows tools; every refusal naming the Responses field;
// the answer's `response` object, and its stream of events (sequence numbers, the order the openai
// client accumulates) adding up to the same object, with text, tool calls, a cut at
// max_output_tokens and a failure. Over HTTP with the openai client: tests/serve/responses.test.mjs.
#include "server/request.h"
#include "server/responses.h"
#include "test_server_util.h"
#include "util/json.h"

using namespace wgc;
using namespace wgc::server;
namespace json = wgc::json;

namespace {

const test::ServerModel& model() { return test::server_model(); }

const char* kTools = R"([{"type": "function", "name": "get_weather", "description": "Weather now", "strict": true,
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"],
    "additionalProperties": false}},
    {"type": "function", "name": "add", "parameters": {"type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}}])";

llm::TokenEvent token(std::string text) {
  llm::TokenEvent e;
  e.text = std::move(text);
  return e;
}

llm::RequestResult result_of(llm::StopReason stop) {
  llm::RequestResult r;
  r.stop = stop;
  r.prompt_tokens = 7;
  r.cached_tokens = 3;
  r.completion_tokens = 5;
  return r;
}

// The events of a Responses stream: "event: TYPE\ndata: {...}" each, its type repeated in the data.
std::vector<json::Value> events_in(const std::string& sse) {
  std::vector<json::Value> out;
  size_t pos = 0;
  while (pos < sse.size()) {
    const size_t end = sse.find("\n\n", pos);
    EXPECT_NE(end, std::string::npos) << "unterminated event";
    if (end == std::string::npos) break;
    const std::string ev = sse.substr(pos, end - pos);
    pos = end + 2;
    const size_t nl = ev.find('\n');
    EXPECT_TRUE(ev.starts_with("event: ") && nl != std::string::npos) << ev;
    EXPECT_EQ(ev.substr(nl + 1, 6), "data: ") << ev;
    json::Value v = json::parse(ev.substr(nl + 7));
    EXPECT_EQ(v["type"].as_string(), ev.substr(7, nl - 7));
    out.push_back(std::move(v));
  }
  return out;
}

// What the openai client's accumulator makes of the events (lib/responses/ResponseAccumulator):
// the last response snapshot with its items replaced by those the events built, checking that
// every event refers to an item and part that exist.
json::Value accumulate(const std::vector<json::Value>& events) {
  json::Value snapshot;
  uint64_t seq = 0;
  for (const json::Value& e : events) {
    EXPECT_EQ(e["sequence_number"].as_int(), int64_t(seq++));
    const std::string type = e["type"].as_string();
    if (seq == 1) {
      EXPECT_EQ(type, "response.created");
      snapshot = e["response"];
      continue;
    }
    json::Value& output = *snapshot.find("output");
    auto item = [&]() -> json::Value& {
      const size_t i = size_t(e["output_index"].as_int());
      EXPECT_LT(i, output.size()) << type;
      return output.items().at(i);
    };
    if (type == "response.output_item.added") {
      EXPECT_EQ(size_t(e["output_index"].as_int()), output.size());
      output.push_back(e["item"]);
    } else if (type == "response.output_item.done") {
      item() = e["item"];
    } else if (type == "response.content_part.added") {
      item().find("content")->push_back(e["part"]);
    } else if (type == "response.output_text.delta") {
      json::Value& part = item().find("content")->items().at(size_t(e["content_index"].as_int()));
      part.set("text", part["text"].as_string() + e["delta"].as_string());
    } else if (type == "response.output_text.done") {
      EXPECT_EQ(item()["content"][size_t(e["content_index"].as_int())]["text"], e["text"]);
    } else if (type == "response.content_part.done") {
      EXPECT_EQ(item()["content"][size_t(e["content_index"].as_int())], e["part"]);
    } else if (type == "response.function_call_arguments.delta") {
      json::Value& it = item();
      it.set("arguments", it["arguments"].as_string() + e["delta"].as_string());
    } else if (type == "response.function_call_arguments.done") {
      EXPECT_EQ(item()["arguments"], e["arguments"]);
    } else if (type == "response.in_progress" || type == "response.completed" || type == "response.incomplete" ||
               type == "response.failed") {
      json::Value built = output;
      snapshot = e["response"];
      if (type != "response.in_progress" && type != "response.failed") {
        EXPECT_EQ(snapshot["output"], built) << "the final response differs from what the events built";
      }
    } else {
      ADD_FAILURE() << "unexpected event " << type;
    }
  }
  return snapshot;
}

ResponsesRequest translate(const std::string& body) { return responses_to_chat(body); }

std::string words(int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += "word ";
  return s;
}

}  // namespace

TEST(ServerResponses, TranslatesToTheChatRequest) {
  ResponsesRequest t = translate(R"({"model": "m", "instructions": "Be brief", "input": "Hi",
      "max_output_tokens": 9, "temperature": 0.5, "top_p": 0.9, "seed": 4, "stream": true,
      "tools": )" + std::string(kTools) +
                                 R"(, "tool_choice": {"type": "function", "name": "add"},
      "parallel_tool_calls": false, "store": false, "metadata": {"k": "v"},
      "text": {"format": {"type": "json_schema", "name": "out", "strict": true, "schema": {"type": "object"}}}})");
  json::Value c = json::parse(t.chat);
  EXPECT_EQ(c["model"].as_string(), "m");
  EXPECT_EQ(c["max_tokens"].as_int(), 9);
  EXPECT_EQ(c["temperature"].as_double(), 0.5);
  EXPECT_EQ(c["top_p"].as_double(), 0.9);
  EXPECT_EQ(c["seed"].as_int(), 4);
  EXPECT_TRUE(c["stream"].as_bool());
  EXPECT_FALSE(c["parallel_tool_calls"].as_bool());
  EXPECT_EQ(c["messages"],
            json::parse(R"([{"role": "system", "content": "Be brief"}, {"role": "user", "content": "Hi"}])"));
  ASSERT_EQ(c["tools"].size(), 2u);
  EXPECT_EQ(c["tools"][0]["type"].as_string(), "function");
  EXPECT_EQ(c["tools"][0]["function"]["name"].as_string(), "get_weather");
  EXPECT_EQ(c["tools"][0]["function"]["description"].as_string(), "Weather now");
  EXPECT_TRUE(c["tools"][0]["function"]["strict"].as_bool());
  EXPECT_EQ(c["tools"][0]["function"]["parameters"]["required"][0].as_string(), "city");
  EXPECT_EQ(c["tool_choice"], json::parse(R"({"type": "function", "function": {"name": "add"}})"));
  EXPECT_EQ(c["response_format"],
            json::parse(R"({"type": "json_schema", "json_schema": {"name": "out", "schema": {"type": "object"},
                "strict": true}})"));
  // The response object repeats what was asked (defaults for what was not).
  EXPECT_EQ(t.echo["instructions"].as_string(), "Be brief");
  EXPECT_EQ(t.echo["max_output_tokens"].as_int(), 9);
  EXPECT_EQ(t.echo["tools"].size(), 2u);
  EXPECT_EQ(t.echo["metadata"]["k"].as_string(), "v");
  EXPECT_EQ(t.echo["text"]["format"]["name"].as_string(), "out");
  json::Value bare = translate(R"({"input": "x"})").echo;
  EXPECT_TRUE(bare["instructions"].is_null());
  EXPECT_EQ(bare["tool_choice"].as_string(), "auto");
  EXPECT_EQ(bare["text"]["format"]["type"].as_string(), "text");
  EXPECT_EQ(
      json::parse(
          translate(R"({"input": "x", "text": {"format": {"type": "json_object"}}})").chat)["response_format"]["type"]
          .as_string(),
      "json_object");
  EXPECT_FALSE(
      json::parse(translate(R"({"input": "x", "text": {"format": {"type": "text"}}})").chat).find("response_format"));

  // Items: parts joined, an answer fed back, function calls joining the assistant turn before
  // them, their outputs as tool messages; the chat template then renders the round trip.
  t = translate(R"({"input": [
      {"role": "user", "content": [{"type": "input_text", "text": "Weather "}, {"type": "input_text", "text": "in Oslo?"}]},
      {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Checking.", "annotations": []}]},
      {"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "get_weather", "arguments": "{\"city\": \"Oslo\"}", "status": "completed"},
      {"type": "function_call", "call_id": "c2", "name": "add", "arguments": "{\"a\": 1, \"b\": 2}"},
      {"type": "function_call_output", "call_id": "c1", "output": "4 degrees"},
      {"type": "function_call_output", "call_id": "c2", "output": [{"type": "input_text", "text": "3"}]},
      {"role": "developer", "content": "Answer now."}], "tools": )" +
                std::string(kTools) + "}");
  c = json::parse(t.chat);
  const json::Value& m = c["messages"];
  ASSERT_EQ(m.size(), 5u) << t.chat;
  EXPECT_EQ(m[0], json::parse(R"({"role": "user", "content": "Weather in Oslo?"})"));
  EXPECT_EQ(m[1]["role"].as_string(), "assistant");
  EXPECT_EQ(m[1]["content"].as_string(), "Checking.");
  ASSERT_EQ(m[1]["tool_calls"].size(), 2u);
  EXPECT_EQ(m[1]["tool_calls"][0], json::parse(R"({"id": "c1", "type": "function",
      "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}})"));
  EXPECT_EQ(m[1]["tool_calls"][1]["id"].as_string(), "c2");
  EXPECT_EQ(m[2], json::parse(R"({"role": "tool", "tool_call_id": "c1", "content": "4 degrees"})"));
  EXPECT_EQ(m[3], json::parse(R"({"role": "tool", "tool_call_id": "c2", "content": "3"})"));
  EXPECT_EQ(m[4], json::parse(R"({"role": "developer", "content": "Answer now."})"));
  ApiRequest r = parse_request(Api::Chat, t.chat, model().hermes_info);
  const std::string prompt = model().tok.decode(r.generation.prompt);
  EXPECT_NE(prompt.find("<tools>get_weather;add;</tools>"), std::string::npos) << prompt;
  EXPECT_NE(prompt.find("<|assistant|><tool_call>get_weather {\"city\": \"Oslo\"}</tool_call><tool_call>add"),
            std::string::npos)
      << prompt;
  EXPECT_NE(prompt.find("<|tool|>4 degrees[c1]<|tool|>3[c2]<|system|>Answer now.<|assistant|>"), std::string::npos)
      << prompt;
  // A call with no assistant message before it starts one.
  c = json::parse(translate(R"({"input": [{"role": "user", "content": "x"},
      {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"}]})")
                      .chat);
  ASSERT_EQ(c["messages"].size(), 2u);
  EXPECT_TRUE(c["messages"][1]["content"].is_null());
  EXPECT_EQ(c["messages"][1]["tool_calls"].size(), 1u);
}

TEST(ServerResponses, RefusalsNameTheField) {
  struct Case {
    std::string body, param, words;
  };
  const std::vector<Case> cases = {
      {R"({"input": )", "", "malformed JSON"},
      {R"([1])", "", "must be a JSON object"},
      {R"({})", "input", "'input' is required"},
      {R"({"input": 5})", "input", "a string or an array"},
      {R"({"input": "x", "previous_response_id": "resp_1"})", "previous_response_id", "not supported"},
      {R"({"input": "x", "conversation": "c1"})", "conversation", "not supported"},
      {R"({"input": "x", "reasoning": {"effort": "low"}})", "reasoning", "not supported"},
      {R"({"input": "x", "background": true})", "background", "not supported"},
      {R"({"input": "x", "truncation": "auto"})", "truncation", "disabled"},
      {R"({"input": "x", "include": ["reasoning.encrypted_content"]})", "include", "not supported"},
      {R"({"input": [{"type": "reasoning", "summary": []}]})", "input", "'reasoning' are not supported"},
      {R"({"input": [7]})", "input", "'input[0]' must be an object"},
      {R"({"input": [{"role": "tool", "content": "x"}]})", "input", "must be user, assistant, system or developer"},
      {R"({"input": [{"role": "user"}]})", "input", "'input[0].content' is required"},
      {R"({"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "u"}]}]})", "input",
       "only input_text and output_text"},
      {R"({"input": [{"role": "user", "content": [{"type": "input_text"}]}]})", "input", "'input[0].content[0].text'"},
      {R"({"input": [{"type": "function_call", "name": "f", "arguments": "{}"}]})", "input", "'input[0].call_id'"},
      {R"({"input": [{"type": "function_call", "call_id": "c", "name": "f", "arguments": {}}]})", "input",
       "'input[0].arguments' must be a string"},
      {R"({"input": [{"type": "function_call_output", "call_id": "c"}]})", "input", "'input[0].output' is required"},
      {R"({"input": "x", "tools": {}})", "tools", "'tools' must be an array"},
      {R"({"input": "x", "tools": [{"type": "web_search"}]})", "tools", "built-in tools such as 'web_search'"},
      {R"({"input": "x", "tool_choice": {"type": "web_search"}})", "tool_choice", "built-in tools"},
      {R"({"input": "x", "tool_choice": {"type": "function"}})", "tool_choice", "'tool_choice.name'"},
      {R"({"input": "x", "tool_choice": 3})", "tool_choice", "a string or an object"},
      {R"({"input": "x", "text": {"format": {"type": "xml"}}})", "text", "text, json_object or json_schema"},
      {R"({"input": "x", "text": 1})", "text", "'text' must be an object"},
      {R"({"input": "x", "max_output_tokens": 0})", "max_output_tokens", "at least 1"},
      {R"({"input": "x", "max_output_tokens": "5"})", "max_output_tokens", "at least 1"},
      {R"({"input": "x", "max_output_tokens": 2.5})", "max_output_tokens", "at least 1"},
      {R"({"input": "x", "instructions": 5})", "instructions", "must be a string"},
  };
  for (const Case& c : cases) {
    try {
      translate(c.body);
      ADD_FAILURE() << "accepted: " << c.body;
    } catch (const ApiError& e) {
      EXPECT_EQ(e.status, 400) << c.body;
      EXPECT_EQ(e.param, c.param) << c.body << ": " << e.what();
      EXPECT_NE(std::string(e.what()).find(c.words), std::string::npos) << c.body << ": " << e.what();
    }
  }
  // What parse_request refuses in the translated request is named by the Responses field.
  struct Later {
    std::string body, param;
  };
  for (const Later& c : std::vector<Later>{
           {R"({"input": "x", "temperature": 5})", "temperature"},
           {R"({"input": "x", "text": {"format": {"type": "json_schema", "name": "x", "schema": {"type": 5}}}})",
            "text"},
           {R"({"input": [], "max_output_tokens": 5})", "input"},
           {R"({"input": ")" + words(600) + R"("})", "input"},  // past the context
           {R"({"input": "x", "tools": [{"type": "function", "name": "a b"}]})", "tools"},
       }) {
    try {
      parse_request(Api::Chat, translate(c.body).chat, model().plain_info);
      ADD_FAILURE() << "accepted: " << c.body;
    } catch (const ApiError& e) {
      EXPECT_EQ(e.status, 400) << c.body;
      EXPECT_EQ(responses_param(e.param), c.param) << c.body << ": " << e.what();
    }
  }
  EXPECT_EQ(responses_param("max_tokens"), "max_output_tokens");
  // Allowed: the values that ask for what the server does anyway.
  EXPECT_NO_THROW(translate(R"({"input": "x", "background": false, "truncation": "disabled", "include": [],
      "store": true, "user": "u", "service_tier": "auto"})"));
}

TEST(ServerResponses, StreamedEventsAddUpToTheResponse) {
  const std::string body = R"({"input": "hi", "stream": true, "tools": )" + std::string(kTools) + "}";
  ResponsesRequest t = translate(body);
  ApiRequest req = parse_request(Api::Chat, t.chat, model().hermes_info);
  // Text, then two Hermes calls, split at awkward places.
  const std::vector<std::string> pieces = {
      "Let me ", "check.\n<tool", "_call>\n{\"name\": \"get_weather\", \"argu", "ments\": {\"city\": \"Oslo\"}}\n",
      "</tool_call>\n<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}}\n</tool_call>"};
  const llm::RequestResult eos = result_of(llm::StopReason::Eos);

  ResponsesAnswer whole(req, model().hermes_info, "resp_ab-7", 1234, t.echo);
  for (const auto& p : pieces) whole.add(token(p));
  const json::Value b = json::parse(whole.body(eos));
  EXPECT_EQ(b["id"].as_string(), "resp_ab-7");
  EXPECT_EQ(b["object"].as_string(), "response");
  EXPECT_EQ(b["created_at"].as_int(), 1234);
  EXPECT_EQ(b["status"].as_string(), "completed");
  EXPECT_EQ(b["model"].as_string(), "tiny");
  EXPECT_TRUE(b["error"].is_null());
  EXPECT_TRUE(b["incomplete_details"].is_null());
  EXPECT_EQ(b["tools"].size(), 2u);
  EXPECT_EQ(b["usage"], json::parse(R"({"input_tokens": 7, "input_tokens_details": {"cached_tokens": 3},
      "output_tokens": 5, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 12})"));
  const json::Value& out = b["output"];
  ASSERT_EQ(out.size(), 3u) << b.dump();
  EXPECT_EQ(out[0], json::parse(R"({"id": "msg_ab-7", "type": "message", "status": "completed", "role": "assistant",
      "content": [{"type": "output_text", "text": "Let me check.", "annotations": []}]})"));
  EXPECT_EQ(out[1]["type"].as_string(), "function_call");
  EXPECT_EQ(out[1]["id"].as_string(), "fc_ab-7_0");
  EXPECT_EQ(out[1]["call_id"].as_string(), "call_ab-7_0");
  EXPECT_EQ(out[1]["name"].as_string(), "get_weather");
  EXPECT_EQ(json::parse(out[1]["arguments"].as_string())["city"].as_string(), "Oslo");
  EXPECT_EQ(out[2]["name"].as_string(), "add");
  EXPECT_EQ(out[2]["call_id"].as_string(), "call_ab-7_1");
  EXPECT_EQ(json::parse(out[2]["arguments"].as_string())["b"].as_int(), 2);

  // Streamed: the text deltas never show a call's text; the events build the same response.
  ResponsesAnswer sa(req, model().hermes_info, "resp_ab-7", 1234, t.echo);
  std::string sse = sa.first_events();
  for (const auto& p : pieces) sse += sa.events(token(p));
  sse += sa.last_events(eos);
  const std::vector<json::Value> events = events_in(sse);
  for (const json::Value& e : events)
    if (e["type"].as_string() == "response.output_text.delta") {
      EXPECT_EQ(e["delta"].as_string().find("tool_call"), std::string::npos) << e.dump();
    }
  EXPECT_EQ(events[1]["type"].as_string(), "response.in_progress");
  EXPECT_EQ(events.back()["type"].as_string(), "response.completed");
  EXPECT_EQ(accumulate(events), b);

  // Whitespace at the text's ends (trimmed, as the parse leaves text beside calls) is not streamed
  // either; between words it is.
  for (const std::vector<std::string>& ws :
       {std::vector<std::string>{"  ", "\n Let", " me ", " check. ", "\n<tool_call>\n{\"name\": \"add\", ",
                                 "\"arguments\": {\"a\": 1, \"b\": 2}}\n</tool_call>"},
        std::vector<std::string>{" ", " Let me  check. \n", "\n"}}) {
    ResponsesAnswer w(req, model().hermes_info, "resp_3", 1, t.echo), s(req, model().hermes_info, "resp_3", 1, t.echo);
    std::string sse3 = s.first_events();
    for (const auto& p : ws) {
      w.add(token(p));
      sse3 += s.events(token(p));
    }
    const json::Value wb = json::parse(w.body(eos));
    EXPECT_EQ(wb["output"][0]["content"][0]["text"].as_string(), "Let me  check.");
    EXPECT_EQ(accumulate(events_in(sse3 + s.last_events(eos))), wb);
  }

  // Text alone, cut at max_output_tokens: "incomplete" with its reason; no tools: all text streamed.
  ApiRequest plain = parse_request(Api::Chat, translate(R"({"input": "hi", "stream": true})").chat, model().plain_info);
  for (bool cut : {true, false}) {
    const llm::RequestResult r = result_of(cut ? llm::StopReason::MaxTokens : llm::StopReason::StopString);
    ResponsesAnswer w(plain, model().plain_info, "resp_9", 1, t.echo),
        s(plain, model().plain_info, "resp_9", 1, t.echo);
    std::string sse2 = s.first_events();
    for (const char* p : {"It is ", "", "cold <tool_call>"}) {
      w.add(token(p));
      sse2 += s.events(token(p));
    }
    llm::RequestResult tail = r;
    tail.text_tail = "!";
    const json::Value wb = json::parse(w.body(tail));
    EXPECT_EQ(wb["status"].as_string(), cut ? "incomplete" : "completed");
    EXPECT_EQ(wb["output"][0]["status"].as_string(), cut ? "incomplete" : "completed");
    EXPECT_EQ(wb["output"][0]["content"][0]["text"].as_string(), "It is cold <tool_call>!");
    if (cut) {
      EXPECT_EQ(wb["incomplete_details"]["reason"].as_string(), "max_output_tokens");
    }
    const std::vector<json::Value> ev = events_in(sse2 + s.last_events(tail));
    EXPECT_EQ(ev.back()["type"].as_string(), cut ? "response.incomplete" : "response.completed");
    EXPECT_EQ(accumulate(ev), wb);
  }

  // Nothing generated: still a message (empty), as the client expects one item.
  ResponsesAnswer empty(plain, model().plain_info, "resp_1", 1, t.echo);
  const json::Value eb = json::parse(empty.body(result_of(llm::StopReason::Eos)));
  ASSERT_EQ(eb["output"].size(), 1u);
  EXPECT_EQ(eb["output"][0]["content"][0]["text"].as_string(), "");

  // A failure: the body is an error; the stream ends with response.failed naming it.
  llm::RequestResult failed = result_of(llm::StopReason::MaxTokens);
  failed.error = "the KV pool is too small";
  ResponsesAnswer f(plain, model().plain_info, "resp_2", 1, t.echo);
  EXPECT_THROW(f.body(failed), ApiError);
  ResponsesAnswer fs(plain, model().plain_info, "resp_2", 1, t.echo);
  std::string fsse = fs.first_events();
  fsse += fs.events(token("It"));
  const std::vector<json::Value> fev = events_in(fsse + fs.last_events(failed));
  EXPECT_EQ(fev.back()["type"].as_string(), "response.failed");
  EXPECT_EQ(fev.back()["response"]["status"].as_string(), "failed");
  EXPECT_NE(fev.back()["response"]["error"]["message"].as_string().find("KV pool"), std::string::npos);
  EXPECT_EQ(fev.back()["sequence_number"].as_int(), int64_t(fev.size() - 1));
}
