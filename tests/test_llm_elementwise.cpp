// LLM RMSNorm, RoPE (tables, both pair conventions, llama3/linear scaling), SwiGLU, residual add,
// scale, argmax and top-k.
#include "test_llm_util.h"

#include <cmath>
#include <numbers>
#include <tuple>

using namespace wgc;
using namespace wgc::llm;
using wgc::test::ctx;
using wgc::test::ops;

TEST(LlmRmsNorm, EveryVersionMatchesReference) {
  std::vector<Version> vs = {Version::Shared};
  if (ctx().features().subgroups) vs.push_back(Version::Subgroup);
  for (auto [rows, n] : std::vector<std::pair<int, int>>{{3, 4096}, {5, 37}, {1, 1}, {70, 300}}) {
    auto xv = test::random_floats(size_t(rows * n), 1, -3.f, 3.f);
    auto wv = test::random_floats(size_t(n), 2, 0.5f, 1.5f);
    auto x = make_tensor(ctx(), {int64_t(xv.size())}, xv);
    auto w = make_tensor(ctx(), {n}, wv);
    auto want = ref::rms_norm(xv, wv, rows, n, 1e-5f);
    for (auto v : vs) {
      auto y = test::poisoned(int64_t(rows) * n);
      Batch b(ctx());
      ops().rms_norm(b, x, w, y, rows, n, 1e-5f, v);
      b.run();
      EXPECT_LE(test::rel_error(download<float>(ctx(), y), want), 1e-5) << rows << "x" << n << " " << test::name(v);
    }
  }
}

// Qwen 3's per-head norms, in place inside a fused QKV row: the heads it covers change as the
// reference says, everything else in the row (the other heads, the gap) stays untouched.
TEST(LlmHeadRmsNorm, InPlaceOnStridedHeadsMatchesReference) {
  for (auto [tokens, heads, hd, off] : std::vector<std::tuple<int, int, int, int>>{{1, 2, 64, 0}, {7, 3, 128, 20}, {5, 1, 8, 4}}) {
    const int64_t stride = int64_t(heads) * hd + off + 12;  // room for other heads after these
    auto xv = test::random_floats(size_t(tokens * stride), 3, -3.f, 3.f);
    auto wv = test::random_floats(size_t(hd), 4, 0.5f, 1.5f);
    std::vector<float> rows_in;
    for (int t = 0; t < tokens; ++t)
      rows_in.insert(rows_in.end(), xv.begin() + t * stride + off, xv.begin() + t * stride + off + heads * hd);
    auto normed = ref::rms_norm(rows_in, wv, tokens * heads, hd, 1e-6f);
    std::vector<float> want = xv;
    for (int t = 0; t < tokens; ++t)
      std::copy_n(normed.begin() + t * heads * hd, heads * hd, want.begin() + t * stride + off);
    auto x = make_tensor(ctx(), {int64_t(xv.size())}, xv);
    auto w = make_tensor(ctx(), {hd}, wv);
    Batch b(ctx());
    ops().head_rms_norm(b, x, w, tokens, heads, hd, stride, off, 1e-6f);
    b.run();
    EXPECT_LE(test::rel_error(download<float>(ctx(), x), want), 1e-5) << tokens << "x" << heads << "x" << hd;
  }
}

