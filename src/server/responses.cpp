#include "server/responses.h"

#include "server/request_json.h"
#include "server/response.h"
#include "util/json.h"

#include <algorithm>
#include <cctype>

namespace wgc::server {
namespace {

using json::Value;

// Fields of the Responses API that need what this server does not have (stored responses and
// conversations, background runs, reasoning, built-in tools' outputs): refused, not ignored.
void refuse_unsupported(const Value& doc) {
  for (const char* k :
       {"previous_response_id", "conversation", "prompt", "reasoning", "top_logprobs", "max_tool_calls"})
    if (field(doc, k))
      throw bad_request(k, std::string("'") + k +
                               "' is not supported by this server (it keeps no responses and "
                               "runs no reasoning or built-in tools)");
  if (const Value* b = field(doc, "background"); b && !(b->is_bool() && !b->as_bool()))
    throw bad_request("background", "'background' is not supported (responses are answered at once)");
  if (const Value* t = field(doc, "truncation"); t && !(t->is_string() && t->as_string() == "disabled"))
    throw bad_request("truncation", "'truncation' may only be \"disabled\" (a prompt past the context is refused)");
  if (const Value* inc = field(doc, "include"); inc && !(inc->is_array() && inc->size() == 0))
    throw bad_request("include", "'include' is not supported (there is nothing extra to include)");
}

// A message's content: a string or parts of type input_text / output_text (a fed-back answer).
std::string content_text(const Value& content, const std::string& where) {
  if (content.is_string()) return content.as_string();
  if (!content.is_array()) throw wrong("input", where, "a string or an array of content parts", content);
  std::string text;
  for (size_t k = 0; k < content.size(); ++k) {
    const Value& p = content[k];
    const std::string pw = where + "[" + std::to_string(k) + "]";
    if (!p.is_object()) throw wrong("input", pw, "an object", p);
    const std::string type = p.get_string("type");
    if (type != "input_text" && type != "output_text")
      throw bad_request("input",
                        "'" + pw + "': only input_text and output_text parts are supported, got type '" + type + "'");
    const Value* t = field(p, "text");
    if (!t || !t->is_string()) throw bad_request("input", "'" + pw + ".text' must be a string");
    text += t->as_string();
  }
  return text;
}

const std::string& string_field(const Value& item, const char* key, const std::string& where) {
  const Value* v = field(item, key);
  if (!v || !v->is_string()) throw bad_request("input", "'" + where + "." + key + "' must be a string");
  return v->as_string();
}

// The input items as chat messages: function_call items join the assistant message before them
// (or start one) as its tool_calls, function_call_output items become role "tool" messages.
Value input_messages(const Value& input) {
  Value out = Value::array();
  if (input.is_string()) {
    Value m = Value::object();
    m.set("role", "user");
    m.set("content", input.as_string());
    out.push_back(std::move(m));
    return out;
  }
  if (!input.is_array()) throw wrong("input", "input", "a string or an array of items", input);
  if (input.size() > kMaxChatMessages)
    throw bad_request("input", "'input' holds at most " + std::to_string(kMaxChatMessages) + " items");
  for (size_t i = 0; i < input.size(); ++i) {
    const Value& item = input[i];
    const std::string where = "input[" + std::to_string(i) + "]";
    if (!item.is_object()) throw wrong("input", where, "an object", item);
    const Value* type_v = field(item, "type");
    if (type_v && !type_v->is_string()) throw wrong("input", where + ".type", "a string", *type_v);
    const std::string type = type_v ? type_v->as_string() : "message";
    if (type == "message") {
      const std::string& role = string_field(item, "role", where);
      if (role != "user" && role != "assistant" && role != "system" && role != "developer")
        throw bad_request("input",
                          "'" + where + ".role' must be user, assistant, system or developer, got '" + role + "'");
      const Value* content = field(item, "content");
      if (!content) throw bad_request("input", "'" + where + ".content' is required");
      Value m = Value::object();
      m.set("role", role);
      m.set("content", content_text(*content, where + ".content"));
      out.push_back(std::move(m));
    } else if (type == "function_call") {
      Value fn = Value::object();
      fn.set("name", string_field(item, "name", where));
      fn.set("arguments", string_field(item, "arguments", where));
      Value call = Value::object();
      call.set("id", string_field(item, "call_id", where));
      call.set("type", "function");
      call.set("function", std::move(fn));
      // The assistant turn the call belongs to: the message just before, if it is the assistant's.
      const bool joins = out.size() > 0 && out[out.size() - 1].get_string("role") == "assistant";
      if (!joins) {
        Value m = Value::object();
        m.set("role", "assistant");
        m.set("content", Value());
        out.push_back(std::move(m));
      }
      Value& last = out.items().back();
      Value* calls = last.find("tool_calls");
      if (!calls) calls = &last.set("tool_calls", Value::array());
      calls->push_back(std::move(call));
    } else if (type == "function_call_output") {
      Value m = Value::object();
      m.set("role", "tool");
      m.set("tool_call_id", string_field(item, "call_id", where));
      const Value* o = field(item, "output");
      if (!o) throw bad_request("input", "'" + where + ".output' is required");
      m.set("content", content_text(*o, where + ".output"));
      out.push_back(std::move(m));
    } else {
      throw bad_request("input", "'" + where + "': items of type '" + type +
                                     "' are not supported (message, function_call, function_call_output)");
    }
  }
  return out;
}

// Responses' flat function tools ({type, name, description, parameters, strict}) in chat's shape.
Value chat_tools(const Value& tools) {
  if (!tools.is_array()) throw wrong("tools", "tools", "an array", tools);
  Value list = Value::array();
  for (size_t i = 0; i < tools.size(); ++i) {
    const Value& t = tools[i];
    const std::string where = "tools[" + std::to_string(i) + "]";
    if (!t.is_object()) throw wrong("tools", where, "an object", t);
    const std::string type = t.get_string("type");
    if (type != "function")
      throw bad_request("tools", "'" + where + ".type' must be \"function\" (built-in tools such as '" + type +
                                     "' are not supported)");
    Value fn = Value::object();
    for (const char* k : {"name", "description", "parameters", "strict"})
      if (const Value* v = field(t, k)) fn.set(k, *v);
    Value tool = Value::object();
    tool.set("type", "function");
    tool.set("function", std::move(fn));
    list.push_back(std::move(tool));
  }
  return list;
}

Value chat_tool_choice(const Value& c) {
  if (c.is_string()) return c;  // auto, none, required (checked by parse_structured)
  if (!c.is_object()) throw wrong("tool_choice", "tool_choice", "a string or an object", c);
  if (c.get_string("type") != "function")
    throw bad_request("tool_choice",
                      "'tool_choice' as an object must be {\"type\": \"function\", \"name\": ...} (built-in tools and "
                      "allowed_tools are not supported)");
  const Value* name = field(c, "name");
  if (!name || !name->is_string()) throw bad_request("tool_choice", "'tool_choice.name' must be a string");
  Value fn = Value::object();
  fn.set("name", *name);
  Value out = Value::object();
  out.set("type", "function");
  out.set("function", std::move(fn));
  return out;
}

// text.format as chat's response_format (null: plain text).
Value chat_response_format(const Value& text) {
  if (!text.is_object()) throw wrong("text", "text", "an object", text);
  const Value* format = field(text, "format");
  if (!format) return Value();
  if (!format->is_object()) throw wrong("text", "text.format", "an object", *format);
  const std::string type = format->get_string("type");
  Value rf = Value::object();
  if (type == "text") return Value();
  if (type == "json_object") {
    rf.set("type", "json_object");
    return rf;
  }
  if (type != "json_schema")
    throw bad_request("text", "'text.format.type' must be text, json_object or json_schema, got '" + type + "'");
  Value js = Value::object();
  for (const char* k : {"name", "description", "schema", "strict"})
    if (const Value* v = field(*format, k)) js.set(k, *v);
  rf.set("type", "json_schema");
  rf.set("json_schema", std::move(js));
  return rf;
}

}  // namespace

ResponsesRequest responses_to_chat(std::string_view body) {
  Value doc = parse_body(body);
  refuse_unsupported(doc);
  Value out = Value::object();
  // Fields that mean the same in both APIs (seed, top_k, ...: this server's extensions to both).
  for (const char* k : {"model", "temperature", "top_p", "top_k", "min_p", "seed", "stream", "parallel_tool_calls"})
    if (const Value* v = field(doc, k)) out.set(k, *v);
  if (const Value* m = field(doc, "max_output_tokens")) {
    if (!m->is_int() || m->as_int() < 1)
      throw bad_request("max_output_tokens", "'max_output_tokens' must be an integer of at least 1, got " + m->dump());
    out.set("max_tokens", *m);
  }
  Value messages = Value::array();
  if (const Value* ins = field(doc, "instructions")) {
    if (!ins->is_string()) throw wrong("instructions", "instructions", "a string", *ins);
    Value m = Value::object();
    m.set("role", "system");
    m.set("content", *ins);
    messages.push_back(std::move(m));
  }
  const Value* input = field(doc, "input");
  if (!input) throw bad_request("input", "'input' is required");
  Value items = input_messages(*input);
  for (Value& m : items.items()) messages.push_back(std::move(m));
  out.set("messages", std::move(messages));
  if (const Value* t = field(doc, "tools")) out.set("tools", chat_tools(*t));
  if (const Value* c = field(doc, "tool_choice")) out.set("tool_choice", chat_tool_choice(*c));
  if (const Value* t = field(doc, "text"))
    if (Value rf = chat_response_format(*t); !rf.is_null()) out.set("response_format", std::move(rf));

  ResponsesRequest r;
  r.chat = out.dump();
  r.echo = Value::object();
  auto echo = [&](const char* k, Value fallback) {
    const Value* v = field(doc, k);
    r.echo.set(k, v ? *v : std::move(fallback));
  };
  echo("instructions", Value());
  echo("max_output_tokens", Value());
  echo("temperature", Value());
  echo("top_p", Value());
  echo("tools", Value::array());
  echo("tool_choice", "auto");
  echo("parallel_tool_calls", true);
  echo("metadata", Value::object());
  Value text_format = Value::object();
  text_format.set("type", "text");
  Value text = Value::object();
  text.set("format", std::move(text_format));
  echo("text", std::move(text));
  return r;
}

std::string responses_param(const std::string& chat_param) {
  if (chat_param == "max_tokens" || chat_param == "max_completion_tokens") return "max_output_tokens";
  if (chat_param == "response_format") return "text";
  if (chat_param == "messages") return "input";
  return chat_param;
}

ResponsesAnswer::ResponsesAnswer(const ApiRequest& request, const ModelInfo& model, std::string id, int64_t created,
                                 Value echo)
    : req_(request),
      model_(model),
      id_(std::move(id)),
      tail_(id_.substr(id_.find('_') + 1)),
      created_(created),
      echo_(std::move(echo)) {}

Value ResponsesAnswer::response(const char* status, Value output, const llm::RequestResult* r) const {
  Value o = Value::object();
  o.set("id", id_);
  o.set("object", "response");
  o.set("created_at", created_);
  o.set("status", status);
  o.set("error", Value());
  Value incomplete;
  if (r && std::string_view(status) == "incomplete") {
    incomplete = Value::object();
    incomplete.set("reason", "max_output_tokens");
  }
  o.set("incomplete_details", std::move(incomplete));
  o.set("model", model_.id);
  o.set("output", std::move(output));
  for (const auto& [k, v] : echo_.members()) o.set(k, v);
  if (r) {
    Value u = Value::object();
    u.set("input_tokens", r->prompt_tokens);
    Value in = Value::object();
    in.set("cached_tokens", r->cached_tokens);
    u.set("input_tokens_details", std::move(in));
    u.set("output_tokens", r->completion_tokens);
    Value outd = Value::object();
    outd.set("reasoning_tokens", 0);
    u.set("output_tokens_details", std::move(outd));
    u.set("total_tokens", r->prompt_tokens + r->completion_tokens);
    o.set("usage", std::move(u));
  } else {
    o.set("usage", Value());
  }
  return o;
}

namespace {

// A message's output_text content part.
Value output_text(const std::string& text) {
  Value part = Value::object();
  part.set("type", "output_text");
  part.set("text", text);
  part.set("annotations", Value::array());
  return part;
}

}  // namespace

Value ResponsesAnswer::message_item(const std::string* text, const char* status) const {
  Value item = Value::object();
  item.set("id", "msg_" + tail_);
  item.set("type", "message");
  item.set("status", status);
  item.set("role", "assistant");
  Value content = Value::array();
  if (text) content.push_back(output_text(*text));  // (announced, the item has no parts yet)
  item.set("content", std::move(content));
  return item;
}

Value ResponsesAnswer::call_item(const llm::ToolCall& call, size_t i, const char* status) const {
  Value item = Value::object();
  item.set("id", "fc_" + tail_ + "_" + std::to_string(i));
  item.set("type", "function_call");
  item.set("status", status);
  item.set("call_id", "call_" + tail_ + "_" + std::to_string(i));
  item.set("name", call.name);
  item.set("arguments", call.arguments);
  return item;
}

namespace {

std::string_view trimmed(std::string_view t) {
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.front()))) t.remove_prefix(1);
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back()))) t.remove_suffix(1);
  return t;
}

