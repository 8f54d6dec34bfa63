// The JSON bodies of the HTTP API, parsed and checked: OpenAI's /v1/completions and
// /v1/chat/completions, llama-server's /tokenize and /detokenize. Bodies are untrusted: every
// field is type-checked and range-checked, and a problem throws ApiError (HTTP 400) naming the
// field. No GPU and no HTTP here (the fuzz target fuzz/fuzz_server_request.cpp runs this file).
//
//   ModelInfo m{"wgc-tiny-dict", &tok, &chat, 512, default_sampling(path)};
//   ApiRequest r = parse_request(Api::Chat, body, m);   // r.generation goes to Scheduler::submit
#pragma once

#include "llm/chat/chat_template.h"
#include "llm/generate/generator.h"
#include "llm/generate/sampler.h"
#include "llm/serve/scheduler.h"
#include "llm/tokenizer/tokenizer.h"
#include "server/api_error.h"
#include "server/structured.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace wgc::server {

// What a request needs to know about the served model.
struct ModelInfo {
  std::string id;                                    // the model's name in the API
  const llm::Tokenizer* tokenizer = nullptr;         // required
  const llm::ChatTemplate* chat_template = nullptr;  // required for Api::Chat
  int max_ctx = 0;                                   // tokens of context per sequence
  llm::SamplingParams default_sampling;              // for fields the request leaves out
};

enum class Api { Completions, Chat };

// Limits on what a request may ask for.
inline constexpr size_t kMaxJsonDepth = 64;
inline constexpr size_t kMaxChatMessages = 4096;
// Stop strings and logprobs have the library's limits (llm::kMaxStopStrings, llm::kMaxStopBytes,
// llm::kMaxTopLogprobs: OpenAI allows 5 completions logprobs, the engine gives up to 20).
inline constexpr int kDefaultCompletionsMaxTokens = 16;  // OpenAI's default for /v1/completions

struct ApiRequest {
  Api api = Api::Chat;
  llm::Request generation;  // prompt ids, sampling, max_tokens, stop strings, top_logprobs
  bool seeded = false;      // the request gave a seed (else generation.sampling.seed is random)
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage: a last chunk with the usage
  bool logprobs = false;       // answer with logprobs (chat: logprobs true; completions: logprobs N)
  // Tools, tool_choice, response_format, grammar (structured.h); its grammar is generation.grammar.
  Structured structured;
};

// Parses and checks a request body. The prompt is tokenized (a chat through the model's template)
// and must leave room for at least one generated token in the context. Seeds left out are drawn
// from std::random_device.
ApiRequest parse_request(Api api, std::string_view body, const ModelInfo& model);

// The request body's `model` ("" when absent), for picking the model before the body is parsed
// against it (ApiError 400 on malformed JSON or a `model` that is not a string).
std::string requested_model(std::string_view body);

// POST /tokenize {"content": "text", "add_special": false, "with_pieces": false} -> the answer body
// {"tokens": [ids]} or, with pieces, {"tokens": [{"id": 1, "piece": "text" or [bytes]}]}.
std::string tokenize(std::string_view body, const llm::Tokenizer& tok);
// The same in parts, for an answer written as it is made (a piece per token is ~10x the text):
// the request's ids, and the answer's text for ids [begin, end) (the part with begin 0 opens the
// object, the one reaching the end closes it).
struct TokenizeAnswer {
  std::vector<int32_t> ids;
  bool with_pieces = false;
};
TokenizeAnswer tokenize_request(std::string_view body, const llm::Tokenizer& tok);
std::string tokenize_answer_part(const TokenizeAnswer& t, size_t begin, size_t end, const llm::Tokenizer& tok);
// POST /detokenize {"tokens": [ids]} -> {"content": "text"}.
std::string detokenize(std::string_view body, const llm::Tokenizer& tok);

}  // namespace wgc::server