TEST(LlmRope, InvFreqFollowsTransformers) {
  // default: theta^(-2i/d)
  RopeConfig c;
  c.theta = 10000.f;
  auto f = rope_inv_freq(c, 64);
  ASSERT_EQ(f.size(), 32u);
  EXPECT_EQ(f[0], 1.f);
  EXPECT_NEAR(f[31], std::pow(10000.0, -62.0 / 64), 1e-7 * f[31]);
  // linear: divided by the factor
  c.scaling = RopeConfig::Scaling::Linear;
  c.factor = 4.f;
  EXPECT_NEAR(rope_inv_freq(c, 64)[5], std::pow(10000.0, -10.0 / 64) / 4, 1e-7);
  // llama3 (Llama 3.1 values): high frequencies kept, low divided by 8, the middle interpolated
  RopeConfig l3;
  l3.theta = 500000.f;
  l3.scaling = RopeConfig::Scaling::Llama3;
  l3.factor = 8.f;
  l3.low_freq_factor = 1.f;
  l3.high_freq_factor = 4.f;
  l3.original_max_position = 8192;
  auto g = rope_inv_freq(l3, 128);
  int kept = 0, divided = 0, smoothed = 0;
  for (int i = 0; i < 64; ++i) {
    double base = std::pow(500000.0, -2.0 * i / 128), wl = 2 * std::numbers::pi / base;
    double want = base;
    if (wl > 8192) {
      want = base / 8, ++divided;
    } else if (wl >= 2048) {
      double s = (8192 / wl - 1) / (4 - 1);
      want = (1 - s) * base / 8 + s * base, ++smoothed;
    } else {
      ++kept;
    }
    EXPECT_NEAR(g[size_t(i)], want, 2e-6 * want) << i;
  }
  EXPECT_GT(kept, 0);
  EXPECT_GT(divided, 0);
  EXPECT_GT(smoothed, 0);
}

TEST(LlmRope, BothConventionsPositionsAndStridedHeads) {
  for (int hd : {64, 128, 8})
    for (bool inter : {false, true})
      for (bool from_buffer : {false, true}) {
        const int n = 7, nh = 4, nkv = 2, row = (nh + 2 * nkv) * hd;  // a fused QKV buffer
        RopeConfig c;
        c.theta = 500000.f;
        c.scaling = RopeConfig::Scaling::Llama3;
        c.factor = 8.f;
        auto table = make_rope_table(ctx(), c, hd, 400);
        auto inv = rope_inv_freq(c, hd);
        auto xv = test::random_floats(size_t(n * row), uint32_t(hd));
        auto x = make_tensor(ctx(), {int64_t(xv.size())}, xv);
        std::vector<int> pos(n);
        std::vector<uint32_t> upos(n);
        for (int t = 0; t < n; ++t)
          pos[size_t(t)] = int(upos[size_t(t)] = from_buffer ? uint32_t(397 - 50 * t) : uint32_t(300 + t));
        auto pt = make_tensor(ctx(), {n}, DType::U32, std::as_bytes(std::span(upos)));
        RopeArgs a;
        a.n_tokens = n;
        a.n_heads = nh + nkv;  // q and k heads are adjacent in the fused row; v untouched
        a.stride = row;
        a.offset = 0;
        a.pos0 = 300;
        if (from_buffer) a.positions = pt;
        a.interleaved = inter;
        Batch b(ctx());
        ops().rope(b, x, table, a);
        b.run();
        // reference: rotate the q|k part of each row, leave v as is
        std::vector<float> qk(size_t(n * (nh + nkv) * hd));
        for (int t = 0; t < n; ++t)
          std::copy_n(&xv[size_t(t * row)], (nh + nkv) * hd, &qk[size_t(t * (nh + nkv) * hd)]);
        ref::rope(qk, n, nh + nkv, hd, pos, inv, inter);
        auto want = xv;
        for (int t = 0; t < n; ++t)
          std::copy_n(&qk[size_t(t * (nh + nkv) * hd)], (nh + nkv) * hd, &want[size_t(t * row)]);
        EXPECT_LE(test::rel_error(download<float>(ctx(), x), want), 1e-6)
            << "hd=" << hd << " interleaved=" << inter << " buffer=" << from_buffer;
      }
}

TEST(LlmRope, PositionsPastTheTableAreErrors) {
  auto table = make_rope_table(ctx(), {}, 8, 10);
  auto x = make_tensor(ctx(), {64});
  RopeArgs a;
  a.n_tokens = 2;
  a.n_heads = 1;
  a.pos0 = 9;
  Batch b(ctx());
  EXPECT_THROW(ops().rope(b, x, table, a), Error);
}

