// The answers of /v1/completions and /v1/chat/completions in OpenAI's shapes: one JSON body, or a
// stream of server-sent events ("data: {chunk}\n\n" ... "data: [DONE]\n\n") whose pieces add up to
// the same text, logprobs and finish_reason. With tools, the reply's calls (llm/chat/tool_calls.h)
// come as message.tool_calls and finish_reason "tool_calls"; streamed, the text that may begin a
// call is held back, and the calls come at the end as OpenAI's tool-call deltas (per call: its
// index, id, type and name with empty arguments, then its arguments).
//
//   ResponseBuilder b(req, model, "chatcmpl-1", time(nullptr));
//   sse(b.first_chunk());  for each token event e: sse(b.chunk(e));  sse(b.last_chunks(result));
//   // or, not streaming: b.add(e) for each event, then b.body(result)
#pragma once

#include "server/request.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace wgc::server {

// OpenAI's finish_reason: "stop" (end of turn, a stop string) or "length" (max_tokens, the end of
// the context).
const char* finish_reason(llm::StopReason r);

class ResponseBuilder {
 public:
  ResponseBuilder(const ApiRequest& request, const ModelInfo& model, std::string id, int64_t created);

  // Streaming: whole SSE events ("" when there is nothing to send).
  std::string first_chunk();                                  // chat: the assistant's role
  std::string chunk(const llm::TokenEvent& e);                // a token's text (and logprobs)
  std::string last_chunks(const llm::RequestResult& result);  // tail, finish_reason, usage, [DONE]
  // An error after the stream began (OpenAI's error object as an event), then [DONE].
  static std::string error_event(const ApiError& e);

  // Not streaming: collect the events, then the body.
  void add(const llm::TokenEvent& e);
  std::string body(const llm::RequestResult& result);

  const std::string& text() const { return text_; }  // the text so far
  // The id of the reply's call i ("call_" + the response id's tail + "_" + i).
  std::string call_id(size_t i) const;

 private:
  json::Value envelope(bool chunk) const;
  json::Value choice(std::string_view text, const json::Value* logprobs, const char* finish) const;
  json::Value usage(const llm::RequestResult& r) const;
  // The logprobs entries of one token, appended to `lp` (chat: {"content": [...]}; completions:
  // {"tokens", "token_logprobs", "top_logprobs", "text_offset"}).
  void append_logprobs(json::Value& lp, const llm::TokenEvent& e);
  json::Value empty_logprobs() const;
  std::string content_chunk(const std::string& content, const json::Value* logprobs, const char* finish);
  json::Value tool_calls(const std::vector<llm::ToolCall>& calls) const;

  const ApiRequest& req_;
  const ModelInfo& model_;
  std::string id_;
  int64_t created_;
  std::string text_;           // text released so far
  size_t sent_ = 0;            // with tools, streaming: bytes of text_ sent as content
  size_t logprob_offset_ = 0;  // completions' text_offset: characters of the tokens so far
  json::Value logprobs_;       // not streaming: the collected logprobs
};

// A request that ended without finishing (the GPU device was lost: 503, retry; another error:
// 500; cancelled at shutdown: 503): the error its client gets, in OpenAI's types.
std::optional<ApiError> generation_failure(const llm::RequestResult& r);

// A reply's tool calls, split off its text (every API's answer has the same). With tools (the
// request's parse_tools), text that may begin a call is held back while streaming: releasable()
// is where the text that surely is no call's start ends (at least `sent`, the bytes sent).
size_t releasable(const std::string& text, size_t sent, const Structured& s);
struct FinishedReply {
  std::vector<llm::ToolCall> calls;  // none without tools, or when the reply holds none
  std::string content;               // the text beside the calls (all of it without calls)
  std::string rest;                  // streamed: the part of `content` past the `sent` bytes sent
};
FinishedReply finish_reply(const std::string& text, size_t sent, const Structured& s);

// An SSE event carrying `json`.
std::string sse_data(const std::string& json);

}  // namespace wgc::server
