// The scheduler's private parts (src/llm/serve/scheduler.h's Scheduler::Impl), shared by its files:
// scheduler.cpp (admission, steps, sampling, the worker), scheduler_speculative.cpp (a draft
// model's proposals and their verification) and scheduler_recovery.cpp (device loss).
#pragma once

#include "llm/serve/scheduler.h"

#include "llm/generate/constrained.h"
#include "llm/model/llama_batched.h"
#include "llm/serve/kv_blocks.h"
#include "llm/serve/request_stream.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <list>
#include <mutex>
#include <optional>
#include <random>
#include <thread>
#include <unordered_map>

namespace wgc::llm::scheduler_detail {

constexpr double kRateWindowMs = 3000;              // decode_tokens_per_s: tokens over the last 3 s
constexpr uint64_t kDefaultKvBudget = 48ull << 30;  // bytes: the cap of the default pool
constexpr int kMaxConstrainedCandidates = 64;       // StepSequence::top_k's limit

// A running request.
struct Seq {
  std::shared_ptr<Job> job;
  std::unique_ptr<RequestStream> rs;
  std::vector<int32_t> tokens;  // the prompt, then the generated tokens (the last one not fed yet)
  int prompt = 0;
  int cached = 0;  // tokens whose K/V are in the cache
  std::vector<int32_t> blocks;
  int reserved = 0;                      // blocks reserved for it, not allocated yet
  int published = 0;                     // of its blocks, those published to the prefix cache
  std::vector<int32_t> swa_blocks;       // kv_swa_blocks: the sliding layers' table (-1: freed)
  int swa_reserved = 0;                  // of that pool, reserved and not held
  std::optional<Constraint> constraint;  // Request::grammar followed
  // Speculative decoding: whether the draft proposes its tokens (no grammar, no penalties), and the
  // positions whose K/V the draft's pool holds (<= cached: the draft did not run a last kept
  // proposal, or one position of the verify pass that it never saw).
  bool spec = false;
  int dcached = 0;
  bool decoding() const { return cached >= prompt; }
};

// Speculative decoding's counts of a step (SchedulerStats::draft_*).
struct Drafted {
  uint64_t proposed = 0, accepted = 0, verifies = 0;
};

// A step submitted to the GPU: per sequence in it (nullptr once it ended), the tokens it feeds,
// whether it wants its next token, and how that token is picked; a speculating sequence's draft
// proposals (it feeds its last token and them, with logits at each: draft.size() + 1 rows).
struct Inflight {
  BatchedLlama::Pending pending;
  std::vector<Seq*> fed;
  std::vector<int> n;
  std::vector<bool> want;
  std::vector<SamplePlan> plan;
  std::vector<std::vector<int32_t>> draft;
  std::vector<std::vector<std::vector<Sampler::Candidate>>> q;  // sampled: the draft's chain of each proposal
  std::vector<std::vector<int32_t>> chunk;  // the speculating sequences' tokens fed (the spans' storage)
};

}  // namespace wgc::llm::scheduler_detail

namespace wgc::llm {

struct Scheduler::Impl {
  using Seq = scheduler_detail::Seq;
  using Drafted = scheduler_detail::Drafted;
  using Inflight = scheduler_detail::Inflight;

  LlamaModel* model;      // the worker's (recovery replaces it)
  const ModelConfig cfg;  // the model's, for submit()'s checks on any thread
  Tokenizer tok;
  SchedulerOptions opt;
  DeviceRecovery recovery;
  std::vector<int32_t> stop_ids;
  // The tokens' texts for constrained sampling: made by the first submit() with a grammar (a pass
  // over the vocabulary, on the caller's thread rather than the worker's).
  std::once_flag texts_once;
  std::shared_ptr<const TokenTexts> texts;
  std::unique_ptr<BatchedLlama> engine;
  std::unique_ptr<KvBlocks> kv;
  LlamaModel* draft = nullptr;                 // SchedulerOptions::draft (recovery replaces it)
  std::unique_ptr<BatchedLlama> draft_engine;  // over *draft, its pool under the same block tables
  std::unique_ptr<KvBlocks> swa_kv;            // kv_swa_blocks > 0: the sliding-window layers' pool
  int window = 0, swa_per_seq = 0;             // its window, and the blocks a sequence reserves of it

  mutable std::mutex mu;
  std::condition_variable wake;  // the worker: a job arrived or quit
  std::condition_variable idle;  // drain(): nothing waits or runs
  std::deque<std::shared_ptr<Job>> queue;
  std::unordered_map<uint64_t, std::shared_ptr<Job>> live;  // queued or running, for cancel()
  bool accepting = true, quit = false;
  uint64_t next_id = 1;
  int n_running = 0, kv_used = 0;
  SchedulerStats totals;
  std::deque<std::pair<SteadyTime, int>> recent;  // (time, tokens) of recent steps
  std::thread worker;
  std::condition_variable backoff;  // a failed rebuild waits on it (quit wakes it)

  // The worker's own state.
  std::list<Seq> running;         // in admission order
  int reserved = 0;               // blocks reserved by running sequences, not allocated yet
  int swa_reserved = 0;           // the same of swa_kv
  std::mt19937_64 accept_rng{1};  // SchedulerOptions::draft_acceptance's draws

  Impl(LlamaModel& m, const Tokenizer& t, SchedulerOptions o, DeviceRecovery r);