// The output's status from how generation stopped: cut by max_output_tokens (or the context) is
// "incomplete", as OpenAI answers.
const char* status_of(const llm::RequestResult& r, bool calls) {
  const bool cut = r.stop == llm::StopReason::MaxTokens || r.stop == llm::StopReason::ContextFull;
  return cut && !calls ? "incomplete" : "completed";
}

}  // namespace

std::string ResponsesAnswer::message_text(const FinishedReply& reply) const {
  return req_.structured.parse_tools ? std::string(trimmed(reply.content)) : reply.content;
}

std::string ResponsesAnswer::body(const llm::RequestResult& r) {
  if (auto err = generation_failure(r)) throw *err;
  text_ += r.text_tail;
  const FinishedReply reply = finish_reply(text_, text_.size(), req_.structured);
  const char* status = status_of(r, !reply.calls.empty());
  const std::string text = message_text(reply);
  Value output = Value::array();
  if (!text.empty() || reply.calls.empty()) output.push_back(message_item(&text, status));
  for (size_t i = 0; i < reply.calls.size(); ++i) output.push_back(call_item(reply.calls[i], i, "completed"));
  return response(status, std::move(output), &r).dump();
}

std::string ResponsesAnswer::event(const char* type, Value v) {
  Value o = Value::object();
  o.set("type", type);
  for (auto& [k, val] : v.members()) o.set(k, std::move(val));
  o.set("sequence_number", sequence_++);
  return std::string("event: ") + type + "\ndata: " + o.dump() + "\n\n";
}

