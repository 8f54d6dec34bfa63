#include "llm/serve/request_stream.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace wgc::llm {

double ms_between(SteadyTime a, SteadyTime b) { return std::chrono::duration<double, std::milli>(b - a).count(); }

TokenLogprobs token_logprobs(std::span<const float> logits, int32_t chosen, int top) {
  TokenLogprobs r;
  if (logits.empty()) return r;
  float mx = -std::numeric_limits<float>::infinity();
  for (float v : logits) mx = std::max(mx, v);
  double sum = 0;
  for (float v : logits) sum += std::exp(double(v) - double(mx));
  const double lse = double(mx) + std::log(sum);
  if (chosen >= 0 && size_t(chosen) < logits.size()) r.chosen = float(double(logits[size_t(chosen)]) - lse);
  if (top > 0) {
    std::vector<int32_t> ids(logits.size());
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = int32_t(i);
    const size_t k = std::min(size_t(top), ids.size());
    std::partial_sort(ids.begin(), ids.begin() + std::ptrdiff_t(k), ids.end(), [&](int32_t a, int32_t b) {
      float la = logits[size_t(a)], lb = logits[size_t(b)];
      return la > lb || (la == lb && a < b);
    });
    for (size_t i = 0; i < k; ++i) r.top.push_back({ids[i], float(double(logits[size_t(ids[i])]) - lse)});
  }
  return r;
}

RequestStream::RequestStream(Job& job, const Tokenizer& tok, const std::vector<int32_t>& stop_ids, int max_ctx)
    : job_(job), stop_ids_(stop_ids), max_ctx_(max_ctx), sampler_(job.req.sampling), stops_(job.req.stop) {
  decoder_.emplace(tok, /*skip_special=*/true);
  sampler_.accept(job_.req.prompt);
  result_.prompt_tokens = int(job_.req.prompt.size());
}

void RequestStream::admitted(int cached) {
  result_.cached_tokens = cached;
  result_.queue_ms = ms_between(job_.submitted, std::chrono::steady_clock::now());
}

bool RequestStream::take(int32_t id, const TokenLogprobs* lp, int pos, bool last) {
  if (ended_) return false;
  const Request& rq = job_.req;
  if (!first_token_) {
    first_token_ = true;
    result_.ttft_ms = ms_between(job_.submitted, std::chrono::steady_clock::now());
  }
  if (!rq.ignore_eos && std::find(stop_ids_.begin(), stop_ids_.end(), id) != stop_ids_.end()) {
    why_ = StopReason::Eos;
    ended_ = true;
    return false;
  }
  sampler_.accept(id);
  ++result_.completion_tokens;
  TokenEvent ev;
  ev.id = id;
  ev.text = stops_.push(decoder_->push(id));
  if (lp) {
    ev.logprob = lp->chosen;
    ev.top = lp->top;
  }
  if (stops_.stopped()) {
    why_ = StopReason::StopString;
    stopped_by_string_ = true;
    ended_ = true;
  } else if (last) {
    why_ = StopReason::Eos;
    ended_ = true;
  } else if (rq.max_tokens > 0 && result_.completion_tokens >= rq.max_tokens) {
    why_ = StopReason::MaxTokens;
    ended_ = true;
  } else if (pos >= max_ctx_) {
    why_ = StopReason::ContextFull;
    ended_ = true;
  }
  if (job_.on_token && !job_.on_token(ev) && !ended_) {
    why_ = StopReason::Cancelled;
    job_.cancel = true;
    ended_ = true;
  }
  return !ended_;
}

void RequestStream::finish(std::optional<StopReason> why, std::string error, bool retryable) {
  if (done_) return;
  done_ = true;
  result_.stop = why ? *why : why_ ? *why_ : StopReason::MaxTokens;
  const bool cancelled = result_.stop == StopReason::Cancelled;
  result_.error = std::move(error);
  result_.retryable = retryable && !result_.error.empty();
  if (!stopped_by_string_ && result_.error.empty() && !cancelled) {
    std::string tail = stops_.push(decoder_->flush());
    if (stops_.stopped())
      result_.stop = StopReason::StopString;
    else
      tail += stops_.finish();
    result_.text_tail = std::move(tail);
  }
  auto now = std::chrono::steady_clock::now();
  result_.total_ms = ms_between(job_.submitted, now);
  if (job_.on_done) job_.on_done(result_);
}

}  // namespace wgc::llm
