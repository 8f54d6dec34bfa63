// RequestStream: what the scheduler keeps for one request between its tokens: the Sampler (with
// its seed and history), the streaming detokenizer and the stop strings, the counters and times,
// and the callbacks. The engine gives it each chosen token; it makes the TokenEvent, decides
// whether the request ends and makes its RequestResult.
#pragma once

#include "llm/serve/scheduler.h"

#include <atomic>
#include <chrono>
#include <optional>
#include <span>

namespace wgc::llm {

using SteadyTime = std::chrono::steady_clock::time_point;
double ms_between(SteadyTime a, SteadyTime b);

// A submitted request, from submit() to on_done.
struct Job {
  uint64_t id = 0;
  Request req;
  Scheduler::OnToken on_token;
  Scheduler::OnDone on_done;
  SteadyTime submitted;
  std::atomic<bool> cancel{false};
};

// The logprob of the chosen token and the `top` best, from the untempered softmax of `logits`.
struct TokenLogprobs {
  float chosen = 0;
  std::vector<std::pair<int32_t, float>> top;  // best first, ties by lower id
};
TokenLogprobs token_logprobs(std::span<const float> logits, int32_t chosen, int top);

class RequestStream {
 public:
  // stop_ids: end-of-turn ids; max_ctx: the sequence's context limit.
  RequestStream(Job& job, const Tokenizer& tok, const std::vector<int32_t>& stop_ids, int max_ctx);

  Job& job() { return job_; }
  Sampler& sampler() { return sampler_; }
  bool wants_logprobs() const { return job_.req.top_logprobs >= 0; }

  // The request was admitted with `cached` of its prompt tokens already in the cache.
  void admitted(int cached);
  // Takes the next generated token, which would go to cache position `pos` when fed back, with
  // its logprobs when asked. Returns false when the request has ended (result() says why; a
  // token at pos >= max_ctx ends it: it cannot be fed); on_done has not been called yet.
  // last: the token ends the request (Eos) whatever else (a grammar's sentence is whole).
  bool take(int32_t id, const TokenLogprobs* lp, int pos, bool last = false);
  // Whether the request was cancelled (cancel() or on_token returned false).
  bool cancelled() const { return job_.cancel.load(); }
  int generated() const { return result_.completion_tokens; }
  // Speculative decoding: a verify pass checked `proposed` draft tokens and kept `accepted`.
  void drafted(int proposed, int accepted) {
    result_.draft_proposed += proposed;
    result_.draft_accepted += accepted;
  }

  // Ends the request: releases held-back text, fills the times and calls on_done. The reason is
  // `why` when given, else the one take() found (MaxTokens when none). retryable: the error is
  // not the request's (RequestResult::retryable).
  void finish(std::optional<StopReason> why = {}, std::string error = {}, bool retryable = false);
  bool finished() const { return done_; }
  const RequestResult& result() const { return result_; }

 private:
  Job& job_;
  const std::vector<int32_t>& stop_ids_;
  int max_ctx_;
  Sampler sampler_;
  std::optional<StreamDecoder> decoder_;
  StopStrings stops_;
  RequestResult result_;
  bool first_token_ = false;
  bool ended_ = false;  // take() returned false
  bool done_ = false;   // on_done called
  bool stopped_by_string_ = false;
  std::optional<StopReason> why_;
};

}  // namespace wgc::llm
