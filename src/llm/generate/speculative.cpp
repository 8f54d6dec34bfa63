#include "llm/generate/speculative.h"

#include "util/error.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>

namespace wgc::llm {

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Models of one family pad their embedding tables to different sizes (Qwen2.5 0.5B: 151,936 rows,
// 7B: 152,064) over the same tokenizer; llama.cpp's speculative example allows this much.
constexpr int64_t kMaxVocabPadding = 128;

std::string id_list(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) s += (s.empty() ? "" : ",") + std::to_string(id);
  return "[" + s + "]";
}

}  // namespace

void validate(const SpeculativeOptions& o) {
  if (o.draft_tokens < 1 || o.draft_tokens > kMaxDraftTokens)
    throw OptionError("draft_tokens",
                      "must be 1 to " + std::to_string(kMaxDraftTokens) + ", got " + std::to_string(o.draft_tokens));
  if (!(o.forced_acceptance < 0 || o.forced_acceptance <= 1))  // NaN fails too
    throw OptionError("forced_acceptance", "must be in [0, 1] (or negative: off)");
}

void check_draft(const ModelConfig& target, const Tokenizer* tt, const ModelConfig& draft, const Tokenizer* dt,
                 const std::string& name) {
  const std::string what = "wgc: the draft model " + name;
  const int64_t tv = target.vocab_size, dv = draft.vocab_size;
  if (tt && dt) {
    if (tt->vocab_size() != dt->vocab_size())
      throw Error(what + " has a tokenizer of " + std::to_string(dt->vocab_size()) + " tokens, the target's has " +
                  std::to_string(tt->vocab_size()) + ": a draft must share the target's tokenizer");
    for (size_t i = 0; i < tt->vocab_size(); ++i) {
      const int32_t id = int32_t(i);
      if (tt->token(id) != dt->token(id) || tt->is_special(id) != dt->is_special(id))
        throw Error(what + "'s tokenizer differs from the target's at id " + std::to_string(id) + " ('" +
                    dt->token(id) + "' vs '" + tt->token(id) + "'): a draft must share the target's tokenizer");
    }
    if (tt->stop_ids() != dt->stop_ids() || tt->bos_id() != dt->bos_id())
      throw Error(what + "'s tokenizer has other special ids (stop " + id_list(dt->stop_ids()) + " vs " +
                  id_list(tt->stop_ids()) + ")");
    if (std::abs(tv - dv) > kMaxVocabPadding)
      throw Error(what + " has a vocabulary of " + std::to_string(dv) + " rows, the target " + std::to_string(tv) +
                  ": more apart than the padding of one tokenizer's models (" + std::to_string(kMaxVocabPadding) + ")");
    return;
  }
  if (tv != dv)
    throw Error(what + " has a vocabulary of " + std::to_string(dv) + " tokens, the target " + std::to_string(tv) +
                ": a draft must share the target's tokenizer");
}

SpeculativeDecoder::SpeculativeDecoder(LlamaModel& draft, SpeculativeOptions o) : draft_(draft), o_(o), rng_(o.seed) {
  validate(o_);
}

std::vector<int32_t> SpeculativeDecoder::sync(std::span<const int32_t> cached, int32_t next) {
  if (size_t(draft_.n_past()) != draft_cached_.size()) draft_cached_.clear();  // someone else used the draft
  size_t common = 0;
  const size_t limit = std::min(draft_cached_.size(), cached.size());
  while (common < limit && draft_cached_[common] == cached[common]) ++common;
  if (!draft_.can_rewind(int(common))) common = 0;  // a sliding-window ring no longer holds that prefix
  draft_.rewind(int(common));
  draft_cached_.resize(common);
  std::vector<int32_t> todo(cached.begin() + std::ptrdiff_t(common), cached.end());
  todo.push_back(next);
  return todo;
}

void SpeculativeDecoder::prime(std::span<const int32_t> context) {
  if (context.empty()) return;
  std::vector<int32_t> todo = sync(context.first(context.size() - 1), context.back());
  if (int64_t(context.size()) > draft_.max_ctx()) return;  // the draft cannot hold it: rounds propose nothing
  draft_.prefill(todo);
  draft_cached_.insert(draft_cached_.end(), todo.begin(), todo.end());
}

