// Sampler: exact expectations on tiny hand-made distributions (top-k, top-p, min-p, penalties,
// greedy ties), the GPU plan's exactness, seeded reproducibility and temperature frequencies.
// CPU only: no GPU context.
#include "llm/generate/sampler.h"
#include "llm/model/llama.h"
#include "util/error.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <set>

using namespace wgc::llm;

namespace {

std::vector<float> log_probs(std::vector<double> p) {
  std::vector<float> l;
  for (double x : p) l.push_back(float(std::log(x)));
  return l;
}

std::set<int32_t> kept(const Sampler& s, std::span<const float> logits) {
  std::set<int32_t> out;
  for (const auto& c : s.candidates(logits)) out.insert(c.id);
  return out;
}

SamplingParams base(float temp = 1.0f) {
  SamplingParams p;
  p.temperature = temp;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.seed = 1234;
  return p;
}

// probabilities 0.5, 0.3, 0.15, 0.05 (ids shuffled so that order is not the id order)
const std::vector<int32_t> kIds = {7, 2, 9, 4};
const std::vector<float> kL4 = log_probs({0.5, 0.3, 0.15, 0.05});
std::vector<float> full4() {  // vocab of 10: the four above, the rest far below
  std::vector<float> v(10, -100.0f);
  for (size_t i = 0; i < kIds.size(); ++i) v[size_t(kIds[i])] = kL4[i];
  return v;
}

}  // namespace

TEST(Sampler, GreedyArgmaxAndTies) {
  Sampler s(base(0.0f));
  std::vector<float> l = {0.1f, 3.0f, -1.0f, 3.0f, 2.9f};
  EXPECT_EQ(s.sample(l), 1);  // tie: the lower id
  std::vector<int32_t> ids = {4, 3, 1};
  std::vector<float> cl = {2.9f, 3.0f, 3.0f};
  EXPECT_EQ(s.sample(ids, cl), 1);
  EXPECT_EQ(s.plan().kind, SamplePlan::Greedy);
}

TEST(Sampler, TopKKeepsTheBestK) {
  auto p = base();
  p.top_k = 2;
  Sampler s(p);
  auto v = full4();
  EXPECT_EQ(kept(s, v), (std::set<int32_t>{7, 2}));
  auto c = s.candidates(v);
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].id, 7);
  EXPECT_NEAR(c[0].p, 0.5 / 0.8, 1e-6);
  EXPECT_NEAR(c[1].p, 0.3 / 0.8, 1e-6);
  // The same from a candidate set in any order.
  std::vector<int32_t> ids = {9, 4, 2, 7};
  std::vector<float> l = {kL4[2], kL4[3], kL4[1], kL4[0]};
  auto c2 = s.candidates(ids, l);
  ASSERT_EQ(c2.size(), 2u);
  EXPECT_EQ(c2[0].id, 7);
  EXPECT_EQ(c2[1].id, 2);
  EXPECT_NEAR(c2[0].p, c[0].p, 1e-12);
}

TEST(Sampler, TopPKeepsTheSmallestSetReachingP) {
  auto v = full4();
  auto with = [&](float top_p) {
    auto p = base();
    p.top_p = top_p;
    return kept(Sampler(p), v);
  };
  EXPECT_EQ(with(0.4f), (std::set<int32_t>{7}));
  EXPECT_EQ(with(0.75f), (std::set<int32_t>{7, 2}));
  EXPECT_EQ(with(0.85f), (std::set<int32_t>{7, 2, 9}));
  EXPECT_EQ(with(0.97f), (std::set<int32_t>{7, 2, 9, 4}));
  // Renormalised over what is kept.
  auto p = base();
  p.top_p = 0.85f;
  auto c = Sampler(p).candidates(v);
  ASSERT_EQ(c.size(), 3u);
  EXPECT_NEAR(c[0].p, 0.5 / 0.95, 1e-6);
  EXPECT_NEAR(c[2].p, 0.15 / 0.95, 1e-6);
}

