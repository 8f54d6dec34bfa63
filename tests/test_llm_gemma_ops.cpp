// The ops Gemma's layers add, against float64 formulas written here: GeGLU (GELU-tanh, as
// transformers' gelu_pytorch_tanh, far out where tanh saturates too), the RMSNorm added to the
// residual (rms_norm_add: Gemma's norms after attention and the MLP), and the logits' soft-cap.
// Outputs poisoned first (rms_norm_add: the residual it adds to is random and must be kept).
#include "test_llm_util.h"

#include <cmath>
#include <numbers>

using namespace wgc;
using namespace wgc::llm;
using wgc::test::ctx;
using wgc::test::ops;

TEST(LlmGemmaOps, GegluMatchesGeluTanh) {
  const int n = 5, ff = 37;
  auto gu = test::random_floats(size_t(n * 2 * ff), 11, -6.f, 6.f);
  gu[0] = 40.f;  // tanh saturated both ways
  gu[1] = -40.f;
  std::vector<float> want;
  for (int t = 0; t < n; ++t)
    for (int i = 0; i < ff; ++i) {
      const double x = gu[size_t(t * 2 * ff + i)], u = gu[size_t(t * 2 * ff + ff + i)];
      const double g = 0.5 * x * (1 + std::tanh(std::sqrt(2 / std::numbers::pi) * (x + 0.044715 * x * x * x)));
      want.push_back(float(g * u));
    }
  auto gut = make_tensor(ctx(), {int64_t(gu.size())}, gu);
  auto out = test::poisoned(n * ff);
  Batch b(ctx());
  ops().swiglu(b, gut, 2 * ff, 0, gut, 2 * ff, ff, out, n, ff, -1, true);
  b.run();
  const auto got = download<float>(ctx(), out);
  EXPECT_LE(test::rel_error(got, want), 1e-6);
  EXPECT_NEAR(got[0], want[0], 1e-4);
  EXPECT_EQ(got[1], 0.f);  // GELU(-40) is 0 (tanh's clamp does not make it NaN)
}

TEST(LlmGemmaOps, RmsNormAddedToTheResidual) {
  for (int n : {1, 37, 300}) {
    const int rows = 3;
    const auto x = test::random_floats(size_t(rows * n), 21, -3.f, 3.f);
    const auto w = test::random_floats(size_t(n), 22, 0.5f, 1.5f);
    const auto y0 = test::random_floats(size_t(rows * n), 23);
    std::vector<float> want(y0);
    for (int r = 0; r < rows; ++r) {
      double ss = 0;
      for (int i = 0; i < n; ++i) ss += double(x[size_t(r * n + i)]) * x[size_t(r * n + i)];
      const double inv = 1 / std::sqrt(ss / n + 1e-6);
      for (int i = 0; i < n; ++i) want[size_t(r * n + i)] += float(x[size_t(r * n + i)] * inv * w[size_t(i)]);
    }
    auto xt = make_tensor(ctx(), {int64_t(x.size())}, x), wt = make_tensor(ctx(), {n}, w);
    auto y = make_tensor(ctx(), {int64_t(y0.size())}, y0);
    Batch b(ctx());
    ops().rms_norm_add(b, xt, wt, y, rows, n, 1e-6f);
    b.run();
    EXPECT_LE(test::rel_error(download<float>(ctx(), y), want), 1e-6) << n;
  }
}

TEST(LlmGemmaOps, SoftCap) {
  const int n = 1001;
  auto x = test::random_floats(n, 31, -100.f, 100.f);
  std::vector<float> want;
  for (float v : x) want.push_back(float(2.5 * std::tanh(double(v) / 2.5)));
  auto y = make_tensor(ctx(), {n}, x);
  Batch b(ctx());
  ops().softcap(b, y, n, 2.5f);
  b.run();
  EXPECT_LE(test::rel_error(download<float>(ctx(), y), want), 1e-6);
  Batch bad(ctx());
  EXPECT_THROW(ops().softcap(bad, y, n, 0.f), Error);
  EXPECT_THROW(ops().softcap(bad, y, n + 100, 1.f), Error);
}
