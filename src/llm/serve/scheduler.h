// Scheduler: serves many generation requests on one LlamaModel from a worker thread. Requests
// (prompt token ids + sampling) queue up, are admitted while there is room, get their prompts
// prefilled and their tokens generated and streamed back through callbacks. The interface between
// the engine and the HTTP server (SERVE_API.md).
//
//   Scheduler s(model, tokenizer, {.parallel = 8});
//   Request r;  r.prompt = tokenizer.encode("The moon");  r.max_tokens = 32;
//   s.submit(std::move(r), [&](const TokenEvent& e) { push(e.text); return true; },
//            [&](const RequestResult& res) { finish(res); });
//
// Every submitted request gets on_done exactly once (finished, stopped, cancelled or failed);
// on_token runs before it for each generated token, in order. Callbacks run on the worker thread
// and must not block.
//
// Batch invariance: with greedy sampling or a fixed seed, a request's tokens do not depend on what
// else runs (per-request Sampler state; kernels whose per-row arithmetic does not depend on the
// batch).
#pragma once

#include "llm/generate/generator.h"
#include "llm/generate/sampler.h"
#include "llm/grammar/grammar.h"
#include "llm/model/llama.h"
#include "llm/tokenizer/tokenizer.h"
#include "ops/llm/linear_version.h"
#include "util/error.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace wgc::llm {

struct SchedulerOptions {
  int parallel = 8;          // sequences advanced per decode step (up to 64 or more)
  int max_ctx = 0;           // per-sequence context limit (0: the model's, capped like EngineOptions)
  int kv_block_tokens = 16;  // tokens per KV-cache block
  int kv_blocks = 0;         // blocks in the pool (0: parallel * max_ctx / block, within memory/limits)
  int max_queue = 64;        // waiting requests beyond which submit() throws QueueFull
  int prefill_chunk = 256;   // prompt tokens of one request per step, interleaved with decode steps
  // > 0: the sliding-window layers keep their K/V in a pool of this many blocks of their own
  // (BatchedOptions::swa_blocks), each sequence's blocks behind its window freed as it advances, so
  // those layers' memory does not grow with the context; kv_blocks then holds the other layers'
  // alone. Each running sequence reserves (window + prefill_chunk + 1) / kv_block_tokens + 2 of
  // them. Prefix caching is off with it (a cached prefix's blocks behind the window are gone).
  // GPU engine, models with sliding-window layers. 0: every layer in the one pool.
  int kv_swa_blocks = 0;
  // The linear kernels (BatchedOptions::linear): Auto, Batched, BatchedQ8 (8-bit activations for
  // Q4_0 / Q8_0 matrices), Naive.
  LinearVersion linear = LinearVersion::Auto;
  // Speculative decoding (docs/serving.md): a draft model of the target's tokenizer (the caller
  // checks it: check_draft) proposes up to draft_tokens tokens for each sequence without grammar
  // or penalties, in draft steps over all of them at once; the target checks them in the step's
  // one forward (the sequence's last token and its proposals as a chunk, logits at every
  // position). Greedy: the longest prefix equal to its own argmax, plus its own next token, so the
  // tokens are the target's alone, token for token (batch invariance). Sampled: the speculative
  // sampling rule (speculative_sample) with the sequence's Sampler, so the tokens are distributed
  // as the target's. The draft has its own KV pool of kv_blocks blocks, under the same block
  // tables. Its context must hold max_ctx.
  LlamaModel* draft = nullptr;  // not owned; outlives the scheduler (DeviceRecovery::rebuild_draft replaces it)
  int draft_tokens = 5;         // 1 .. kMaxDraftTokens
  // For benchmarks only (< 0: off): each proposal is kept with this probability (seeded; a run
  // that stops at the first one not kept) instead of by the target's argmax, so that the cost of
  // an acceptance rate can be measured with random-weight models. The tokens are NOT the target's.
  double draft_acceptance = -1;
};

struct Request {
  std::vector<int32_t> prompt;    // token ids, template already applied, BOS included as needed
  SamplingParams sampling;        // validated by the caller (SamplingParams::validate)
  int max_tokens = 128;           // < 0: until a stop or the context's end
  std::vector<std::string> stop;  // stop strings (text ends before one)
  bool ignore_eos = false;
  int top_logprobs = -1;  // -1: no logprobs; 0: the chosen token's; 1..20: and the N best
  // Constrained sampling (llm/grammar): the generated text is a prefix of a sentence of this
  // grammar, and the request ends (Eos) where it is a whole sentence that nothing can continue.
  // The sequence's step then brings back its full logits row too (in the same step: no extra
  // round trip); the top-k candidates decide the token when enough of them are allowed, else the
  // row is masked (llm/generate/constrained.h). Not with ignore_eos.
  std::shared_ptr<const Grammar> grammar;
};
inline constexpr int kMaxTopLogprobs = 20;

