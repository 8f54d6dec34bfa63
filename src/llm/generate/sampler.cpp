#include "llm/generate/sampler.h"

#include "llm/model/llama.h"
#include "util/error.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace wgc::llm {

namespace {

// Descending by logit, ties by lower id: one order for full logits and candidate sets alike.
bool better(const Sampler::Candidate& a, const Sampler::Candidate& b) {
  return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
}

float penalize(float logit, int count, const SamplingParams& p) {
  if (p.repeat_penalty != 1.0f) logit = logit > 0 ? logit / p.repeat_penalty : logit * p.repeat_penalty;
  logit -= float(count) * p.frequency_penalty + (count > 0 ? p.presence_penalty : 0.0f);
  return logit;
}

}  // namespace

bool SamplingParams::has_penalties() const {
  return penalty_last_n != 0 && (repeat_penalty != 1.0f || presence_penalty != 0.0f || frequency_penalty != 0.0f);
}

bool SamplingParams::penalties_only_lower() const {
  return repeat_penalty >= 1.0f && presence_penalty >= 0.0f && frequency_penalty >= 0.0f;
}

std::string SamplingParams::describe() const {
  char buf[64];
  std::string s;
  auto add = [&](const char* fmt, double v) {
    std::snprintf(buf, sizeof buf, fmt, v);
    if (!s.empty()) s += ", ";
    s += buf;
  };
  if (greedy()) {
    s = "greedy";
  } else {
    add("temp %.2f", temperature);
    if (top_k > 0) add("top-k %.0f", top_k);
    if (top_p < 1.0f) add("top-p %.2f", top_p);
    if (min_p > 0.0f) add("min-p %.2f", min_p);
  }
  if (has_penalties()) {
    if (repeat_penalty != 1.0f) add("repeat-penalty %.2f", repeat_penalty);
    if (presence_penalty != 0.0f) add("presence-penalty %.2f", presence_penalty);
    if (frequency_penalty != 0.0f) add("frequency-penalty %.2f", frequency_penalty);
    if (penalty_last_n < 0)
      s += ", over all tokens";
    else
      add("last-n %.0f", penalty_last_n);
  }
  if (!greedy()) s += ", seed " + std::to_string(seed);
  return s;
}

void validate(const SamplingParams& p) {
  auto finite = [](const char* name, float v) {
    if (!std::isfinite(v)) throw OptionError(name, "must be a finite number, got " + std::to_string(v));
  };
  finite("temperature", p.temperature);
  finite("top_p", p.top_p);
  finite("min_p", p.min_p);
  finite("repeat_penalty", p.repeat_penalty);
  finite("presence_penalty", p.presence_penalty);
  finite("frequency_penalty", p.frequency_penalty);
  auto num = [](float v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", double(v));
    return std::string(buf);
  };
  if (!(p.top_p > 0 && p.top_p <= 1)) throw OptionError("top_p", "must be in (0, 1], got " + num(p.top_p));
  if (!(p.min_p >= 0 && p.min_p <= 1)) throw OptionError("min_p", "must be in [0, 1], got " + num(p.min_p));
  if (!(p.repeat_penalty > 0)) throw OptionError("repeat_penalty", "must be > 0, got " + num(p.repeat_penalty));
  if (p.penalty_last_n < -1)
    throw OptionError("penalty_last_n",
                      "must be -1 (all tokens), 0 (off) or a token count, got " + std::to_string(p.penalty_last_n));
}

Sampler::Sampler(SamplingParams p) : p_(p), rng_(p.seed) {}

void Sampler::accept(int32_t id) { history_.push_back(id); }

void Sampler::accept(std::span<const int32_t> ids) { history_.insert(history_.end(), ids.begin(), ids.end()); }

void Sampler::reset() {
  history_.clear();
  rng_.seed(p_.seed);
}

double Sampler::uniform() { return double(rng_() >> 11) * 0x1.0p-53; }

std::unordered_map<int32_t, int> Sampler::window_counts() const {
  std::unordered_map<int32_t, int> counts;
  if (!p_.has_penalties()) return counts;
  size_t n = history_.size();
  size_t start = p_.penalty_last_n < 0 ? 0 : n - std::min(n, size_t(p_.penalty_last_n));
  for (size_t i = start; i < n; ++i) ++counts[history_[i]];
  return counts;
}

SamplePlan Sampler::plan() const {
  int need = p_.greedy() ? 1 : (p_.top_k >= 1 && p_.top_k <= 64 ? p_.top_k : 0);
  if (need == 0) return {SamplePlan::Full, 0};
  if (p_.has_penalties()) {
    if (!p_.penalties_only_lower()) return {SamplePlan::Full, 0};
    // Up to `distinct` penalized tokens may fall out of the top `need`; the next ones move up.
    need += int(window_counts().size());
    if (need > 64) return {SamplePlan::Full, 0};
  } else if (p_.greedy()) {
    return {SamplePlan::Greedy, 1};
  }
  return {SamplePlan::TopK, need};
}

