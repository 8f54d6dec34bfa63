// The scheduler's first engine: the single-sequence LlamaModel, one request after another (its KV
// cache keeps the last request's tokens, so a request that starts with them skips their prefill).
#include "llm/serve/scheduler.h"

#include "llm/serve/request_stream.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>

namespace wgc::llm {

namespace {
constexpr double kRateWindowMs = 3000;  // decode_tokens_per_s: tokens over the last 3 s
}

struct Scheduler::Impl {
  LlamaModel& model;
  Tokenizer tok;
  SchedulerOptions opt;
  std::vector<int32_t> stop_ids;

  mutable std::mutex mu;
  std::condition_variable wake;  // the worker: a job arrived or quit
  std::condition_variable idle;  // drain(): nothing waits or runs
  std::deque<std::shared_ptr<Job>> queue;
  std::unordered_map<uint64_t, std::shared_ptr<Job>> live;  // queued or running, for cancel()
  bool accepting = true, quit = false;
  uint64_t next_id = 1;
  int running = 0;
  SchedulerStats totals;
  int kv_used = 0;
  std::deque<std::pair<SteadyTime, int>> recent;  // (time, tokens) of recent steps
  std::thread worker;

  // The single-sequence engine's state: the tokens in the model's cache.
  std::vector<int32_t> cached;

  Impl(LlamaModel& m, const Tokenizer& t, SchedulerOptions o) : model(m), tok(t), opt(o) {
    if (opt.parallel < 1) throw Error("wgc: scheduler: parallel must be >= 1, not " + std::to_string(opt.parallel));
    if (opt.kv_block_tokens < 1)
      throw Error("wgc: scheduler: kv_block_tokens must be >= 1, not " + std::to_string(opt.kv_block_tokens));
    if (opt.max_queue < 0) throw Error("wgc: scheduler: max_queue must be >= 0");
    if (opt.prefill_chunk < 1) throw Error("wgc: scheduler: prefill_chunk must be >= 1");
    if (opt.max_ctx < 0) throw Error("wgc: scheduler: max_ctx must be >= 0");
    opt.max_ctx = opt.max_ctx > 0 ? std::min(opt.max_ctx, model.max_ctx()) : model.max_ctx();
    // This engine has one sequence: its cache, in blocks.
    opt.kv_blocks = (model.max_ctx() + opt.kv_block_tokens - 1) / opt.kv_block_tokens;
    stop_ids = end_of_turn_ids(&tok, model.config());
    worker = std::thread([this] { loop(); });
  }

  void check(const Request& r) const {
    if (r.prompt.empty()) throw Error("wgc: the prompt is empty (no tokens)");
    const int64_t vocab = model.config().vocab_size;
    for (int32_t id : r.prompt)
      if (id < 0 || id >= vocab)
        throw Error("wgc: prompt token id " + std::to_string(id) + " is outside the vocabulary (0.." +
                    std::to_string(vocab - 1) + ")");
    if (int64_t(r.prompt.size()) > opt.max_ctx)
      throw Error("wgc: the prompt has " + std::to_string(r.prompt.size()) + " tokens but the context holds " +
                  std::to_string(opt.max_ctx));
    if (r.top_logprobs < -1 || r.top_logprobs > kMaxTopLogprobs)
      throw Error("wgc: top_logprobs = " + std::to_string(r.top_logprobs) + " (must be -1..." +
                  std::to_string(kMaxTopLogprobs) + ")");
    r.sampling.validate();
  }

  uint64_t submit(Request r, OnToken on_token, OnDone on_done) {
    check(r);
    auto job = std::make_shared<Job>();
    job->req = std::move(r);
    job->on_token = std::move(on_token);
    job->on_done = std::move(on_done);
    job->submitted = std::chrono::steady_clock::now();
    std::lock_guard lk(mu);
    if (!accepting) throw NotAccepting("wgc: the scheduler no longer accepts requests (shutting down)");
    if (int(queue.size()) >= opt.max_queue)
      throw QueueFull("wgc: " + std::to_string(queue.size()) + " requests already wait (max_queue " +
                      std::to_string(opt.max_queue) + ")");
    job->id = next_id++;
    queue.push_back(job);
    live[job->id] = job;
    wake.notify_one();
    return job->id;
  }

