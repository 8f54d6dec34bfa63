// The scheduler: continuous batching on BatchedLlama. Each step advances every running request:
// one decode token each, plus up to prefill_chunk prompt tokens of the requests still being
// prefilled (oldest first), so a long prompt does not stall the streams. Requests are admitted
// (FIFO) while fewer than `parallel` run and the KV pool can hold their longest possible
// sequence (prompt + max_tokens, within the context) beside the others' reservations; the full
// blocks of their prompt found in the prefix cache are shared instead of run again.
#include "llm/serve/scheduler_impl.h"

namespace wgc::llm {

using namespace scheduler_detail;

Scheduler::Impl::Impl(LlamaModel& m, const Tokenizer& t, SchedulerOptions o, DeviceRecovery r)
    : model(&m), cfg(m.config()), tok(t), opt(o), recovery(std::move(r)), draft(o.draft) {
  const std::string what = "wgc: scheduler: ";
  if (opt.parallel < 1) throw Error(what + "parallel must be >= 1, not " + std::to_string(opt.parallel));
  if (opt.kv_block_tokens < 1)
    throw Error(what + "kv_block_tokens must be >= 1, not " + std::to_string(opt.kv_block_tokens));
  if (opt.max_queue < 0) throw Error(what + "max_queue must be >= 0");
  if (opt.prefill_chunk < 1) throw Error(what + "prefill_chunk must be >= 1");
  if (opt.max_ctx < 0 || opt.kv_blocks < 0 || opt.kv_swa_blocks < 0)
    throw Error(what + "max_ctx, kv_blocks and kv_swa_blocks must be >= 0");
  opt.max_ctx = opt.max_ctx > 0 ? std::min(opt.max_ctx, model->max_ctx()) : model->max_ctx();
  const int B = opt.kv_block_tokens;
  const int per_seq = (opt.max_ctx + B - 1) / B;
  double global_share = 1;  // of a position's bytes, in the main pool
  if (opt.kv_swa_blocks > 0) {
    if (!cfg.sliding_window || *cfg.sliding_window <= 0)
      throw Error(what + "kv_swa_blocks: the model has no sliding-window layers");
    window = int(std::min<int64_t>(*cfg.sliding_window, opt.max_ctx));
    // a step's first query reads from `cached - window + 1`, the step (or a prompt chunk and a
    // token recorded ahead) writes up to `cached + prefill_chunk + 1`: the blocks that span
    swa_per_seq = (window + opt.prefill_chunk + 1) / B + 2;
    if (swa_per_seq > opt.kv_swa_blocks)
      throw Error(what + "kv_swa_blocks " + std::to_string(opt.kv_swa_blocks) + " holds less than one sequence's " +
                  std::to_string(swa_per_seq) + " blocks (the window, a prompt chunk)");
    int64_t sliding = 0;
    for (int64_t l = 0; l < cfg.n_layers; ++l) sliding += cfg.layer_is_sliding(l) ? 1 : 0;
    global_share = std::max(1e-9, double(cfg.n_layers - sliding) / double(std::max<int64_t>(1, cfg.n_layers)));
  }
  if (opt.kv_blocks == 0) {
    // (in the model's cache type: a packed cache fits more blocks in the budget)
    const uint64_t block_bytes =
        std::max<uint64_t>(1, uint64_t(double(B) * model->kv_bytes_per_token() * global_share));
    const uint64_t cap = std::max<uint64_t>(uint64_t(per_seq), kDefaultKvBudget / block_bytes);
    opt.kv_blocks = int(std::min<uint64_t>(uint64_t(opt.parallel) * uint64_t(per_seq), cap));
  }
  if (draft) {
    if (opt.draft_tokens < 1 || opt.draft_tokens > kMaxDraftTokens)
      throw Error(what + "draft_tokens must be 1 to " + std::to_string(kMaxDraftTokens) + ", not " +
                  std::to_string(opt.draft_tokens));
    if (draft->max_ctx() < opt.max_ctx)
      throw Error(what + "the draft model's context holds " + std::to_string(draft->max_ctx()) +
                  " positions, the target's " + std::to_string(opt.max_ctx) + " (give the draft as long a context)");
    if (!(opt.draft_acceptance <= 1)) throw Error(what + "draft_acceptance must be at most 1 (< 0: off)");
    // The sliding pool frees blocks behind a sequence's window as it goes, and its reservation
    // does not count a verify pass's rejected positions: the two are not combined yet.
    if (opt.kv_swa_blocks > 0)
      throw Error(what + "kv_swa_blocks (a sliding-window pool) and a draft model cannot be combined yet: give one");
    if (recovery && !recovery.rebuild_draft)
      throw Error(what + "a draft model with device recovery needs DeviceRecovery::rebuild_draft");
  }
  make_engine();
  stop_ids = end_of_turn_ids(&tok, cfg);
  worker = std::thread([this] { loop(); });
}

void Scheduler::Impl::make_engine() {
  BatchedOptions bo;
  // A speculating sequence feeds its last token and its proposals, with logits at each.
  const int per_seq = draft ? opt.draft_tokens + 1 : 1;
  bo.max_rows = opt.parallel * per_seq;
  bo.max_tokens = opt.parallel * per_seq + opt.prefill_chunk;
  bo.block_tokens = opt.kv_block_tokens;
  bo.blocks = opt.kv_blocks;
  bo.linear = opt.linear;
  bo.swa_blocks = opt.kv_swa_blocks;
  engine = std::make_unique<BatchedLlama>(*model, bo);
  if (draft) {  // its first step of a round may catch up a position or two beside the prompt chunks
    BatchedOptions dbo = bo;
    dbo.swa_blocks = 0;
    dbo.max_rows = opt.parallel;
    dbo.max_tokens = opt.parallel * 3 + opt.prefill_chunk;
    draft_engine = std::make_unique<BatchedLlama>(*draft, dbo);
  }
  kv = std::make_unique<KvBlocks>(opt.kv_blocks, opt.kv_block_tokens);
  if (opt.kv_swa_blocks > 0) swa_kv = std::make_unique<KvBlocks>(opt.kv_swa_blocks, opt.kv_block_tokens);
}

void Scheduler::Impl::check(const Request& r) const {
  if (r.prompt.empty()) throw Error("wgc: the prompt is empty (no tokens)");
  const int64_t vocab = cfg.vocab_size;
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
  if (r.grammar && r.ignore_eos) throw Error("wgc: a grammar cannot be combined with ignore_eos");
  validate(r.sampling);
}

void Scheduler::Impl::make_texts() {
  std::call_once(texts_once, [&] {
    auto t = std::make_shared<TokenTexts>(*TokenTexts::of(tok));
    t->stop_ids = stop_ids;
    texts = std::move(t);
  });
}

uint64_t Scheduler::Impl::submit(Request r, OnToken on_token, OnDone on_done) {
  check(r);
  if (r.grammar) make_texts();
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

void Scheduler::Impl::cancel(uint64_t id) {
  std::lock_guard lk(mu);
  if (auto it = live.find(id); it != live.end()) {
    it->second->cancel = true;
    wake.notify_one();
  }
}

SchedulerStats Scheduler::Impl::stats() const {
  std::lock_guard lk(mu);
  SchedulerStats s = totals;
  s.queued = int(queue.size());
  s.running = n_running;
  s.kv_blocks_total = opt.kv_blocks;
  s.kv_blocks_used = kv_used;
  auto now = std::chrono::steady_clock::now();
  int tokens = 0;
  for (auto& [t, n] : recent)
    if (ms_between(t, now) <= kRateWindowMs) tokens += n;
  s.decode_tokens_per_s = tokens * 1e3 / kRateWindowMs;
  return s;
}

void Scheduler::Impl::drain() {
  std::unique_lock lk(mu);
  idle.wait(lk, [&] { return queue.empty() && n_running == 0; });
}

void Scheduler::Impl::shutdown() {
  {
    std::lock_guard lk(mu);
    accepting = false;
    quit = true;
    for (auto& [id, job] : live) job->cancel = true;
    wake.notify_all();
    backoff.notify_all();
  }
  if (worker.joinable()) worker.join();
}

void Scheduler::Impl::publish_state(int tokens, const Drafted& drafted) {
  std::lock_guard lk(mu);
  totals.draft_proposed += drafted.proposed;
  totals.draft_accepted += drafted.accepted;
  totals.draft_verifies += drafted.verifies;
  n_running = int(running.size());
  kv_used = kv->referenced();
  if (tokens > 0) {
    totals.generated_tokens += uint64_t(tokens);
    auto now = std::chrono::steady_clock::now();
    recent.push_back({now, tokens});
    while (!recent.empty() && ms_between(recent.front().first, now) > kRateWindowMs) recent.pop_front();
  }
}

void Scheduler::Impl::end(std::list<Seq>::iterator it, std::optional<StopReason> why, std::string error,
                          bool retryable) {
  it->rs->finish(why, std::move(error), retryable);
  kv->release_all(it->blocks);
  reserved -= it->reserved;
  for (int32_t b : it->swa_blocks)
    if (b >= 0) swa_kv->release(b);
  swa_reserved -= it->swa_reserved;
  const uint64_t id = it->job->id;
  running.erase(it);
  std::lock_guard lk(mu);
  live.erase(id);
  ++totals.requests;
  n_running = int(running.size());
  kv_used = kv->referenced();
  if (queue.empty() && running.empty()) idle.notify_all();
}

void Scheduler::Impl::end_queued(const std::shared_ptr<Job>& job, StopReason why, std::string error) {
  RequestStream rs(*job, tok, stop_ids, opt.max_ctx);
  rs.finish(why, std::move(error));
  std::lock_guard lk(mu);
  live.erase(job->id);
  ++totals.requests;
  if (queue.empty() && running.empty()) idle.notify_all();
}

void Scheduler::Impl::loop() {
  std::optional<Inflight> inflight;  // the step the GPU runs
  for (;;) {
    try {
      if (!inflight) {
        {
          std::unique_lock lk(mu);
          auto work = [&] { return quit || !queue.empty() || !running.empty(); };
          // While idle, a lost device is noticed within a second (a recovery then starts before
          // the next request needs it).
          if (!recovery) {
            wake.wait(lk, work);
          } else if (!wake.wait_for(lk, std::chrono::seconds(1), work)) {
            lk.unlock();
            if (recovery.lost && recovery.lost()) recover("the GPU device was lost while idle");
            continue;
          }
          if (quit && queue.empty() && running.empty()) return;
        }
        for (auto it = running.begin(); it != running.end();) {
          auto next = std::next(it);
          if (it->job->cancel) end(it, StopReason::Cancelled);
          it = next;
        }
        admit();
        if (running.empty()) continue;
        inflight = submit_step();
      }
      // While the GPU runs it, record the next step where its tokens can come from this one's
      // argmax on the GPU (greedy decoding with nothing else to do).
      std::optional<Inflight> next;
      if (can_run_ahead(*inflight)) {
        next = submit_ahead(*inflight);
        if (!next->pending) next.reset();  // every sequence ends with this step's token
      }
      process(*inflight, next ? &*next : nullptr);
      inflight = std::move(next);
    } catch (const DeviceLost& e) {
      inflight.reset();
      if (recovery) {
        recover(e.what());
      } else {
        while (!running.empty()) end(running.begin(), StopReason::Cancelled, e.what(), true);
      }
    } catch (const std::exception& e) {
      // The pool may hold anything now: end what runs, with the error.
      inflight.reset();
      while (!running.empty()) end(running.begin(), StopReason::Cancelled, e.what());
    }
  }
}

void Scheduler::Impl::admit() {
  const int B = opt.kv_block_tokens;
  while (int(running.size()) < opt.parallel) {
    std::shared_ptr<Job> job;
    {
      std::lock_guard lk(mu);
      if (queue.empty()) return;
      job = queue.front();
    }
    const Request& rq = job->req;
    auto pop = [&] {
      std::lock_guard lk(mu);
      queue.pop_front();
    };
    if (job->cancel) {
      pop();
      end_queued(job, StopReason::Cancelled);
      continue;
    }
    const int P = int(rq.prompt.size());
    // Positions it may fill: the prompt and each generated token but the last.
    const int64_t most = rq.max_tokens < 0 ? opt.max_ctx : int64_t(P) + rq.max_tokens - 1;
    const int need = int((std::min<int64_t>(most, opt.max_ctx) + B - 1) / B);
    if (need > kv->total()) {
      pop();
      end_queued(job, StopReason::Cancelled,
                 "wgc: the request needs " + std::to_string(need) + " KV blocks of " + std::to_string(B) +
                     " tokens (prompt " + std::to_string(P) + " + max_tokens " + std::to_string(rq.max_tokens) +
                     "), the pool has " + std::to_string(kv->total()) + " (lower max_tokens, or raise kv_blocks)");
      continue;
    }
    // Full blocks of the prompt already cached (at least its last token runs, for the logits);
    // none with the sliding layers' pool, whose blocks behind the windows are gone.
    std::vector<int32_t> shared = rq.max_tokens == 0 || swa_kv ? std::vector<int32_t>{} : kv->match(rq.prompt, P - 1);
    const int fresh = need - int(shared.size());
    const int swa_need = swa_kv ? std::min(need, swa_per_seq) : 0;
    if (fresh > kv->available() - reserved || (swa_kv && swa_need > swa_kv->available() - swa_reserved)) {
      kv->release_all(shared);
      return;  // waits for blocks (FIFO: the ones behind it wait too)
    }
    std::optional<Constraint> constraint;
    if (rq.grammar) {
      try {
        constraint.emplace(rq.grammar, texts);
      } catch (const std::exception& e) {
        kv->release_all(shared);
        pop();
        end_queued(job, StopReason::Cancelled, e.what());
        continue;
      }
    }
    pop();
    Seq s;
    s.job = job;
    s.constraint = std::move(constraint);
    s.rs = std::make_unique<RequestStream>(*job, tok, stop_ids, opt.max_ctx);
    s.tokens = rq.prompt;
    s.prompt = P;
    s.blocks = std::move(shared);
    s.cached = int(s.blocks.size()) * B;
    s.published = int(s.blocks.size());
    s.reserved = std::max(0, fresh);
    reserved += s.reserved;
    // (the shared blocks' draft K/V are there when their publisher speculated too; else only its
    // proposals suffer)
    s.spec = draft_engine != nullptr && !s.constraint && !rq.sampling.has_penalties();
    s.dcached = s.cached;
    s.swa_reserved = swa_need;
    swa_reserved += swa_need;
    s.rs->admitted(s.cached);
    running.push_back(std::move(s));
    {
      std::lock_guard lk(mu);
      totals.prompt_tokens += uint64_t(P);
      totals.cached_prompt_tokens += uint64_t(running.back().cached);
      n_running = int(running.size());
      kv_used = kv->referenced();
    }
    if (rq.max_tokens == 0) end(std::prev(running.end()), StopReason::MaxTokens);
  }
}

void Scheduler::Impl::cover(Seq& s, int positions) {
  const int B = opt.kv_block_tokens;
  while (int(s.blocks.size()) * B < positions) {
    int32_t b = kv->allocate();
    if (b < 0 || s.reserved == 0) throw Error("wgc: scheduler: the KV pool ran out of reserved blocks");
    s.blocks.push_back(b);
    --s.reserved;
    --reserved;
  }
  if (!swa_kv) return;
  const int lo = std::max(0, s.cached - window + 1);
  for (size_t i = 0; i < s.swa_blocks.size() && int(i + 1) * B <= lo; ++i)
    if (s.swa_blocks[i] >= 0) {
      swa_kv->release(s.swa_blocks[i]);
      s.swa_blocks[i] = -1;
      ++s.swa_reserved;
      ++swa_reserved;
    }
  while (int(s.swa_blocks.size()) * B < positions) {
    int32_t b = swa_kv->allocate();
    if (b < 0 || s.swa_reserved == 0)
      throw Error("wgc: scheduler: the sliding-window KV pool ran out of reserved blocks");
    s.swa_blocks.push_back(b);
    --s.swa_reserved;
    --swa_reserved;
  }
}

void Scheduler::Impl::want_token(Seq& s, StepSequence& q, SamplePlan& plan) const {
  plan = s.rs->sampler().plan();
  if (plan.kind == SamplePlan::TopK && plan.k > cfg.vocab_size) plan = {SamplePlan::Full, 0};
  // Greedy: the argmax; TopK: the candidates; Full: the whole row. Logprobs: the N best too.
  const int lp = s.job->req.top_logprobs;
  q.top_k = std::max(plan.kind == SamplePlan::Full ? 0 : plan.k, lp);
  q.top_k = int(std::min<int64_t>(q.top_k, cfg.vocab_size));
  q.full = plan.kind == SamplePlan::Full;
  q.logsumexp = lp >= 0;
  // Constrained: the most candidates the engine gives (enough of them allowed decide the token),
  // and the full row in the same step for when they do not.
  if (s.constraint) {
    q.top_k = int(std::min<int64_t>(std::max(q.top_k, kMaxConstrainedCandidates), cfg.vocab_size));
    q.full = true;
  }
}

Inflight Scheduler::Impl::submit_step() {
  Inflight f;
  std::vector<int> n_of, k_of;  // per running sequence: its tokens (prompt chunk or next token), its proposals
  int budget = opt.prefill_chunk;
  for (Seq& s : running) {
    const int n = s.decoding() ? 1 : std::min(s.prompt - s.cached, budget);
    if (!s.decoding()) budget -= n;
    n_of.push_back(n);
    k_of.push_back(draft_engine ? draft_count(s) : 0);
  }
  Proposals props;
  if (draft_engine) {
    props = propose(n_of, k_of);
  } else {
    props.ids.resize(running.size());
    props.q.resize(running.size());
  }
  std::vector<StepSequence> in;
  f.chunk.reserve(running.size());  // the spans into it stay valid
  size_t i = 0;
  for (Seq& s : running) {
    const size_t at = i++;
    std::vector<int32_t> d = std::move(props.ids[at]);
    if (n_of[at] == 0) continue;
    const int n = n_of[at] + int(d.size());
    cover(s, s.cached + n);
    StepSequence q;
    if (d.empty()) {
      q.tokens = std::span<const int32_t>(s.tokens).subspan(size_t(s.cached), size_t(n));
    } else {  // the verify chunk: its last token and the proposals, logits after each
      std::vector<int32_t>& c = f.chunk.emplace_back(1, s.tokens.back());
      c.insert(c.end(), d.begin(), d.end());
      q.tokens = c;
      q.rows = n;
    }
    q.pos0 = s.cached;
    q.blocks = s.blocks;
    q.swa_blocks = s.swa_blocks;
    SamplePlan plan;
    if (s.cached + n_of[at] == int(s.tokens.size())) want_token(s, q, plan);  // the next token is wanted
    in.push_back(q);
    f.fed.push_back(&s);
    f.n.push_back(n);
    f.plan.push_back(plan);
    f.want.push_back(q.wants_logits());
    f.draft.push_back(std::move(d));
    f.q.push_back(std::move(props.q[at]));
  }
  f.pending = engine->submit(in);
  return f;
}

bool Scheduler::Impl::can_run_ahead(const Inflight& f) {
  if (!engine->overlaps() || draft_engine) return false;
  {
    std::lock_guard lk(mu);
    if (quit || (!queue.empty() && int(running.size()) < opt.parallel)) return false;
  }
  if (f.fed.size() != running.size()) return false;
  for (size_t i = 0; i < f.fed.size(); ++i) {
    const Seq* s = f.fed[i];
    if (!s || !f.want[i] || f.plan[i].kind != SamplePlan::Greedy || s->job->req.top_logprobs >= 0 || s->job->cancel ||
        s->constraint)  // a constrained token is picked on the host
      return false;
  }
  return true;
}

Inflight Scheduler::Impl::submit_ahead(const Inflight& f) {
  Inflight g;
  std::vector<StepSequence> in;
  std::vector<int32_t> placeholder(f.fed.size(), 0);
  int row = 0;
  for (size_t i = 0; i < f.fed.size(); ++i, ++row) {
    Seq& s = *f.fed[i];
    const int pos = s.cached + f.n[i];  // where f's token goes
    const int max_new = s.job->req.max_tokens;
    if (pos >= opt.max_ctx || (max_new > 0 && s.rs->generated() + 1 >= max_new)) continue;
    cover(s, pos + 1);
    StepSequence q;
    q.tokens = std::span<const int32_t>(&placeholder[i], 1);
    q.pos0 = pos;
    q.blocks = s.blocks;
    q.swa_blocks = s.swa_blocks;
    q.feed_row = row;
    q.top_k = 1;
    in.push_back(q);
    g.fed.push_back(&s);
    g.n.push_back(1);
    g.plan.push_back({SamplePlan::Greedy, 1});
    g.want.push_back(true);
    g.draft.emplace_back();
    g.q.emplace_back();
  }
  if (in.empty()) return g;
  g.pending = engine->submit(in);
  return g;
}

void Scheduler::Impl::process(Inflight& f, Inflight* next) {
  const int B = opt.kv_block_tokens;
  std::vector<StepLogits> rows;
  if (f.pending && engine->overlaps()) prepare_masks(f);
  if (f.pending) rows = engine->collect(f.pending);
  int generated = 0;
  Drafted drafted;
  size_t r = 0;
  std::vector<std::pair<Seq*, std::string>> done;  // and the error that ended it, if any
  for (size_t i = 0; i < f.fed.size(); ++i) {
    const size_t n_rows = f.want[i] ? f.draft[i].size() + 1 : 0;
    StepLogits* out = n_rows ? &rows[r] : nullptr;
    r += n_rows;
    Seq* s = f.fed[i];
    if (!s) continue;  // ended while this step was in flight
    if (!f.draft[i].empty()) {
      if (!verify(*s, f.draft[i], f.q[i], f.plan[i], std::span(out, n_rows), generated, drafted))
        done.push_back({s, {}});
      continue;
    }
    s->cached += f.n[i];
    while (!swa_kv && s->published < s->cached / B) kv->publish(s->blocks, s->published++, s->tokens);
    if (!out) continue;
    int32_t id = 0;
    bool last = false;
    try {
      id = s->constraint ? pick_constrained(*s, f.plan[i], *out) : pick(*s, f.plan[i], *out);
      if (s->constraint) {
        s->constraint->accept(id);
        last = s->constraint->must_stop();
      }
    } catch (const Error& e) {  // this request's grammar has no way on: it alone ends
      done.push_back({s, e.what()});
      continue;
    }
    std::optional<TokenLogprobs> lp;
    if (s->job->req.top_logprobs >= 0) lp = logprobs(*s, *out, id);
    s->tokens.push_back(id);
    ++generated;
    if (!s->rs->take(id, lp ? &*lp : nullptr, s->cached, last)) done.push_back({s, {}});
  }
  // (the totals first: drain() returns once the last request ended, with its tokens counted)
  publish_state(generated, drafted);
  for (auto& [s, error] : done) {
    if (next) std::replace(next->fed.begin(), next->fed.end(), s, static_cast<Seq*>(nullptr));
    for (auto it = running.begin(); it != running.end(); ++it)
      if (&*it == s) {
        if (error.empty())
          end(it, std::nullopt);
        else
          end(it, StopReason::Cancelled, error);
        break;
      }
  }
}

void Scheduler::Impl::prepare_masks(const Inflight& f) {
  std::vector<const Constraint*> todo;  // the states whose mask is not in the cache
  for (size_t i = 0; i < f.fed.size(); ++i)
    if (f.fed[i] && f.want[i] && f.fed[i]->constraint && !f.fed[i]->constraint->ready())
      todo.push_back(&*f.fed[i]->constraint);
  // An error (a grammar with too many stacks) comes back when the token is picked, for its
  // request alone.
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next++) < todo.size();) try {
        todo[i]->prepare();
      } catch (const std::exception&) {
      }
  };
  const size_t threads = std::min<size_t>({todo.size(), std::max(1u, std::thread::hardware_concurrency()), 8});
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
}

