// Anthropic's Messages API (POST /v1/messages) over the same engine: a request is translated into
// the OpenAI chat request it means (then parsed, bounded and run as one: request.h), and the
// answer is written in Anthropic's shapes: a `message` with content blocks (`text`, `tool_use`) and
// `stop_reason` (end_turn, max_tokens, stop_sequence, tool_use), or the stream of named events
// (message_start, content_block_start / _delta / _stop, message_delta, message_stop). Errors are
// Anthropic's `{"type": "error", "error": {"type", "message"}}`.
#pragma once

#include "server/request.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace wgc::server {

// The OpenAI chat body for an Anthropic Messages body (ApiError 400 naming the field).
std::string anthropic_to_openai(std::string_view body);

// Anthropic's error body for `e`.
std::string anthropic_error_body(const ApiError& e);

class AnthropicResponse {
 public:
  AnthropicResponse(const ApiRequest& request, const ModelInfo& model, std::string id);

  // Streaming: whole SSE events.
  std::string first_events();                            // message_start
  std::string events(const llm::TokenEvent& e);          // text deltas
  std::string last_events(const llm::RequestResult& r);  // the rest, tool_use blocks, message_stop
  static std::string error_event(const ApiError& e);

  // Not streaming.
  void add(const llm::TokenEvent& e) { text_ += e.text; }
  std::string body(const llm::RequestResult& r);

 private:
  std::string block_start_text();
  json::Value tool_use_blocks(const std::vector<llm::ToolCall>& calls) const;

  const ApiRequest& req_;
  const ModelInfo& model_;
  std::string id_;
  std::string text_;
  size_t sent_ = 0;         // bytes of text_ sent as text deltas
  bool text_open_ = false;  // a text block was started
  int blocks_ = 0;          // content blocks started
};

}  // namespace wgc::server