std::string ResponsesAnswer::first_events() {
  std::string out;
  for (const char* type : {"response.created", "response.in_progress"}) {
    Value v = Value::object();
    v.set("response", response("in_progress", Value::array(), nullptr));
    out += event(type, std::move(v));
  }
  return out;
}

std::string ResponsesAnswer::open_message() {
  if (message_open_) return {};
  message_open_ = true;
  Value added = Value::object();
  added.set("output_index", 0);
  added.set("item", message_item(nullptr, "in_progress"));
  std::string out = event("response.output_item.added", std::move(added));
  Value v = text_part_event();
  v.set("part", output_text(""));
  return out + event("response.content_part.added", std::move(v));
}

Value ResponsesAnswer::text_part_event() const {
  Value v = Value::object();
  v.set("item_id", "msg_" + tail_);
  v.set("output_index", 0);
  v.set("content_index", 0);
  return v;
}

std::string ResponsesAnswer::text_delta(std::string delta) {
  Value v = text_part_event();
  v.set("delta", std::move(delta));
  v.set("logprobs", Value::array());
  return event("response.output_text.delta", std::move(v));
}

std::string ResponsesAnswer::events(const llm::TokenEvent& e) {
  text_ += e.text;
  const size_t upto = releasable(text_, sent_, req_.structured);
  if (upto <= sent_) return {};
  std::string delta = text_.substr(sent_, upto - sent_);
  sent_ = upto;
  if (req_.structured.parse_tools) {
    // The text is trimmed at its ends (message_text): whitespace that may end it waits for more.
    const std::string_view shown = trimmed(std::string_view(text_.data(), upto));
    delta = std::string(shown.substr(std::min(shown.size(), shown_.size())));
    shown_ += delta;
  }
  if (delta.empty()) return {};
  std::string out = open_message();
  return out + text_delta(std::move(delta));
}