TEST(LlmElementwise, SwigluFromOneGateUpBufferAndSeparate) {
  const int n = 5, ff = 37;
  auto gu = test::random_floats(size_t(n * 2 * ff), 3, -6.f, 6.f);
  std::vector<float> g, u;
  for (int t = 0; t < n; ++t) {
    g.insert(g.end(), &gu[size_t(t * 2 * ff)], &gu[size_t(t * 2 * ff + ff)]);
    u.insert(u.end(), &gu[size_t(t * 2 * ff + ff)], &gu[size_t(t * 2 * ff + 2 * ff)]);
  }
  auto want = ref::swiglu(g, u);
  auto gut = make_tensor(ctx(), {int64_t(gu.size())}, gu);
  auto out = test::poisoned(n * ff);
  Batch b(ctx());
  ops().swiglu(b, gut, 2 * ff, 0, gut, 2 * ff, ff, out, n, ff);
  b.run();
  EXPECT_LE(test::rel_error(download<float>(ctx(), out), want), 1e-6);
  auto gt = make_tensor(ctx(), {int64_t(g.size())}, g), ut = make_tensor(ctx(), {int64_t(u.size())}, u);
  auto out2 = test::poisoned(n * ff);
  Batch b2(ctx());
  ops().swiglu(b2, gt, ff, 0, ut, ff, 0, out2, n, ff);
  b2.run();
  EXPECT_LE(test::rel_error(download<float>(ctx(), out2), want), 1e-6);
}

TEST(LlmElementwise, AddAndScale) {
  const int n = 1001;
  auto a = test::random_floats(n, 4), c = test::random_floats(n, 5);
  auto x = make_tensor(ctx(), {n}, a), y = make_tensor(ctx(), {n}, c);
  Batch b(ctx());
  ops().add(b, x, y, n);
  ops().scale(b, y, n, 0.5f);
  b.run();
  std::vector<float> want(n);
  for (int i = 0; i < n; ++i) want[size_t(i)] = (a[size_t(i)] + c[size_t(i)]) * 0.5f;
  EXPECT_EQ(download<float>(ctx(), y), want);
}

TEST(LlmSelect, ArgmaxOverAVocabulary) {
  for (int n : {128256, 1, 2049, 300}) {
    auto v = test::random_floats(size_t(n), uint32_t(n), -20.f, 20.f);
    if (n > 10) {
      v[size_t(n - 3)] = 30.f;  // two equal maxima: the first wins
      v[size_t(n - 1)] = 30.f;
      v[5] = NAN;
    }
    auto x = make_tensor(ctx(), {n}, v);
    auto out = test::poisoned(1, DType::U32);
    Batch b(ctx());
    ops().argmax(b, x, n, out);
    b.run();
    EXPECT_EQ(download<uint32_t>(ctx(), out)[0], n > 10 ? uint32_t(n - 3) : ref::argmax(v)) << n;
  }
}

TEST(LlmSelect, TopKMatchesReference) {
  for (auto [n, k] : std::vector<std::pair<int, int>>{{128256, 64}, {128256, 1}, {100, 7}, {5000, 40}, {64, 64}}) {
    auto v = test::random_floats(size_t(n), uint32_t(n + k), -20.f, 20.f);
    for (int i = 0; i < n; i += 97) v[size_t(i)] = 19.5f;  // ties: lower ids first
    auto x = make_tensor(ctx(), {n}, v);
    auto ov = test::poisoned(k), oi = test::poisoned(k, DType::U32);
    Batch b(ctx());
    ops().topk(b, x, n, k, ov, oi);
    b.run();
    auto want = ref::topk(v, k);
    auto gv = download<float>(ctx(), ov);
    auto gi = download<uint32_t>(ctx(), oi);
    for (int i = 0; i < k; ++i) {
      EXPECT_EQ(gv[size_t(i)], want[size_t(i)].first) << n << " k=" << k << " #" << i;
      EXPECT_EQ(gi[size_t(i)], want[size_t(i)].second) << n << " k=" << k << " #" << i;
    }
  }
}