  // The engine over *model and an empty KV pool (at the start, and after a rebuild).
  void make_engine();

  void check(const Request& r) const;

  // Constrained sampling's token texts, whose end-of-turn ids are the ones the requests stop at.
  void make_texts();

  uint64_t submit(Request r, OnToken on_token, OnDone on_done);

  void cancel(uint64_t id);

  SchedulerStats stats() const;

  void drain();

  void shutdown();

  // ---- the worker ----------------------------------------------------------------------------

  void publish_state(int tokens, const Drafted& drafted = {});

  // Ends a running sequence: on_done, its blocks and reservation back.
  void end(std::list<Seq>::iterator it, std::optional<StopReason> why, std::string error = {}, bool retryable = false);

  // A request that never ran (cancelled while queued, or refused).
  void end_queued(const std::shared_ptr<Job>& job, StopReason why, std::string error = {});

  void loop();

  // The device is gone (DeviceRecovery): requests without a token go back to the queue's front,
  // the others end with a retryable error; then a new model, engine and KV pool.
  void recover(std::string why);

  // Ends every queued request with a retryable error (no model to run them on).
  void fail_queued(const std::string& why);

  // Admits queued requests (FIFO) while a sequence slot and their blocks are free.
  void admit();

  // Allocates blocks (from its reservation) so that s covers `positions` positions. The sliding
  // layers' pool: first the blocks that end before the window of position s.cached (the first
  // query of any step of s still to run or in flight) go back to its reservation.
  void cover(Seq& s, int positions);

  // What the next token of s needs from the logits.
  void want_token(Seq& s, StepSequence& q, SamplePlan& plan) const;

  // One forward over every running sequence: a decode token each (with a draft's proposals, the
  // last token and them), prompt chunks within the budget.
  Inflight submit_step();

  // Draft tokens s proposes this step (0: it decodes plainly): within draft_tokens, its
  // max_tokens (a verify pass gives up to k + 1 tokens; k < the tokens left keeps its positions
  // within its reserved blocks) and the context (the pass runs positions cached .. cached + k).
  int draft_count(const Seq& s) const;

  // Whether the draft's vocabulary holds these ids (a draft of a padded vocabulary may have fewer
  // rows than the target).
  bool draft_takes(std::span<const int32_t> ids) const;

  // The draft's proposals, per running sequence (empty: none), k_of[i] at most, and for a sampled
  // sequence the draft's distribution each was drawn from (its Sampler's chain): the draft steps
  // over every proposing sequence at once, the first running the tokens the draft has not seen
  // up to the last one (and the speculating sequences' prompt chunks of this step, n_of, so that
  // its pool holds their prompts). Greedy only: each later step is fed the argmax of the one before
  // on the device (feed_row) and all are collected at the end; with a sampled sequence each step is
  // collected and its proposals drawn on the host (the sequence's Sampler) before the next.
  // Proposals past the target's vocabulary are cut.
  struct Proposals {
    std::vector<std::vector<int32_t>> ids;
    std::vector<std::vector<std::vector<Sampler::Candidate>>> q;
  };
  Proposals propose(const std::vector<int>& n_of, const std::vector<int>& k_of);

  // The Sampler's chain of s over a row of logits: the candidates it keeps, with their probabilities.
  static std::vector<Sampler::Candidate> chain(Seq& s, const SamplePlan& plan, const StepLogits& out);

  // Whether the step after f can be recorded before f's tokens are back: the engine runs steps
  // while the host records (the GPU), every running sequence is in f and decodes greedily without
  // logprobs, nothing waits to be admitted or cancelled, and no draft model proposes tokens (its
  // sequences' next step depends on what f kept).
  bool can_run_ahead(const Inflight& f);

  // The step after f, each sequence's token the argmax of its row in f (sequences whose token
  // from f is their last by max_tokens or the context are left out).
  Inflight submit_ahead(const Inflight& f);

  // Collects f, hands out its tokens, ends what finished (and drops it from `next`, in flight).
  void process(Inflight& f, Inflight* next);

  // A speculating sequence's verify pass: greedy, the longest prefix of its proposals d equal to
  // the target's argmax at each position, then the target's own token; sampled, the speculative
  // sampling rule on the target's chains (out) and the draft's (q); handed out in order. The
  // rejected positions of both pools are dropped: past `cached` (and `dcached`), they are written
  // again before they are read, and the blocks past the next token go back to its reservation.
  // Returns false when the request ended.
  bool verify(Seq& s, const std::vector<int32_t>& d, const std::vector<std::vector<Sampler::Candidate>>& q,
              const SamplePlan& plan, std::span<StepLogits> out, int& generated, Drafted& drafted);

  // While the GPU runs step f: the grammar masks its constrained sequences will be picked under
  // (cache lookups mostly; the misses' trie walks spread over threads when there are several).
  void prepare_masks(const Inflight& f);

  static int32_t pick(Seq& s, const SamplePlan& plan, const StepLogits& out);

  // The next token of a constrained sequence: among the allowed candidates when they decide it,
  // else from its full row with what the grammar forbids masked.
  static int32_t pick_constrained(Seq& s, const SamplePlan& plan, StepLogits& out);

  static TokenLogprobs logprobs(const Seq& s, const StepLogits& out, int32_t id);
};

}  // namespace wgc::llm