int32_t Scheduler::Impl::pick(Seq& s, const SamplePlan& plan, const StepLogits& out) {
  Sampler& sm = s.rs->sampler();
  switch (plan.kind) {
    case SamplePlan::Greedy: return out.top_ids[0];
    case SamplePlan::TopK: {
      const size_t k = size_t(plan.k);
      return sm.sample(std::span(out.top_ids).first(k), std::span(out.top_logits).first(k));
    }
    case SamplePlan::Full: break;
  }
  return sm.sample(out.logits);
}

int32_t Scheduler::Impl::pick_constrained(Seq& s, const SamplePlan& plan, StepLogits& out) {
  Sampler& sm = s.rs->sampler();
  if (plan.kind != SamplePlan::Full && !out.top_ids.empty()) {
    TopK c{out.top_logits, out.top_ids};
    if (std::optional<TopK> kept = s.constraint->filter(c, plan)) {
      if (plan.kind == SamplePlan::Greedy) return kept->ids[0];
      return sm.sample(std::span<const int32_t>(kept->ids), std::span<const float>(kept->logits));
    }
  }
  // The allowed tokens alone (a masked one is never drawn), for a top-k plan the plan.k best of
  // them (ties: the lower id, as the sampler's top-k): the sampler then works on these few
  // candidates rather than on a masked copy of the whole row, the same draw.
  const TokenMask& bits = s.constraint->allowed();
  const std::vector<float>& row = out.logits;
  std::vector<int32_t> ids;
  for (size_t w = 0; w < bits.size() && w * 64 < row.size(); ++w)
    for (uint64_t word = bits[w]; word; word &= word - 1) {
      const size_t id = w * 64 + size_t(std::countr_zero(word));
      if (id < row.size()) ids.push_back(int32_t(id));
    }
  if (ids.empty()) throw Error("wgc: constrained sampling: no token of the vocabulary continues the grammar here");
  auto better = [&](int32_t a, int32_t b) {
    return row[size_t(a)] > row[size_t(b)] || (row[size_t(a)] == row[size_t(b)] && a < b);
  };
  if (plan.kind == SamplePlan::Greedy) return *std::min_element(ids.begin(), ids.end(), better);
  if (plan.kind == SamplePlan::TopK && ids.size() > size_t(plan.k)) {
    std::nth_element(ids.begin(), ids.begin() + plan.k, ids.end(), better);
    ids.resize(size_t(plan.k));
  }
  std::vector<float> kept(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) kept[i] = row[size_t(ids[i])];
  return sm.sample(std::span<const int32_t>(ids), std::span<const float>(kept));
}

TokenLogprobs Scheduler::Impl::logprobs(const Seq& s, const StepLogits& out, int32_t id) {
  TokenLogprobs lp;
  float chosen = 0;
  if (!out.logits.empty()) {
    chosen = out.logits[size_t(id)];
  } else {
    auto it = std::find(out.top_ids.begin(), out.top_ids.end(), id);
    chosen = it != out.top_ids.end() ? out.top_logits[size_t(it - out.top_ids.begin())] : 0.f;
  }
  lp.chosen = chosen - out.logsumexp;
  const size_t n = std::min(out.top_ids.size(), size_t(s.job->req.top_logprobs));
  for (size_t i = 0; i < n; ++i) lp.top.push_back({out.top_ids[i], out.top_logits[i] - out.logsumexp});
  return lp;
}

Scheduler::Scheduler(LlamaModel& model, const Tokenizer& tokenizer, SchedulerOptions o, DeviceRecovery recovery)
    : impl_(std::make_unique<Impl>(model, tokenizer, o, std::move(recovery))) {}

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
