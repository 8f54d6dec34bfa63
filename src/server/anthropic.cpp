#include "server/anthropic.h"

#include "server/request_json.h"
#include "server/response.h"
#include "util/json.h"

#include <algorithm>

namespace wgc::server {
namespace {

using json::Value;

// A 400 whose field and place are one name.
ApiError wrong(const std::string& where, const char* want, const Value& got) {
  return server::wrong(where, where, want, got);
}

// A tool result's or system prompt's content: a string or text blocks.
std::string text_of(const Value& content, const std::string& where) {
  if (content.is_string()) return content.as_string();
  if (!content.is_array()) throw wrong(where, "a string or an array of text blocks", content);
  std::string text;
  for (const Value& b : content.items()) {
    if (!b.is_object() || b.get_string("type") != "text" || !field(b, "text") || !b["text"].is_string())
      throw bad_request(where, "'" + where + "' may hold only {\"type\": \"text\", \"text\": ...} blocks");
    text += b["text"].as_string();
  }
  return text;
}

// Anthropic's message (role user|assistant, content a string or blocks) as OpenAI messages
// appended to `out`: tool_result blocks become role "tool" messages, tool_use blocks tool_calls.
void add_message(const Value& m, size_t i, Value& out) {
  const std::string where = "messages[" + std::to_string(i) + "]";
  if (!m.is_object()) throw wrong(where, "an object", m);
  const std::string role = m.get_string("role");
  if (role != "user" && role != "assistant")
    throw bad_request("messages", "'" + where + ".role' must be user or assistant, got '" + role + "'");
  const Value* content = field(m, "content");
  if (!content) throw bad_request("messages", "'" + where + ".content' is required");
  Value msg = Value::object();
  msg.set("role", role);
  if (content->is_string()) {
    msg.set("content", content->as_string());
    out.push_back(std::move(msg));
    return;
  }
  if (!content->is_array()) throw wrong(where + ".content", "a string or an array of blocks", *content);
  std::string text;
  Value calls = Value::array();
  for (size_t k = 0; k < content->size(); ++k) {
    const Value& b = (*content)[k];
    const std::string bw = where + ".content[" + std::to_string(k) + "]";
    if (!b.is_object()) throw wrong(bw, "an object", b);
    const std::string type = b.get_string("type");
    if (type == "text") {
      text += text_of(Value(json::Array{b}), bw);
    } else if (type == "tool_use" && role == "assistant") {
      const Value* name = field(b, "name");
      if (!name || !name->is_string()) throw bad_request("messages", "'" + bw + ".name' must be a string");
      Value fn = Value::object();
      fn.set("name", *name);
      const Value* input = field(b, "input");
      fn.set("arguments", input ? input->dump() : std::string("{}"));
      Value call = Value::object();
      if (const Value* id = field(b, "id")) call.set("id", *id);
      call.set("type", "function");
      call.set("function", std::move(fn));
      calls.push_back(std::move(call));
    } else if (type == "tool_result" && role == "user") {
      Value tool = Value::object();
      tool.set("role", "tool");
      const Value* id = field(b, "tool_use_id");
      if (!id || !id->is_string()) throw bad_request("messages", "'" + bw + ".tool_use_id' must be a string");
      tool.set("tool_call_id", *id);
      const Value* c = field(b, "content");
      tool.set("content", c ? text_of(*c, bw + ".content") : std::string());
      out.push_back(std::move(tool));
    } else {
      throw bad_request("messages", "'" + bw + "': blocks of type '" + type + "' are not supported here (text, " +
                                        "tool_use in assistant messages, tool_result in user messages)");
    }
  }
  if (!text.empty() || calls.size() == 0) {
    msg.set("content", text);
    if (calls.size()) msg.set("tool_calls", std::move(calls));
    out.push_back(std::move(msg));
  } else {
    msg.set("content", Value());
    msg.set("tool_calls", std::move(calls));
    out.push_back(std::move(msg));
  }
}

const char* stop_reason(llm::StopReason r) {
  switch (r) {
    case llm::StopReason::Eos: return "end_turn";
    case llm::StopReason::StopString: return "stop_sequence";
    case llm::StopReason::MaxTokens:
    case llm::StopReason::ContextFull: return "max_tokens";
    case llm::StopReason::Cancelled: return "end_turn";
  }
  return "end_turn";
}

std::optional<ApiError> failure(const llm::RequestResult& r) {
  if (!r.error.empty() && r.retryable) return ApiError(503, r.error, "overloaded_error");
  if (!r.error.empty()) return ApiError(500, "generation failed: " + r.error, "api_error");
  if (r.stop == llm::StopReason::Cancelled)
    return ApiError(503, "the request was cancelled before it finished (the server is shutting down)",
                    "overloaded_error");
  return std::nullopt;
}

std::string event(const char* name, const Value& v) {
  return std::string("event: ") + name + "\ndata: " + v.dump() + "\n\n";
}

}  // namespace

std::string anthropic_to_openai(std::string_view body) {
  Value doc = parse_body(body);
  Value out = Value::object();
  // Fields that mean the same in both APIs.
  for (const char* k : {"model", "temperature", "top_p", "top_k", "stream", "seed"})
    if (const Value* v = field(doc, k)) out.set(k, *v);
  const Value* max_tokens = field(doc, "max_tokens");
  if (!max_tokens) throw bad_request("max_tokens", "'max_tokens' is required");
  out.set("max_tokens", *max_tokens);
  if (const Value* s = field(doc, "stop_sequences")) out.set("stop", *s);
  Value messages = Value::array();
  if (const Value* sys = field(doc, "system")) {
    Value m = Value::object();
    m.set("role", "system");
    m.set("content", text_of(*sys, "system"));
    messages.push_back(std::move(m));
  }
  const Value* msgs = field(doc, "messages");
  if (!msgs) throw bad_request("messages", "'messages' is required");
  if (!msgs->is_array()) throw wrong("messages", "an array", *msgs);
  if (msgs->size() > kMaxChatMessages)
    throw bad_request("messages", "'messages' holds at most " + std::to_string(kMaxChatMessages) + " messages");
  for (size_t i = 0; i < msgs->size(); ++i) add_message((*msgs)[i], i, messages);
  out.set("messages", std::move(messages));
  if (const Value* tools = field(doc, "tools")) {
    if (!tools->is_array()) throw wrong("tools", "an array", *tools);
    Value list = Value::array();
    for (size_t i = 0; i < tools->size(); ++i) {
      const Value& t = (*tools)[i];
      const std::string where = "tools[" + std::to_string(i) + "]";
      if (!t.is_object()) throw wrong(where, "an object", t);
      Value fn = Value::object();
      if (const Value* n = field(t, "name")) fn.set("name", *n);
      if (const Value* d = field(t, "description")) fn.set("description", *d);
      if (const Value* s = field(t, "input_schema")) fn.set("parameters", *s);
      Value tool = Value::object();
      tool.set("type", "function");
      tool.set("function", std::move(fn));
      list.push_back(std::move(tool));
    }
    out.set("tools", std::move(list));
  }
  if (const Value* tc = field(doc, "tool_choice")) {
    if (!tc->is_object()) throw wrong("tool_choice", "an object", *tc);
    const std::string type = tc->get_string("type");
    if (type == "auto")
      out.set("tool_choice", "auto");
    else if (type == "any")
      out.set("tool_choice", "required");
    else if (type == "none")
      out.set("tool_choice", "none");
    else if (type == "tool") {
      Value fn = Value::object();
      fn.set("name", tc->get_string("name"));
      Value c = Value::object();
      c.set("type", "function");
      c.set("function", std::move(fn));
      out.set("tool_choice", std::move(c));
    } else {
      throw bad_request("tool_choice", "'tool_choice.type' must be auto, any, tool or none, got '" + type + "'");
    }
    if (const Value* d = field(*tc, "disable_parallel_tool_use"); d && d->is_bool() && d->as_bool())
      out.set("parallel_tool_calls", false);
  }
  return out.dump();
}

std::string anthropic_error_body(const ApiError& e) {
  Value err = Value::object();
  const char* type = e.status == 401   ? "authentication_error"
                     : e.status == 404 ? "not_found_error"
                     : e.status == 413 ? "request_too_large"
                     : e.status == 503 ? "overloaded_error"
                     : e.status >= 500 ? "api_error"
                                       : "invalid_request_error";
  err.set("type", type);
  err.set("message", e.what());
  Value o = Value::object();
  o.set("type", "error");
  o.set("error", std::move(err));
  return o.dump();
}

AnthropicResponse::AnthropicResponse(const ApiRequest& request, const ModelInfo& model, std::string id)
    : req_(request), model_(model), id_(std::move(id)) {}

Value AnthropicResponse::tool_use_blocks(const std::vector<llm::ToolCall>& calls) const {
  Value out = Value::array();
  for (size_t i = 0; i < calls.size(); ++i) {
    Value b = Value::object();
    b.set("type", "tool_use");
    b.set("id", "toolu_" + id_.substr(id_.rfind('_') + 1) + "_" + std::to_string(i));
    b.set("name", calls[i].name);
    Value input = Value::object();
    try {
      input = json::parse(calls[i].arguments, "arguments", {kMaxJsonDepth});
    } catch (const std::exception&) {
    }
    b.set("input", std::move(input));
    out.push_back(std::move(b));
  }
  return out;
}

std::string AnthropicResponse::body(const llm::RequestResult& r) {
  if (auto err = failure(r)) throw *err;
  text_ += r.text_tail;
  const FinishedReply parsed = finish_reply(text_, text_.size(), req_.structured);
  const bool calls = !parsed.calls.empty();
  Value content = Value::array();
  if (!parsed.content.empty()) {
    Value b = Value::object();
    b.set("type", "text");
    b.set("text", parsed.content);
    content.push_back(std::move(b));
  }
  if (calls) {
    Value blocks = tool_use_blocks(parsed.calls);  // (a range-for over a temporary's items() would dangle)
    for (Value& b : blocks.items()) content.push_back(std::move(b));
  }
  Value o = Value::object();
  o.set("id", id_);
  o.set("type", "message");
  o.set("role", "assistant");
  o.set("model", model_.id);
  o.set("content", std::move(content));
  o.set("stop_reason", calls ? "tool_use" : stop_reason(r.stop));
  o.set("stop_sequence", Value());
  Value usage = Value::object();
  usage.set("input_tokens", r.prompt_tokens);
  usage.set("output_tokens", r.completion_tokens);
  o.set("usage", std::move(usage));
  return o.dump();
}

std::string AnthropicResponse::first_events() {
  Value msg = Value::object();
  msg.set("id", id_);
  msg.set("type", "message");
  msg.set("role", "assistant");
  msg.set("model", model_.id);
  msg.set("content", Value::array());
  msg.set("stop_reason", Value());
  msg.set("stop_sequence", Value());
  Value usage = Value::object();
  usage.set("input_tokens", uint64_t(req_.generation.prompt.size()));
  usage.set("output_tokens", 0);
  msg.set("usage", std::move(usage));
  Value o = Value::object();
  o.set("type", "message_start");
  o.set("message", std::move(msg));
  return event("message_start", o);
}

std::string AnthropicResponse::block_start_text() {
  if (text_open_) return {};
  text_open_ = true;
  Value b = Value::object();
  b.set("type", "text");
  b.set("text", "");
  Value o = Value::object();
  o.set("type", "content_block_start");
  o.set("index", blocks_++);
  o.set("content_block", std::move(b));
  return event("content_block_start", o);
}

std::string AnthropicResponse::events(const llm::TokenEvent& e) {
  text_ += e.text;
  const size_t upto = releasable(text_, sent_, req_.structured);
  if (upto <= sent_) return {};
  std::string out = block_start_text();
  Value d = Value::object();
  d.set("type", "text_delta");
  d.set("text", text_.substr(sent_, upto - sent_));
  sent_ = upto;
  Value o = Value::object();
  o.set("type", "content_block_delta");
  o.set("index", 0);
  o.set("delta", std::move(d));
  return out + event("content_block_delta", o);
}

std::string AnthropicResponse::last_events(const llm::RequestResult& r) {
  if (auto err = failure(r)) return error_event(*err);
  text_ += r.text_tail;
  const FinishedReply parsed = finish_reply(text_, sent_, req_.structured);
  const bool calls = !parsed.calls.empty();
  const std::string& rest = parsed.rest;
  std::string out;
  if (!rest.empty()) {
    out += block_start_text();
    Value d = Value::object();
    d.set("type", "text_delta");
    d.set("text", rest);
    Value o = Value::object();
    o.set("type", "content_block_delta");
    o.set("index", 0);
    o.set("delta", std::move(d));
    out += event("content_block_delta", o);
  }
  auto stop_block = [&](int index) {
    Value o = Value::object();
    o.set("type", "content_block_stop");
    o.set("index", index);
    return event("content_block_stop", o);
  };
  if (text_open_) out += stop_block(0);
  if (calls) {
    Value blocks = tool_use_blocks(parsed.calls);
    for (Value& b : blocks.items()) {
      const int index = blocks_++;
      Value input = b["input"];
      b.set("input", Value::object());
      Value start = Value::object();
      start.set("type", "content_block_start");
      start.set("index", index);
      start.set("content_block", b);
      out += event("content_block_start", start);
      Value d = Value::object();
      d.set("type", "input_json_delta");
      d.set("partial_json", input.dump());
      Value delta = Value::object();
      delta.set("type", "content_block_delta");
      delta.set("index", index);
      delta.set("delta", std::move(d));
      out += event("content_block_delta", delta);
      out += stop_block(index);
    }
  }
  Value md = Value::object();
  md.set("stop_reason", calls ? "tool_use" : stop_reason(r.stop));
  md.set("stop_sequence", Value());
  Value usage = Value::object();
  usage.set("output_tokens", r.completion_tokens);
  Value o = Value::object();
  o.set("type", "message_delta");
  o.set("delta", std::move(md));
  o.set("usage", std::move(usage));
  out += event("message_delta", o);
  Value stop = Value::object();
  stop.set("type", "message_stop");
  return out + event("message_stop", stop);
}

std::string AnthropicResponse::error_event(const ApiError& e) {
  return "event: error\ndata: " + anthropic_error_body(e) + "\n\n";
}

}  // namespace wgc::server