struct TokenEvent {  // one generated token, in order
  int32_t id = -1;
  std::string text;                            // text this token releases ("" while a stop string may begin)
  float logprob = 0;                           // of the chosen token (when asked), from the untempered softmax
  std::vector<std::pair<int32_t, float>> top;  // the N best (id, logprob), best first (when asked)
};

struct RequestResult {                      // when a request ends
  StopReason stop = StopReason::MaxTokens;  // Cancelled when cancel() or on_token ended it
  std::string text_tail;                    // held-back text released at the end (no stop string)
  int prompt_tokens = 0, cached_tokens = 0, completion_tokens = 0;
  double queue_ms = 0, ttft_ms = 0, total_ms = 0;  // from submit() to admission, first token, the end
  std::string error;                               // non-empty when it failed (e.g. the KV pool could never fit it)
  bool retryable = false;  // the failure is not the request's (the GPU device was lost): it may be sent again
  int draft_proposed = 0, draft_accepted = 0;  // speculative decoding: draft tokens proposed, of them kept
};

struct SchedulerStats {
  int queued = 0, running = 0;
  int kv_blocks_used = 0, kv_blocks_total = 0;
  // Totals since the start: requests finished (any reason), prompt tokens of admitted requests and
  // of them those found in the cache, tokens generated.
  uint64_t requests = 0, prompt_tokens = 0, cached_prompt_tokens = 0, generated_tokens = 0;
  // Speculative decoding: draft tokens proposed, of them kept by the target, and the target's
  // verify passes (a sequence's chunk of its last token and its proposals counts one).
  uint64_t draft_proposed = 0, draft_accepted = 0, draft_verifies = 0;
  double decode_tokens_per_s = 0;  // recent aggregate (the last few seconds)
  // A lost GPU device (DeviceRecovery): whether the model is being rebuilt now, and why; how many
  // times it was rebuilt; how long the last rebuild took, from the loss to serving again.
  bool recovering = false;
  std::string device_error;
  uint64_t recoveries = 0;
  double last_recovery_s = 0;
};

// How a scheduler survives a lost GPU device (DeviceLost from a step, or lost() while idle): the
// requests that have had no token yet go back to the front of the queue (they run again from their
// prompt, with the same result), the others end with a retryable error (RequestResult::retryable);
// the engine and the KV cache are dropped, rebuild() makes the model again (a new device, the
// weights uploaded again; retried until it succeeds) and serving resumes. Requests that arrive in
// the meantime wait in the queue. Without it (a CPU engine), a failed step fails what runs.
struct DeviceRecovery {
  std::function<bool()> lost;                   // whether the device is gone (polled about once a second while idle)
  std::function<LlamaModel&()> rebuild;         // the new model; the old one is no longer used when this runs
  std::function<void(const std::string&)> log;  // one line per event (lost, rebuilt, a failed attempt)
  // With SchedulerOptions::draft: the draft model made again (after rebuild()), on the new device.
  std::function<LlamaModel&()> rebuild_draft;
  explicit operator bool() const { return bool(rebuild); }
};

// submit() when max_queue requests wait.
struct QueueFull : Error {
  using Error::Error;
};
// submit() after stop_accepting().
struct NotAccepting : Error {
  using Error::Error;
};

class Scheduler {
 public:
  // Runs its own worker thread; model and tokenizer outlive it. The worker is the only user of
  // the model while the scheduler exists (and of the models recovery.rebuild() returns).
  Scheduler(LlamaModel& model, const Tokenizer& tokenizer, SchedulerOptions o = {}, DeviceRecovery recovery = {});
  ~Scheduler();  // cancels what runs and waits (their on_done: Cancelled), joins
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  using OnToken = std::function<bool(const TokenEvent&)>;  // return false to cancel the request
  using OnDone = std::function<void(const RequestResult&)>;
  // Thread-safe. Throws QueueFull when max_queue requests wait, NotAccepting after
  // stop_accepting(), wgc::Error when the request is invalid (empty prompt, ids outside the
  // vocabulary, top_logprobs out of range, the prompt alone exceeding the context: the message
  // says the lengths). Returns the request's id (> 0).
  uint64_t submit(Request r, OnToken on_token, OnDone on_done);
  void cancel(uint64_t id);      // frees its sequence and KV blocks at the next step (unknown ids: nothing)
  SchedulerStats stats() const;  // thread-safe
  void stop_accepting();         // later submit() throws NotAccepting
  void drain();                  // waits until nothing runs or waits

  const SchedulerOptions& options() const;  // as resolved (max_ctx, kv_blocks filled in)

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace wgc::llm