TEST(Sampler, TopPAndMinPOnALargeVocabularyMatchAFullSort) {
  // More than 1024 candidates take the pruning path; it must equal the plain definition.
  std::mt19937 rng(7);
  std::normal_distribution<float> d(0.0f, 3.0f);
  std::vector<float> l(20000);
  for (auto& x : l) x = d(rng);
  std::vector<int32_t> order(l.size());
  for (size_t i = 0; i < l.size(); ++i) order[i] = int32_t(i);
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return l[size_t(a)] > l[size_t(b)] || (l[size_t(a)] == l[size_t(b)] && a < b);
  });
  double mx = l[size_t(order[0])], z = 0;
  for (float x : l) z += std::exp(double(x) - mx);
  struct Case {
    float top_p, min_p;
  };
  for (Case k : {Case{0.5f, 0}, Case{0.9f, 0}, Case{0.99f, 0}, Case{1, 0.01f}, Case{1, 1e-5f}, Case{0.9f, 0.02f},
                 Case{0.99f, 1e-4f}}) {
    auto p = base();
    p.top_p = k.top_p;
    p.min_p = k.min_p;
    auto got = Sampler(p).candidates(l);
    size_t n = order.size();
    if (k.top_p < 1) {  // the smallest prefix with mass >= top_p
      double cum = 0;
      for (n = 0; n < order.size();) {
        cum += std::exp(double(l[size_t(order[n])]) - mx) / z;
        ++n;
        if (cum >= k.top_p) break;
      }
    }
    if (k.min_p > 0)  // then tokens with p >= min_p * p_max
      while (n > 1 && double(l[size_t(order[n - 1])]) < mx + std::log(double(k.min_p))) --n;
    std::string what = "top-p " + std::to_string(k.top_p) + " min-p " + std::to_string(k.min_p);
    ASSERT_EQ(got.size(), n) << what;
    double sum = 0;
    for (size_t i = 0; i < n; ++i) {
      EXPECT_EQ(got[i].id, order[i]) << what << " " << i;
      sum += got[i].p;
    }
    EXPECT_NEAR(sum, 1.0, 1e-9) << what;
  }
}

TEST(Sampler, MinPKeepsTokensAboveAFractionOfTheBest) {
  auto v = full4();
  auto with = [&](float min_p) {
    auto p = base();
    p.min_p = min_p;
    return kept(Sampler(p), v);
  };
  EXPECT_EQ(with(0.05f), (std::set<int32_t>{7, 2, 9, 4}));  // 0.025: all four
  EXPECT_EQ(with(0.2f), (std::set<int32_t>{7, 2, 9}));      // 0.1
  EXPECT_EQ(with(0.5f), (std::set<int32_t>{7, 2}));         // 0.25
  EXPECT_EQ(with(0.9f), (std::set<int32_t>{7}));            // 0.45
}

TEST(Sampler, FiltersChainInLlamaCppOrder) {
  // top-k 3 -> {0.5, 0.3, 0.15}; top-p 0.6 over the renormalised 0.526, 0.316 -> {7, 2}; min-p 0.7 -> {7}.
  auto v = full4();
  auto p = base();
  p.top_k = 3;
  p.top_p = 0.6f;
  EXPECT_EQ(kept(Sampler(p), v), (std::set<int32_t>{7, 2}));
  p.min_p = 0.7f;
  EXPECT_EQ(kept(Sampler(p), v), (std::set<int32_t>{7}));
}

TEST(Sampler, TemperatureReshapesTheDistribution) {
  auto v = full4();
  auto p = base(2.0f);
  auto c = Sampler(p).candidates(v);
  double z = std::sqrt(0.5) + std::sqrt(0.3) + std::sqrt(0.15) + std::sqrt(0.05) + 6 * std::exp(-50.0);
  ASSERT_GE(c.size(), 4u);
  EXPECT_NEAR(c[0].p, std::sqrt(0.5) / z, 1e-6);
  EXPECT_NEAR(c[3].p, std::sqrt(0.05) / z, 1e-6);
}

TEST(Sampler, RepeatPenaltyDividesPositiveAndMultipliesNegative) {
  auto p = base();
  p.repeat_penalty = 2.0f;
  Sampler s(p);
  s.accept(std::vector<int32_t>{0, 1, 1});
  std::vector<float> l = {2.0f, -2.0f, 1.5f, 0.5f};
  std::map<int32_t, float> got;
  for (auto& c : s.candidates(l)) got[c.id] = c.logit;
  EXPECT_FLOAT_EQ(got[0], 1.0f);
  EXPECT_FLOAT_EQ(got[1], -4.0f);  // counted once, however often it appeared
  EXPECT_FLOAT_EQ(got[2], 1.5f);
  EXPECT_FLOAT_EQ(got[3], 0.5f);
  // Greedy with the penalty: 2 wins now.
  auto g = p;
  g.temperature = 0;
  Sampler sg(g);
  sg.accept(std::vector<int32_t>{0});
  EXPECT_EQ(sg.sample(l), 2);
}

TEST(Sampler, PresenceAndFrequencyPenalties) {
  auto p = base();
  p.presence_penalty = 0.5f;
  p.frequency_penalty = 0.25f;
  Sampler s(p);
  s.accept(std::vector<int32_t>{3, 3, 1});
  std::vector<float> l = {1.0f, 1.0f, 1.0f, 1.0f};
  std::map<int32_t, float> got;
  for (auto& c : s.candidates(l)) got[c.id] = c.logit;
  EXPECT_FLOAT_EQ(got[0], 1.0f);
  EXPECT_FLOAT_EQ(got[1], 1.0f - 0.5f - 0.25f);
  EXPECT_FLOAT_EQ(got[3], 1.0f - 0.5f - 0.5f);
}

