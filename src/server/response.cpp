#include "server/response.h"

#include "util/json.h"

#include <algorithm>
#include <cctype>

namespace wgc::server {

using json::Value;

const char* finish_reason(llm::StopReason r) {
  switch (r) {
    case llm::StopReason::Eos:
    case llm::StopReason::StopString: return "stop";
    case llm::StopReason::MaxTokens:
    case llm::StopReason::ContextFull: return "length";
    case llm::StopReason::Cancelled: return "cancelled";
  }
  return "stop";
}

std::string sse_data(const std::string& json) { return "data: " + json + "\n\n"; }

size_t releasable(const std::string& text, size_t sent, const Structured& s) {
  if (!s.parse_tools) return text.size();
  return std::max(sent, llm::tool_call_safe_prefix(text, s.format));
}

FinishedReply finish_reply(const std::string& text, size_t sent, const Structured& s) {
  FinishedReply out;
  if (s.parse_tools) {
    llm::ParsedReply p = llm::parse_tool_calls(text, s.format);
    if (!p.calls.empty()) {
      out.calls = std::move(p.calls);
      out.content = std::move(p.content);
      // Content beside the calls that was not sent yet: what the parse kept past the sent part.
      std::string_view head(text.data(), std::min(sent, text.size()));
      while (!head.empty() && std::isspace(static_cast<unsigned char>(head.front()))) head.remove_prefix(1);
      while (!head.empty() && std::isspace(static_cast<unsigned char>(head.back()))) head.remove_suffix(1);
      out.rest = out.content.starts_with(head) ? out.content.substr(head.size()) : "";
      return out;
    }
  }
  out.content = text;
  out.rest = text.substr(std::min(sent, text.size()));
  return out;
}

namespace {

std::string plain(const std::string& m) { return m.starts_with("wgc: ") ? m.substr(5) : m; }

}  // namespace

std::optional<ApiError> generation_failure(const llm::RequestResult& r) {
  // Not the request's fault (the GPU device was lost, the model is being rebuilt): send it again.
  if (!r.error.empty() && r.retryable) return ApiError(503, plain(r.error), "unavailable_error", "", "device_lost");
  if (!r.error.empty()) return ApiError(500, "generation failed: " + r.error, "server_error");
  if (r.stop == llm::StopReason::Cancelled)
    return ApiError(503, "the request was cancelled before it finished (the server is shutting down)",
                    "unavailable_error", "", "cancelled");
  return std::nullopt;
}

namespace {

Value bytes_of(const std::string& s) {
  Value a = Value::array();
  for (unsigned char c : s) a.push_back(int(c));
  return a;
}

}  // namespace

ResponseBuilder::ResponseBuilder(const ApiRequest& request, const ModelInfo& model, std::string id, int64_t created)
    : req_(request), model_(model), id_(std::move(id)), created_(created), logprobs_(empty_logprobs()) {}

Value ResponseBuilder::envelope(bool chunk) const {
  Value o = Value::object();
  o.set("id", id_);
  o.set("object", req_.api == Api::Completions ? "text_completion"
                  : chunk                      ? "chat.completion.chunk"
                                               : "chat.completion");
  o.set("created", created_);
  o.set("model", model_.id);
  return o;
}

Value ResponseBuilder::choice(std::string_view text, const Value* logprobs, const char* finish) const {
  Value c = Value::object();
  c.set("index", 0);
  if (req_.api == Api::Completions) c.set("text", text);
  c.set("logprobs", logprobs ? *logprobs : Value());
  c.set("finish_reason", finish ? Value(finish) : Value());
  return c;
}

Value ResponseBuilder::usage(const llm::RequestResult& r) const {
  Value u = Value::object();
  u.set("prompt_tokens", r.prompt_tokens);
  u.set("completion_tokens", r.completion_tokens);
  u.set("total_tokens", r.prompt_tokens + r.completion_tokens);
  Value details = Value::object();
  details.set("cached_tokens", r.cached_tokens);
  u.set("prompt_tokens_details", std::move(details));
  return u;
}

Value ResponseBuilder::empty_logprobs() const {
  Value lp = Value::object();
  if (req_.api == Api::Chat) {
    lp.set("content", Value::array());
  } else {
    for (const char* k : {"tokens", "token_logprobs", "top_logprobs", "text_offset"}) lp.set(k, Value::array());
  }
  return lp;
}

void ResponseBuilder::append_logprobs(Value& lp, const llm::TokenEvent& e) {
  // A token's own bytes (part of a character, maybe): "token" shows them as text (U+FFFD for a
  // partial character, as the JSON writer does), "bytes" exactly.
  const llm::Tokenizer& tok = *model_.tokenizer;
  auto piece = [&](int32_t id) { return tok.decode_bytes(std::span<const int32_t>(&id, 1)); };
  std::string token = piece(e.id);
  if (req_.api == Api::Chat) {
    Value entry = Value::object();
    entry.set("token", token);
    entry.set("logprob", double(e.logprob));
    entry.set("bytes", bytes_of(token));
    Value top = Value::array();
    for (auto [id, logprob] : e.top) {
      std::string t = piece(id);
      Value alt = Value::object();
      alt.set("token", t);
      alt.set("logprob", double(logprob));
      alt.set("bytes", bytes_of(t));
      top.push_back(std::move(alt));
    }
    entry.set("top_logprobs", std::move(top));
    lp.members()[0].second.push_back(std::move(entry));
    return;
  }
  // Completions: parallel arrays; top_logprobs holds {token: logprob} of the N best (the chosen
  // token alone when N is 0, as vLLM does).
  Value top = Value::object();
  if (e.top.empty()) top.set(token, double(e.logprob));
  for (auto [id, logprob] : e.top) top.set(piece(id), double(logprob));
  auto& m = lp.members();
  m[0].second.push_back(token);
  m[1].second.push_back(double(e.logprob));
  m[2].second.push_back(std::move(top));
  m[3].second.push_back(uint64_t(logprob_offset_));
  for (unsigned char b : token) logprob_offset_ += (b & 0xC0) != 0x80;  // characters, not bytes
}

std::string ResponseBuilder::first_chunk() {
  if (req_.api != Api::Chat) return {};
  Value o = envelope(true);
  Value c = choice("", nullptr, nullptr);
  Value delta = Value::object();
  delta.set("role", "assistant");
  delta.set("content", "");
  c.set("delta", std::move(delta));
  o.set("choices", Value(json::Array{std::move(c)}));
  return sse_data(o.dump());
}

std::string ResponseBuilder::call_id(size_t i) const {
  const size_t dash = id_.rfind('-');
  return "call_" + (dash == std::string::npos ? id_ : id_.substr(dash + 1)) + "_" + std::to_string(i);
}

Value ResponseBuilder::tool_calls(const std::vector<llm::ToolCall>& calls) const {
  Value list = Value::array();
  for (size_t i = 0; i < calls.size(); ++i) {
    Value fn = Value::object();
    fn.set("name", calls[i].name);
    fn.set("arguments", calls[i].arguments);
    Value call = Value::object();
    call.set("id", call_id(i));
    call.set("type", "function");
    call.set("function", std::move(fn));
    list.push_back(std::move(call));
  }
  return list;
}

std::string ResponseBuilder::content_chunk(const std::string& content, const Value* logprobs, const char* finish) {
  Value o = envelope(true);
  Value c = choice(content, logprobs, finish);
  if (req_.api == Api::Chat) {
    Value delta = Value::object();
    if (!finish || !content.empty()) delta.set("content", content);
    c.set("delta", std::move(delta));
  }
  o.set("choices", Value(json::Array{std::move(c)}));
  return sse_data(o.dump());
}

std::string ResponseBuilder::chunk(const llm::TokenEvent& e) {
  text_ += e.text;
  std::string content = e.text;
  if (req_.structured.parse_tools) {  // only what surely is no call's start
    const size_t upto = releasable(text_, sent_, req_.structured);
    content = text_.substr(sent_, upto - sent_);
    sent_ = upto;
  }
  if (content.empty() && !req_.logprobs) return {};
  Value lp;
  if (req_.logprobs) {
    lp = empty_logprobs();
    append_logprobs(lp, e);
  }
  return content_chunk(content, req_.logprobs ? &lp : nullptr, nullptr);
}

std::string ResponseBuilder::last_chunks(const llm::RequestResult& r) {
  if (auto err = generation_failure(r)) return error_event(*err);
  std::string out;
  text_ += r.text_tail;
  if (!req_.structured.parse_tools) {
    out += content_chunk(r.text_tail, nullptr, finish_reason(r.stop));
  } else {
    FinishedReply p = finish_reply(text_, sent_, req_.structured);
    if (!p.rest.empty()) out += content_chunk(p.rest, nullptr, nullptr);
    Value calls = tool_calls(p.calls);
    for (size_t i = 0; i < p.calls.size(); ++i) {
      // OpenAI's shape: the call's head (arguments ""), then its arguments as a fragment.
      for (int part = 0; part < 2; ++part) {
        Value call = Value::object();
        call.set("index", uint64_t(i));
        Value fn = Value::object();
        if (part == 0) {
          call.set("id", calls[i]["id"]);
          call.set("type", "function");
          fn.set("name", p.calls[i].name);
          fn.set("arguments", "");
        } else {
          fn.set("arguments", p.calls[i].arguments);
        }
        call.set("function", std::move(fn));
        Value delta = Value::object();
        delta.set("tool_calls", Value(json::Array{std::move(call)}));
        Value c = choice("", nullptr, nullptr);
        c.set("delta", std::move(delta));
        Value o = envelope(true);
        o.set("choices", Value(json::Array{std::move(c)}));
        out += sse_data(o.dump());
      }
    }
    out += content_chunk("", nullptr, p.calls.empty() ? finish_reason(r.stop) : "tool_calls");
  }
  if (req_.include_usage) {
    Value u = envelope(true);
    u.set("choices", Value::array());
    u.set("usage", usage(r));
    out += sse_data(u.dump());
  }
  return out + "data: [DONE]\n\n";
}

std::string ResponseBuilder::error_event(const ApiError& e) { return sse_data(error_body(e)) + "data: [DONE]\n\n"; }

void ResponseBuilder::add(const llm::TokenEvent& e) {
  text_ += e.text;
  if (req_.logprobs) append_logprobs(logprobs_, e);
}

std::string ResponseBuilder::body(const llm::RequestResult& r) {
  if (auto err = generation_failure(r)) throw *err;
  text_ += r.text_tail;
  Value o = envelope(false);
  const FinishedReply parsed = finish_reply(text_, text_.size(), req_.structured);
  const bool calls = !parsed.calls.empty();
  Value c = choice(text_, req_.logprobs ? &logprobs_ : nullptr, calls ? "tool_calls" : finish_reason(r.stop));
  if (req_.api == Api::Chat) {
    Value msg = Value::object();
    msg.set("role", "assistant");
    if (calls) {
      msg.set("content", parsed.content.empty() ? Value() : Value(parsed.content));
      msg.set("tool_calls", tool_calls(parsed.calls));
    } else {
      msg.set("content", text_);
    }
    c.set("message", std::move(msg));
  }
  o.set("choices", Value(json::Array{std::move(c)}));
  o.set("usage", usage(r));
  return o.dump();
}

}  // namespace wgc::server
