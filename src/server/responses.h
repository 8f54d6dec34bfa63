// OpenAI's Responses API (POST /v1/responses) over the same engine, as anthropic.h does for
// Anthropic's: a request (`input` a string or items: messages, `function_call`,
// `function_call_output`; `instructions`; flat `tools` of type function; `tool_choice`;
// `max_output_tokens`; `text.format` json_schema / json_object) is translated into the chat
// completions request it means (then parsed, bounded and run as one: request.h), and the answer is
// written as a `response` object whose `output` holds a `message` item (output_text) and/or
// `function_call` items, or as the stream of typed events the openai client accumulates
// (response.created ... response.completed, each with its sequence_number). What the server does
// not do (stored responses: previous_response_id, background; built-in tools) is refused with a
// 400 naming the field. Errors are OpenAI's error body (api_error.h). No GPU and no HTTP here.
//
//   ResponsesRequest t = responses_to_chat(body);           // t.chat: the chat completions body
//   ApiRequest r = parse_request(Api::Chat, t.chat, model);
//   ResponsesAnswer a(r, model, "resp_1", time(nullptr), t.echo);
#pragma once

#include "server/request.h"
#include "server/response.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace wgc::server {

struct ResponsesRequest {
  std::string chat;  // the chat completions body it means
  json::Value echo;  // the request's fields that the response object repeats (instructions, tools, ...)
};

// Translates a Responses body (ApiError 400 naming the Responses field).
ResponsesRequest responses_to_chat(std::string_view body);

// The Responses field for a chat field that parse_request named in an error (max_tokens ->
// max_output_tokens, response_format -> text, messages -> input; others are the same).
std::string responses_param(const std::string& chat_param);

class ResponsesAnswer {
 public:
  ResponsesAnswer(const ApiRequest& request, const ModelInfo& model, std::string id, int64_t created, json::Value echo);

  // Streaming: whole SSE events ("event: TYPE\ndata: {...}\n\n").
  std::string first_events();                            // response.created, response.in_progress
  std::string events(const llm::TokenEvent& e);          // output_text deltas
  std::string last_events(const llm::RequestResult& r);  // the items' ends, calls, response.completed
  std::string error_event(const ApiError& e);            // response.failed

  // Not streaming.
  void add(const llm::TokenEvent& e) { text_ += e.text; }
  std::string body(const llm::RequestResult& r);

 private:
  json::Value response(const char* status, json::Value output, const llm::RequestResult* r) const;
  json::Value message_item(const std::string* text, const char* status) const;  // text null: no parts
  json::Value call_item(const llm::ToolCall& call, size_t i, const char* status) const;
  std::string event(const char* type, json::Value v);
  std::string open_message();  // output_item.added, content_part.added (once)
  // The fields that place an event at the message's one text part (item_id, output and content index).
  json::Value text_part_event() const;
  std::string text_delta(std::string delta);  // a response.output_text.delta event
  // The message's text: the reply's beside its calls; with tools trimmed at its ends (as a parse
  // with calls leaves it), so that the stream and the body agree.
  std::string message_text(const FinishedReply& reply) const;

  const ApiRequest& req_;
  const ModelInfo& model_;
  std::string id_;
  std::string tail_;  // the id's part after "resp_", for the items' ids
  int64_t created_;
  json::Value echo_;
  std::string text_;
  size_t sent_ = 0;            // bytes of text_ released (sent as deltas; with tools, as shown_)
  std::string shown_;          // with tools: the text sent as deltas (text_ so far, trimmed)
  bool message_open_ = false;  // the message item was announced
  uint64_t sequence_ = 0;      // the next event's sequence_number
};

}  // namespace wgc::server