TEST(Sampler, PenaltiesLookBackOverTheLastN) {
  auto p = base();
  p.repeat_penalty = 2.0f;
  p.penalty_last_n = 2;
  Sampler s(p);
  s.accept(std::vector<int32_t>{0, 1, 2});
  std::vector<float> l = {2.0f, 2.0f, 2.0f, 2.0f};
  std::map<int32_t, float> got;
  for (auto& c : s.candidates(l)) got[c.id] = c.logit;
  EXPECT_FLOAT_EQ(got[0], 2.0f);  // outside the window
  EXPECT_FLOAT_EQ(got[1], 1.0f);
  EXPECT_FLOAT_EQ(got[2], 1.0f);
  p.penalty_last_n = 0;  // off
  Sampler off(p);
  off.accept(std::vector<int32_t>{0, 1, 2});
  for (auto& c : off.candidates(l)) EXPECT_FLOAT_EQ(c.logit, 2.0f);
  p.penalty_last_n = -1;  // all
  Sampler all(p);
  all.accept(std::vector<int32_t>{0, 1, 2});
  for (auto& c : all.candidates(l)) EXPECT_FLOAT_EQ(c.logit, c.id == 3 ? 2.0f : 1.0f);
}

TEST(Sampler, PlanPicksTheCheapestExactEnginePath) {
  auto p = base(0.0f);
  EXPECT_EQ(Sampler(p).plan().kind, SamplePlan::Greedy);
  p.temperature = 0.8f;
  EXPECT_EQ(Sampler(p).plan().kind, SamplePlan::Full);  // no top-k: every token may be drawn
  p.top_k = 40;
  EXPECT_EQ(Sampler(p).plan().kind, SamplePlan::TopK);
  EXPECT_EQ(Sampler(p).plan().k, 40);
  p.top_k = 100;
  EXPECT_EQ(Sampler(p).plan().kind, SamplePlan::Full);
  p.top_k = 40;
  p.repeat_penalty = 1.1f;
  Sampler s(p);
  s.accept(std::vector<int32_t>{5, 6, 5, 7, 8});  // 4 distinct
  EXPECT_EQ(s.plan().kind, SamplePlan::TopK);
  EXPECT_EQ(s.plan().k, 44);
  s.accept(std::vector<int32_t>{10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30});
  EXPECT_EQ(s.plan().kind, SamplePlan::Full);  // 40 + 25 > 64
  p.repeat_penalty = 0.9f;                     // raises logits: a candidate set is not enough
  EXPECT_EQ(Sampler(p).plan().kind, SamplePlan::Full);
  p.repeat_penalty = 1.0f;
  p.presence_penalty = -0.5f;
  EXPECT_EQ(Sampler(p).plan().kind, SamplePlan::Full);
  auto g = base(0.0f);
  g.frequency_penalty = 0.5f;
  Sampler sg(g);
  sg.accept(std::vector<int32_t>{1, 2, 3});
  EXPECT_EQ(sg.plan().kind, SamplePlan::TopK);
  EXPECT_EQ(sg.plan().k, 4);
}

TEST(Sampler, PenalizedTopKFromTheWidenedCandidateSetEqualsFullLogits) {
  std::mt19937 rng(3);
  std::normal_distribution<float> d(0.0f, 2.0f);
  std::vector<float> l(3000);
  for (auto& x : l) x = d(rng);
  std::vector<int32_t> order(l.size());
  for (size_t i = 0; i < l.size(); ++i) order[i] = int32_t(i);
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return l[size_t(a)] > l[size_t(b)]; });
  for (float temp : {0.0f, 0.7f}) {
    auto p = base(temp);
    p.top_k = 8;
    p.top_p = 0.9f;
    p.repeat_penalty = 3.0f;
    p.presence_penalty = 1.0f;
    Sampler s(p);
    // Penalize the best few so that tokens from below the top 8 move up.
    s.accept(std::vector<int32_t>{order[0], order[1], order[2], order[2], order[5], order[40]});
    auto plan = s.plan();
    ASSERT_EQ(plan.kind, SamplePlan::TopK);
    ASSERT_EQ(plan.k, (temp == 0 ? 1 : 8) + 5);
    std::vector<int32_t> ids(order.begin(), order.begin() + plan.k);
    std::vector<float> cl;
    for (int32_t id : ids) cl.push_back(l[size_t(id)]);
    auto a = s.candidates(l);
    auto b = s.candidates(ids, cl);
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(a[i].id, b[i].id);
      EXPECT_NEAR(a[i].p, b[i].p, 1e-9);
    }
  }
}