std::string ResponsesAnswer::last_events(const llm::RequestResult& r) {
  if (auto err = generation_failure(r)) return error_event(*err);
  text_ += r.text_tail;
  const FinishedReply reply = finish_reply(text_, sent_, req_.structured);
  const char* status = status_of(r, !reply.calls.empty());
  // The message's text and the part of it not sent yet (with tools: past what was shown, which
  // begins it; the deltas always add up to the text the stream ends with).
  std::string text = message_text(reply), rest = reply.rest;
  if (req_.structured.parse_tools) {
    if (!text.starts_with(shown_)) text = shown_;
    rest = text.substr(shown_.size());
  }
  std::string out;
  Value output = Value::array();
  // The message: when there is text, or nothing else to answer with.
  if (message_open_ || !text.empty() || reply.calls.empty()) {
    out += open_message();
    if (!rest.empty()) out += text_delta(rest);
    Value done = text_part_event();
    done.set("text", text);
    done.set("logprobs", Value::array());
    out += event("response.output_text.done", std::move(done));
    Value item = message_item(&text, status);
    Value part = text_part_event();
    part.set("part", item["content"][0]);
    out += event("response.content_part.done", std::move(part));
    Value item_done = Value::object();
    item_done.set("output_index", 0);
    item_done.set("item", item);
    out += event("response.output_item.done", std::move(item_done));
    output.push_back(std::move(item));
  }
  for (size_t i = 0; i < reply.calls.size(); ++i) {
    const uint64_t index = output.size();
    Value item = call_item(reply.calls[i], i, "completed");
    const std::string item_id = item.get_string("id");
    Value head = call_item(reply.calls[i], i, "in_progress");
    head.set("arguments", "");
    Value added = Value::object();
    added.set("output_index", index);
    added.set("item", std::move(head));
    out += event("response.output_item.added", std::move(added));
    Value delta = Value::object();
    delta.set("item_id", item_id);
    delta.set("output_index", index);
    delta.set("delta", reply.calls[i].arguments);
    out += event("response.function_call_arguments.delta", std::move(delta));
    Value done = Value::object();
    done.set("item_id", item_id);
    done.set("output_index", index);
    done.set("name", reply.calls[i].name);
    done.set("arguments", reply.calls[i].arguments);
    out += event("response.function_call_arguments.done", std::move(done));
    Value item_done = Value::object();
    item_done.set("output_index", index);
    item_done.set("item", item);
    out += event("response.output_item.done", std::move(item_done));
    output.push_back(std::move(item));
  }
  Value v = Value::object();
  v.set("response", response(status, std::move(output), &r));
  const bool cut = std::string_view(status) == "incomplete";
  return out + event(cut ? "response.incomplete" : "response.completed", std::move(v));
}

std::string ResponsesAnswer::error_event(const ApiError& e) {
  Value err = Value::object();
  err.set("code", e.code.empty() ? e.type : e.code);
  err.set("message", std::string(e.what()));
  Value resp = response("failed", Value::array(), nullptr);
  resp.set("error", std::move(err));
  Value v = Value::object();
  v.set("response", std::move(resp));
  return event("response.failed", std::move(v));
}

}  // namespace wgc::server
