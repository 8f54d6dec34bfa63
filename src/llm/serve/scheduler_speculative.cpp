// Speculative decoding in the scheduler (SchedulerOptions::draft): the draft model's proposals for
// every speculating sequence, and the target's verify pass over them (greedy: the longest agreeing
// prefix; sampled: the speculative sampling rule), both pools rolled back past what was kept.
#include "llm/serve/scheduler_impl.h"

namespace wgc::llm {

using namespace scheduler_detail;

int Scheduler::Impl::draft_count(const Seq& s) const {
  if (!s.spec || !s.decoding() || s.job->cancel) return 0;
  int k = std::min(opt.draft_tokens, opt.max_ctx - s.cached - 1);
  if (s.job->req.max_tokens > 0) k = std::min(k, s.job->req.max_tokens - s.rs->generated() - 1);
  return std::max(k, 0);
}

bool Scheduler::Impl::draft_takes(std::span<const int32_t> ids) const {
  const int64_t v = draft->config().vocab_size;
  return std::all_of(ids.begin(), ids.end(), [&](int32_t id) { return id < v; });
}

Scheduler::Impl::Proposals Scheduler::Impl::propose(const std::vector<int>& n_of, const std::vector<int>& k_of) {
  Proposals out;
  out.ids.resize(running.size());
  out.q.resize(running.size());
  std::vector<Seq*> seq_at;
  std::vector<SamplePlan> plan_of(running.size());
  std::vector<StepSequence> in;
  std::vector<size_t> rows;  // the proposing sequences, in the order of the first step's rows
  bool sync = false;
  for (Seq& s : running) {
    const size_t at = seq_at.size();
    seq_at.push_back(&s);
    if (!s.spec) continue;
    const int upto = s.decoding() ? int(s.tokens.size()) : s.cached + n_of[at];
    if ((s.decoding() ? k_of[at] : n_of[at]) == 0) continue;
    const auto todo = std::span<const int32_t>(s.tokens).subspan(size_t(s.dcached), size_t(upto - s.dcached));
    // A decoding sequence's draft lags one or two positions behind (a verify pass keeps up to one
    // position the draft did not run): more would break the draft engine's step size.
    if (!draft_takes(todo) || (s.decoding() && todo.size() > 3)) {
      s.spec = false;  // (a token the draft cannot run): decodes plainly from now on
      continue;
    }
    StepSequence q;
    q.tokens = todo;
    q.pos0 = s.dcached;
    if (s.decoding()) {
      cover(s, s.cached + k_of[at] + 1);
      want_token(s, q, plan_of[at]);
      q.logsumexp = false;
      sync |= plan_of[at].kind != SamplePlan::Greedy;
      rows.push_back(at);
    } else {
      cover(s, upto);
      s.dcached = upto;
    }
    q.blocks = s.blocks;
    in.push_back(q);
  }
  if (in.empty()) return out;
  // A step's rows: the proposals (greedy: the argmax; sampled: drawn from the draft's chain).
  auto take = [&](const std::vector<size_t>& order, const std::vector<StepLogits>& got) {
    for (size_t r = 0; r < order.size(); ++r) {
      Seq& s = *seq_at[order[r]];
      const SamplePlan& plan = plan_of[order[r]];
      if (plan.kind != SamplePlan::Greedy) out.q[order[r]].push_back(chain(s, plan, got[r]));
      out.ids[order[r]].push_back(pick(s, plan, got[r]));
    }
  };
  std::vector<BatchedLlama::Pending> steps;  // greedy: collected at the end
  std::vector<std::vector<size_t>> order;    // per draft step, the sequences of its rows
  auto run = [&](std::span<const StepSequence> step, std::vector<size_t> who) {
    BatchedLlama::Pending h = draft_engine->submit(step);
    if (sync)
      take(who, draft_engine->collect(h));
    else
      steps.push_back(std::move(h));
    order.push_back(std::move(who));
  };
  run(in, std::move(rows));
  const int32_t placeholder = 0;
  for (int j = 2;; ++j) {  // step j proposes token j, fed token j - 1 at position cached + j - 1
    const std::vector<size_t> prev = order.back();
    std::vector<StepSequence> next;
    std::vector<size_t> w;
    for (size_t r = 0; r < prev.size(); ++r) {
      Seq& s = *seq_at[prev[r]];
      if (k_of[prev[r]] < j) continue;
      StepSequence q;
      if (sync) {
        q.tokens = std::span<const int32_t>(&out.ids[prev[r]].back(), 1);
      } else {
        q.tokens = std::span<const int32_t>(&placeholder, 1);
        q.feed_row = int(r);
      }
      q.pos0 = s.cached + j - 1;
      q.blocks = s.blocks;
      SamplePlan plan;
      want_token(s, q, plan);
      q.logsumexp = false;
      next.push_back(q);
      w.push_back(prev[r]);
    }
    if (next.empty()) break;
    run(next, std::move(w));
  }
  for (size_t j = 0; j < steps.size(); ++j) take(order[j], draft_engine->collect(steps[j]));
  for (size_t i = 0; i < out.ids.size(); ++i) {
    auto& d = out.ids[i];
    auto past = std::find_if(d.begin(), d.end(), [&](int32_t id) { return id < 0 || id >= cfg.vocab_size; });
    d.erase(past, d.end());
    if (out.q[i].size() > d.size()) out.q[i].resize(d.size());
  }
  return out;
}

std::vector<Sampler::Candidate> Scheduler::Impl::chain(Seq& s, const SamplePlan& plan, const StepLogits& out) {
  const Sampler& sm = s.rs->sampler();
  if (plan.kind == SamplePlan::Full) return sm.candidates(out.logits);
  const size_t k = size_t(plan.k);
  return sm.candidates(std::span(out.top_ids).first(k), std::span(out.top_logits).first(k));
}

bool Scheduler::Impl::verify(Seq& s, const std::vector<int32_t>& d,
                             const std::vector<std::vector<Sampler::Candidate>>& q, const SamplePlan& plan,
                             std::span<StepLogits> out, int& generated, Drafted& drafted) {
  const int B = opt.kv_block_tokens;
  size_t kept = 0;
  int32_t next = -1;
  if (opt.draft_acceptance >= 0) {
    std::uniform_real_distribution<double> u(0.0, 1.0);
    while (kept < d.size() && u(accept_rng) < opt.draft_acceptance) ++kept;
  } else if (plan.kind == SamplePlan::Greedy) {
    while (kept < d.size() && pick(s, plan, out[kept]) == d[kept]) ++kept;
  } else {  // the speculative sampling rule with the sequence's own random numbers
    std::vector<std::vector<Sampler::Candidate>> p;
    for (const StepLogits& row : out) p.push_back(chain(s, plan, row));
    Sampler& sm = s.rs->sampler();
    const SampledRound round = speculative_sample(p, q, d, [&] { return sm.uniform(); });
    kept = round.kept;
    next = round.next;
  }
  if (next < 0) next = pick(s, plan, out[kept]);
  const int old = s.cached;
  s.cached = old + 1 + int(kept);
  s.dcached = std::min(old + int(d.size()), s.cached);  // the draft ran up to its proposal k - 1
  s.tokens.insert(s.tokens.end(), d.begin(), d.begin() + std::ptrdiff_t(kept));
  s.tokens.push_back(next);
  while (s.published < s.cached / B) kv->publish(s.blocks, s.published++, s.tokens);
  for (size_t keep = size_t((s.cached + B) / B); s.blocks.size() > keep;) {
    kv->release(s.blocks.back());
    s.blocks.pop_back();
    ++s.reserved;
    ++reserved;
  }
  s.rs->drafted(int(d.size()), int(kept));
  drafted.proposed += d.size();
  drafted.accepted += kept;
  ++drafted.verifies;
  for (size_t j = 0; j <= kept; ++j) {
    const int32_t id = s.tokens[size_t(old) + 1 + j];
    std::optional<TokenLogprobs> lp;
    if (s.job->req.top_logprobs >= 0) lp = logprobs(s, out[j], id);
    ++generated;
    if (!s.rs->take(id, lp ? &*lp : nullptr, old + 1 + int(j))) return false;
  }
  return true;
}

}  // namespace wgc::llm