std::vector<int32_t> SpeculativeDecoder::propose(std::span<const int32_t> cached, int32_t next, int k) {
  std::vector<int32_t> out;
  // The draft runs next at position cached.size() and its proposals after it; the last proposal
  // is not run.
  k = int(std::min<int64_t>(k, int64_t(draft_.max_ctx()) - int64_t(cached.size())));
  if (k <= 0 || next >= draft_.config().vocab_size) return out;
  std::vector<int32_t> todo = sync(cached, next);
  int32_t first = todo.back();
  if (todo.size() > 1) {  // tokens the draft has not seen (a whole prompt, or a kept last proposal)
    first = draft_.greedy(todo);
    draft_cached_.insert(draft_cached_.end(), todo.begin(), todo.end());
    out.push_back(first);
    --k;
  }
  if (k > 0) {  // one-token steps, each argmax passed on the GPU; the cache gains first and all but the last
    std::ptrdiff_t got = 0;
    draft_.decode_greedy(first, k, [&](int32_t id) {
      out.push_back(id);
      ++got;
      return true;
    });
    if (got > 0) {
      draft_cached_.push_back(first);
      draft_cached_.insert(draft_cached_.end(), out.end() - got, out.end() - 1);
    }
  }
  return out;
}

namespace {

// A draw from a dense distribution (any non-negative weights; all zero: the last id).
int32_t draw(const std::vector<double>& w, double u) {
  double total = 0;
  for (double x : w) total += x;
  double at = u * total, cum = 0;
  for (size_t i = 0; i < w.size(); ++i) {
    cum += w[i];
    if (at < cum) return int32_t(i);
  }
  for (size_t i = w.size(); i-- > 0;)  // rounding: u just below 1
    if (w[i] > 0) return int32_t(i);
  return int32_t(w.size()) - 1;
}

// The sampler's chain over a row of logits as a dense distribution of `vocab` entries.
std::vector<double> distribution(const Sampler& s, std::span<const float> logits, size_t vocab) {
  std::vector<double> d(vocab, 0.0);
  for (const Sampler::Candidate& c : s.candidates(logits))
    if (c.id >= 0 && size_t(c.id) < vocab) d[size_t(c.id)] = c.p;
  return d;
}

}  // namespace

SampledRound speculative_sample(std::span<const std::vector<double>> p, std::span<const std::vector<double>> q,
                                std::span<const int32_t> draft, const std::function<double()>& uniform) {
  if (q.size() != draft.size() || p.size() != draft.size() + 1)
    throw Error("wgc: speculative_sample: " + std::to_string(draft.size()) + " proposals need as many q rows (got " +
                std::to_string(q.size()) + ") and one p row more (got " + std::to_string(p.size()) + ")");
  SampledRound r;
  for (; r.kept < draft.size(); ++r.kept) {
    const size_t i = r.kept;
    const auto d = size_t(draft[i]);
    if (d >= p[i].size() || d >= q[i].size()) throw Error("wgc: speculative_sample: proposal past the vocabulary");
    const double pd = p[i][d], qd = q[i][d];
    if (qd > 0 && uniform() * qd < pd) continue;  // kept with probability min(1, p/q)
    std::vector<double> residual(p[i].size());
    for (size_t t = 0; t < residual.size(); ++t) residual[t] = std::max(0.0, p[i][t] - (t < q[i].size() ? q[i][t] : 0));
    double total = 0;
    for (double x : residual) total += x;
    r.next = draw(total > 0 ? residual : p[i], uniform());
    return r;
  }
  r.next = draw(p[draft.size()], uniform());
  return r;
}

SampledRound speculative_sample(std::span<const std::vector<Sampler::Candidate>> p,
                                std::span<const std::vector<Sampler::Candidate>> q, std::span<const int32_t> draft,
                                const std::function<double()>& uniform) {
  std::vector<int32_t> ids(draft.begin(), draft.end());
  for (auto rows : {p, q})
    for (const auto& row : rows)
      for (const Sampler::Candidate& c : row) ids.push_back(c.id);
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  auto local = [&](int32_t id) { return size_t(std::lower_bound(ids.begin(), ids.end(), id) - ids.begin()); };
  auto dense = [&](std::span<const std::vector<Sampler::Candidate>> rows) {
    std::vector<std::vector<double>> d(rows.size(), std::vector<double>(ids.size(), 0.0));
    for (size_t i = 0; i < rows.size(); ++i)
      for (const Sampler::Candidate& c : rows[i]) d[i][local(c.id)] = c.p;
    return d;
  };
  std::vector<int32_t> at(draft.size());
  for (size_t i = 0; i < draft.size(); ++i) at[i] = int32_t(local(draft[i]));
  SampledRound r = speculative_sample(dense(p), dense(q), at, uniform);
  r.next = ids.empty() ? r.next : ids[size_t(r.next)];
  return r;
}

int SpeculativeDecoder::round_size(const LlamaModel& target, size_t cached, int k) const {
  k = std::clamp(k, 0, kMaxDraftTokens);
  // The verification pass runs next and the proposals: it must fit the target's context.
  return int(std::min<int64_t>(k, int64_t(target.max_ctx()) - int64_t(cached) - 1));
}