  void cancel(uint64_t id) {
    std::lock_guard lk(mu);
    if (auto it = live.find(id); it != live.end()) it->second->cancel = true;
  }

  SchedulerStats stats() const {
    std::lock_guard lk(mu);
    SchedulerStats s = totals;
    s.queued = int(queue.size());
    s.running = running;
    s.kv_blocks_total = opt.kv_blocks;
    s.kv_blocks_used = kv_used;
    auto now = std::chrono::steady_clock::now();
    int tokens = 0;
    for (auto& [t, n] : recent)
      if (ms_between(t, now) <= kRateWindowMs) tokens += n;
    s.decode_tokens_per_s = tokens * 1e3 / kRateWindowMs;
    return s;
  }

  void drain() {
    std::unique_lock lk(mu);
    idle.wait(lk, [&] { return queue.empty() && running == 0; });
  }

  void shutdown() {
    {
      std::lock_guard lk(mu);
      accepting = false;
      quit = true;
      for (auto& [id, job] : live) job->cancel = true;
      wake.notify_all();
    }
    if (worker.joinable()) worker.join();
  }

  // ---- the worker ----------------------------------------------------------------------------

  void note_tokens(int n) {
    std::lock_guard lk(mu);
    totals.generated_tokens += uint64_t(n);
    auto now = std::chrono::steady_clock::now();
    recent.push_back({now, n});
    while (!recent.empty() && ms_between(recent.front().first, now) > kRateWindowMs) recent.pop_front();
  }

  void ended(const std::shared_ptr<Job>& job) {
    std::lock_guard lk(mu);
    live.erase(job->id);
    --running;
    ++totals.requests;
    if (queue.empty() && running == 0) idle.notify_all();
  }

  void loop() {
    for (;;) {
      std::shared_ptr<Job> job;
      {
        std::unique_lock lk(mu);
        wake.wait(lk, [&] { return quit || !queue.empty(); });
        if (queue.empty()) return;  // quit (queued requests were all taken, cancelled)
        job = queue.front();
        queue.pop_front();
        ++running;
      }
      RequestStream rs(*job, tok, stop_ids, opt.max_ctx);
      if (job->cancel) {
        rs.finish(StopReason::Cancelled);
      } else {
        try {
          serve(rs);
        } catch (const std::exception& e) {
          // The model's cache may hold anything now: start the next request from scratch.
          cached.clear();
          rs.finish(StopReason::Cancelled, e.what());
        }
      }
      ended(job);
    }
  }

  // The next token after running `tokens` (appended to the cache), as the request's sampler picks it.
  int32_t step(RequestStream& rs, std::span<const int32_t> tokens, std::optional<TokenLogprobs>& lp) {
    Sampler& s = rs.sampler();
    SamplePlan plan = s.plan();
    if (rs.wants_logprobs() || (plan.kind == SamplePlan::TopK && plan.k > model.config().vocab_size))
      plan = {SamplePlan::Full, 0};
    int32_t id = 0;
    switch (plan.kind) {
      case SamplePlan::Greedy: id = model.greedy(tokens); break;
      case SamplePlan::TopK: id = s.sample(model.top_k(tokens, plan.k)); break;
      case SamplePlan::Full: {
        auto logits = model.logits(tokens);
        id = s.sample(logits);
        if (rs.wants_logprobs()) lp = token_logprobs(logits, id, rs.job().req.top_logprobs);
        break;
      }
    }
    cached.insert(cached.end(), tokens.begin(), tokens.end());
    return id;
  }