std::vector<Sampler::Candidate> Sampler::chain(std::vector<Candidate> c) const {
  if (c.empty()) throw Error("wgc: sampler: no candidates");
  const size_t n = c.size();
  auto by = [](const Candidate& a, const Candidate& b) { return better(a, b); };

  // Greedy: the best one (every filter keeps it; the temperature only sharpens).
  if (p_.greedy()) {
    auto best = std::min_element(c.begin(), c.end(), by);
    return {{best->id, best->logit, 1.0}};
  }

  // top-k, then sort what is left (top-p needs the order). Without top-k, a large set is cut first
  // to what min-p and top-p can keep, so that the sort stays small: min-p by its logit threshold,
  // top-p by taking the best m (m = 256, 2048, ...) until they hold the mass p. Both keep a prefix
  // of the sorted order; the top-p step below then uses the softmax denominator of the whole set.
  size_t keep = p_.top_k > 0 ? std::min(n, size_t(p_.top_k)) : n;
  double pruned_total = 0;  // softmax denominator of the whole set (relative to its max) once cut
  if (keep < n) {
    std::partial_sort(c.begin(), c.begin() + std::ptrdiff_t(keep), c.end(), by);
    c.resize(keep);
  } else if ((p_.top_p < 1.0f || p_.min_p > 0.0f) && n > 1024) {
    float mx = std::max_element(c.begin(), c.end(), [](auto& a, auto& b) { return a.logit < b.logit; })->logit;
    double total = 0;
    for (auto& x : c) total += std::exp(double(x.logit) - mx);
    if (p_.min_p > 0.0f) {
      double cut = double(mx) + std::log(double(p_.min_p));
      auto end = std::partition(c.begin(), c.end(), [&](const Candidate& x) { return double(x.logit) >= cut; });
      if (end != c.end()) {
        c.erase(end, c.end());
        pruned_total = total;
      }
    }
    if (p_.top_p < 1.0f) {
      size_t m = 256;
      for (; m < c.size(); m *= 8) {
        std::nth_element(c.begin(), c.begin() + std::ptrdiff_t(m), c.end(), by);
        double mass = 0;
        for (size_t i = 0; i < m; ++i) mass += std::exp(double(c[i].logit) - mx);
        if (mass >= double(p_.top_p) * total) break;
      }
      if (m < c.size()) {
        c.resize(m);
        pruned_total = total;
      }
    }
    std::sort(c.begin(), c.end(), by);
  } else {
    std::sort(c.begin(), c.end(), by);
  }

  // Softmax of the untempered logits of what is left (c[0] is the largest).
  auto softmax = [&](std::vector<Candidate>& v, double temp) {
    double mx = v[0].logit, sum = 0;
    for (auto& x : v) sum += (x.p = std::exp((double(x.logit) - mx) / temp));
    for (auto& x : v) x.p /= sum;
  };

  if (p_.top_p < 1.0f && c.size() > 1) {
    softmax(c, 1.0);
    if (pruned_total > 0) {  // probabilities over the whole set (c[0] is its maximum)
      double kept_total = 0, mx = c[0].logit;
      for (auto& x : c) kept_total += std::exp(double(x.logit) - mx);
      for (auto& x : c) x.p *= kept_total / pruned_total;
    }
    double cum = 0;
    size_t last = c.size();
    for (size_t i = 0; i < c.size(); ++i) {
      cum += c[i].p;
      if (cum >= double(p_.top_p)) {
        last = i + 1;
        break;
      }
    }
    c.resize(last);
  }

  if (p_.min_p > 0.0f && c.size() > 1) {
    // p_i >= min_p * p_max  <=>  logit_i >= max + log(min_p)
    double cut = double(c[0].logit) + std::log(double(p_.min_p));
    size_t last = 1;
    while (last < c.size() && double(c[last].logit) >= cut) ++last;
    c.resize(last);
  }

  softmax(c, double(p_.temperature));
  return c;
}

std::vector<Sampler::Candidate> Sampler::candidates(std::span<const float> logits) const {
  auto counts = window_counts();
  std::vector<Candidate> c(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) c[i] = {int32_t(i), logits[i], 0.0};
  for (auto [id, count] : counts)
    if (id >= 0 && size_t(id) < c.size()) c[size_t(id)].logit = penalize(c[size_t(id)].logit, count, p_);
  return chain(std::move(c));
}

std::vector<Sampler::Candidate> Sampler::candidates(std::span<const int32_t> ids, std::span<const float> logits) const {
  if (ids.size() != logits.size())
    throw Error("wgc: sampler: " + std::to_string(ids.size()) + " ids but " + std::to_string(logits.size()) +
                " logits");
  auto counts = window_counts();
  std::vector<Candidate> c(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    float l = logits[i];
    if (!counts.empty())
      if (auto it = counts.find(ids[i]); it != counts.end()) l = penalize(l, it->second, p_);
    c[i] = {ids[i], l, 0.0};
  }
  return chain(std::move(c));
}

int32_t Sampler::draw(const std::vector<Candidate>& c) {
  if (c.size() == 1) return c[0].id;
  double u = uniform(), cum = 0;
  for (const auto& x : c) {
    cum += x.p;
    if (u < cum) return x.id;
  }
  return c.back().id;  // rounding: u just below 1
}

int32_t Sampler::sample(std::span<const float> logits) {
  if (p_.greedy() && !p_.has_penalties()) {
    // Fast path: argmax, ties to the lower id.
    if (logits.empty()) throw Error("wgc: sampler: no candidates");
    return int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
  }
  return draw(candidates(logits));
}

int32_t Sampler::sample(std::span<const int32_t> ids, std::span<const float> logits) {
  return draw(candidates(ids, logits));
}

int32_t Sampler::sample(const TopK& t) { return sample(t.ids, t.logits); }

}  // namespace wgc::llm