std::vector<int32_t> SpeculativeDecoder::step_sampled(LlamaModel& target, std::span<const int32_t> cached, int32_t next,
                                                      int k, Sampler& s) {
  if (size_t(target.n_past()) != cached.size())
    throw Error("wgc: speculative step: the target's cache holds " + std::to_string(target.n_past()) +
                " tokens, the caller says " + std::to_string(cached.size()));
  if (s.params().greedy() || s.params().has_penalties())
    throw OptionError("temperature", "speculative sampling takes temperature > 0 and no penalties (greedy: step)");
  k = round_size(target, cached.size(), k);
  k = int(std::min<int64_t>(k, int64_t(draft_.max_ctx()) - int64_t(cached.size())));
  const size_t vocab = size_t(target.config().vocab_size);
  auto t0 = std::chrono::steady_clock::now();
  std::vector<int32_t> draft;
  std::vector<std::vector<double>> q;
  if (k > 0 && next < draft_.config().vocab_size) {
    std::vector<int32_t> todo = sync(cached, next);
    std::vector<float> logits = draft_.logits(todo);
    draft_cached_.insert(draft_cached_.end(), todo.begin(), todo.end());
    for (int i = 0; i < k; ++i) {
      q.push_back(distribution(s, logits, vocab));
      const int32_t d = draw(q.back(), s.uniform());
      draft.push_back(d);
      if (i + 1 < k) {  // the last proposal is not run
        logits = draft_.logits(std::span(&d, 1));
        draft_cached_.push_back(d);
      }
    }
  }
  auto t1 = std::chrono::steady_clock::now();
  stats_.draft_ms += std::chrono::duration<double, std::milli>(t1 - t0).count();

  std::vector<int32_t> run{next};
  run.insert(run.end(), draft.begin(), draft.end());
  const std::vector<float> all = target.all_logits(run);
  std::vector<std::vector<double>> p;
  for (size_t i = 0; i < run.size(); ++i) p.push_back(distribution(s, std::span(all).subspan(i * vocab, vocab), vocab));
  const SampledRound round = speculative_sample(p, q, draft, [&] { return s.uniform(); });
  target.rewind(int(cached.size() + 1 + round.kept));
  stats_.verify_ms += ms_since(t1);
  ++stats_.steps;
  stats_.proposed += int(draft.size());
  stats_.accepted += int(round.kept);
  std::vector<int32_t> out(draft.begin(), draft.begin() + std::ptrdiff_t(round.kept));
  out.push_back(round.next);
  return out;
}

std::vector<int32_t> SpeculativeDecoder::step(LlamaModel& target, std::span<const int32_t> cached, int32_t next,
                                              int k) {
  if (size_t(target.n_past()) != cached.size())
    throw Error("wgc: speculative step: the target's cache holds " + std::to_string(target.n_past()) +
                " tokens, the caller says " + std::to_string(cached.size()));
  k = round_size(target, cached.size(), k);
  auto t0 = std::chrono::steady_clock::now();
  std::vector<int32_t> draft = k > 0 ? propose(cached, next, k) : std::vector<int32_t>{};
  // A draft of a padded vocabulary may name rows the target lacks: proposals end before one.
  const int64_t vocab = target.config().vocab_size;
  auto past = std::find_if(draft.begin(), draft.end(), [&](int32_t id) { return id < 0 || id >= vocab; });
  draft.erase(past, draft.end());
  auto t1 = std::chrono::steady_clock::now();
  stats_.draft_ms += std::chrono::duration<double, std::milli>(t1 - t0).count();

  std::vector<int32_t> run{next};
  run.insert(run.end(), draft.begin(), draft.end());
  const std::vector<int32_t> chosen = target.greedy_all(run);  // chosen[i]: the target's token after run[i]
  size_t kept = 0;
  if (o_.forced_acceptance >= 0) {
    std::uniform_real_distribution<double> u(0.0, 1.0);
    while (kept < draft.size() && u(rng_) < o_.forced_acceptance) ++kept;
  } else {
    while (kept < draft.size() && draft[kept] == chosen[kept]) ++kept;
  }
  target.rewind(int(cached.size() + 1 + kept));
  stats_.verify_ms += ms_since(t1);
  ++stats_.steps;
  stats_.proposed += int(draft.size());
  stats_.accepted += int(kept);

  std::vector<int32_t> out(draft.begin(), draft.begin() + std::ptrdiff_t(kept));
  out.push_back(chosen[kept]);
  return out;
}

}  // namespace wgc::llm