  void set_kv_used() {
    std::lock_guard lk(mu);
    kv_used = (model.n_past() + opt.kv_block_tokens - 1) / opt.kv_block_tokens;
  }

  void serve(RequestStream& rs) {
    const Request& rq = rs.job().req;
    std::span<const int32_t> prompt = rq.prompt;
    // Reuse the cached prefix; at least one token must run to give logits.
    if (size_t(model.n_past()) != cached.size()) cached.clear(), model.rewind(0);
    size_t common = 0;
    while (common < cached.size() && common < prompt.size() && cached[common] == prompt[common]) ++common;
    if (common == prompt.size()) --common;
    model.rewind(int(common));
    cached.resize(common);
    rs.admitted(int(common));
    {
      std::lock_guard lk(mu);
      totals.prompt_tokens += prompt.size();
      totals.cached_prompt_tokens += common;
    }
    if (rq.max_tokens == 0) return rs.finish(StopReason::MaxTokens);

    // Prefill in chunks, checking for cancellation between them.
    std::span<const int32_t> rest = prompt.subspan(common);
    const size_t chunk = size_t(opt.prefill_chunk);
    while (rest.size() > chunk) {
      model.logits(rest.first(chunk));
      cached.insert(cached.end(), rest.begin(), rest.begin() + std::ptrdiff_t(chunk));
      rest = rest.subspan(chunk);
      set_kv_used();
      if (rs.cancelled()) return rs.finish(StopReason::Cancelled);
    }
    std::optional<TokenLogprobs> lp;
    int32_t next = step(rs, rest, lp);
    set_kv_used();
    note_tokens(1);
    if (!rs.take(next, lp ? &*lp : nullptr, model.n_past())) return rs.finish();

    if (rs.sampler().plan().kind == SamplePlan::Greedy && !rs.wants_logprobs()) {
      // The GPU passes each argmax to the next step; the host records ahead.
      int budget = rq.max_tokens > 0 ? rq.max_tokens - rs.generated() : opt.max_ctx;
      int32_t last = next;
      bool more = true;
      model.decode_greedy(next, std::min(budget, opt.max_ctx - model.n_past()), [&](int32_t id) {
        cached.push_back(last);
        last = id;
        note_tokens(1);
        if (rs.cancelled()) return more = false;
        return more = rs.take(id, nullptr, model.n_past());
      });
      set_kv_used();
      if (!more || rs.cancelled())
        return rs.finish(rs.cancelled() ? std::optional(StopReason::Cancelled) : std::nullopt);
      // The budget or the context ran out: take() ended it at the last token.
      return rs.finish();
    }
    for (;;) {
      if (rs.cancelled()) return rs.finish(StopReason::Cancelled);
      lp.reset();
      next = step(rs, std::span(&next, 1), lp);
      set_kv_used();
      note_tokens(1);
      if (!rs.take(next, lp ? &*lp : nullptr, model.n_past())) return rs.finish();
    }
  }
};

Scheduler::Scheduler(LlamaModel& model, const Tokenizer& tokenizer, SchedulerOptions o)
    : impl_(std::make_unique<Impl>(model, tokenizer, o)) {}

Scheduler::~Scheduler() { impl_->shutdown(); }  // the worker ends every queued request (cancelled)

uint64_t Scheduler::submit(Request r, OnToken on_token, OnDone on_done) {
  return impl_->submit(std::move(r), std::move(on_token), std::move(on_done));
}
void Scheduler::cancel(uint64_t id) { impl_->cancel(id); }
SchedulerStats Scheduler::stats() const { return impl_->stats(); }
void Scheduler::stop_accepting() {
  std::lock_guard lk(impl_->mu);
  impl_->accepting = false;
}
void Scheduler::drain() { impl_->drain(); }
const SchedulerOptions& Scheduler::options() const { return impl_->opt; }

}  // namespace wgc::llm