TEST(Sampler, UniformIsTheTop53BitsOfMt19937_64) {
  auto p = base();
  p.seed = 5489;  // std::mt19937_64's default seed: first output 14514284786278117030
  Sampler s(p);
  EXPECT_EQ(s.uniform(), double(14514284786278117030ull >> 11) * 0x1.0p-53);
}

TEST(Sampler, SeedReproducesAndDiffers) {
  auto v = full4();
  auto run = [&](uint64_t seed) {
    auto p = base();
    p.seed = seed;
    Sampler s(p);
    std::vector<int32_t> out;
    for (int i = 0; i < 200; ++i) out.push_back(s.sample(v));
    return out;
  };
  EXPECT_EQ(run(42), run(42));
  EXPECT_NE(run(42), run(43));
  // reset() re-seeds.
  auto p = base();
  p.seed = 42;
  Sampler s(p);
  int32_t first = s.sample(v);
  for (int i = 0; i < 10; ++i) s.sample(v);
  s.reset();
  EXPECT_EQ(s.sample(v), first);
}

TEST(Sampler, TemperatureSamplingFrequencies) {
  std::vector<float> l = log_probs({0.5, 0.3, 0.2});
  for (float temp : {1.0f, 2.0f}) {
    auto p = base(temp);
    p.seed = 99;
    Sampler s(p);
    const int n = 40000;
    std::vector<int> count(3);
    for (int i = 0; i < n; ++i) ++count[size_t(s.sample(l))];
    std::vector<double> want = {0.5, 0.3, 0.2};
    double z = 0;
    for (auto& w : want) z += (w = std::pow(w, 1.0 / temp));
    for (size_t i = 0; i < 3; ++i)
      EXPECT_NEAR(double(count[i]) / n, want[i] / z, 0.01) << "temp " << temp << " id " << i;
  }
}

TEST(Sampler, SampledTokensStayInTheKeptSet) {
  auto v = full4();
  auto p = base(1.5f);
  p.top_p = 0.75f;
  Sampler s(p);
  for (int i = 0; i < 500; ++i) {
    int32_t id = s.sample(v);
    EXPECT_TRUE(id == 7 || id == 2) << id;
  }
}

TEST(Sampler, Describe) {
  auto p = base(0.8f);
  p.top_p = 0.95f;
  p.seed = 7;
  EXPECT_EQ(p.describe(), "temp 0.80, top-p 0.95, seed 7");
  p.temperature = 0;
  p.repeat_penalty = 1.1f;
  EXPECT_EQ(p.describe(), "greedy, repeat-penalty 1.10, last-n 64");
}

// validate() names the field out of range; the defaults and the edges of each range pass.
TEST(Sampler, ValidateNamesTheFieldOutOfRange) {
  EXPECT_NO_THROW(validate(SamplingParams{}));
  auto fails_on = [](SamplingParams p) -> std::string {
    try {
      validate(p);
    } catch (const wgc::OptionError& e) {
      EXPECT_EQ(std::string(e.what()), e.option + " " + e.problem);
      return e.option;
    }
    return "";
  };
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  struct Case {
    float SamplingParams::*field;
    float value;
    const char* name;
  } cases[] = {
      {&SamplingParams::temperature, nan, "temperature"},
      {&SamplingParams::temperature, inf, "temperature"},
      {&SamplingParams::top_p, nan, "top_p"},
      {&SamplingParams::top_p, 0.f, "top_p"},
      {&SamplingParams::top_p, 1.01f, "top_p"},
      {&SamplingParams::min_p, -0.1f, "min_p"},
      {&SamplingParams::min_p, inf, "min_p"},
      {&SamplingParams::repeat_penalty, 0.f, "repeat_penalty"},
      {&SamplingParams::repeat_penalty, nan, "repeat_penalty"},
      {&SamplingParams::presence_penalty, -inf, "presence_penalty"},
      {&SamplingParams::frequency_penalty, nan, "frequency_penalty"},
  };
  for (const auto& c : cases) {
    SamplingParams p;
    p.*c.field = c.value;
    EXPECT_EQ(fails_on(p), c.name) << c.name << " = " << c.value;
  }
  SamplingParams edges;
  edges.temperature = 0;
  edges.top_p = 1;
  edges.min_p = 1;
  edges.presence_penalty = -2;
  edges.penalty_last_n = -1;
  EXPECT_NO_THROW(validate(edges));
  edges.penalty_last_n = -2;
  EXPECT_EQ(fails_on(edges), "penalty_last_n");
}
