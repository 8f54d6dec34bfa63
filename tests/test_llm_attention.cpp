// LLM KV cache appends and attention: tiled flash attention (prefill, continuing after cached
// tokens) and split-K flash decoding, against the f64 reference, with GQA.
#include "test_llm_util.h"

using namespace wgc;
using namespace wgc::llm;
using wgc::test::ctx;
using wgc::test::ops;

namespace {

struct Cfg {
  int nh, nkv, hd;
};
const Cfg kCfgs[] = {{4, 4, 64}, {8, 2, 128}, {8, 1, 8}};  // GQA ratios 1, 4, 8

// A fused QKV activation [n][(nh + 2 nkv) hd] and the same split into q [n][nh][hd], k, v [n][nkv][hd].
struct Qkv {
  std::vector<float> fused, q, k, v;
};
Qkv make_qkv(const Cfg& c, int n, uint32_t seed) {
  Qkv r;
  const int row = (c.nh + 2 * c.nkv) * c.hd;
  r.fused = test::random_floats(size_t(n * row), seed, -2.f, 2.f);
  for (int t = 0; t < n; ++t) {
    const float* p = &r.fused[size_t(t * row)];
    r.q.insert(r.q.end(), p, p + c.nh * c.hd);
    r.k.insert(r.k.end(), p + c.nh * c.hd, p + (c.nh + c.nkv) * c.hd);
    r.v.insert(r.v.end(), p + (c.nh + c.nkv) * c.hd, p + row);
  }
  return r;
}

// Runs append + attention for tokens [start, start + n) of qkv (all tokens' data) on the cache.
std::vector<float> run_step(const Cfg& c, const KvLayer& cache, const Qkv& all, int start, int n, bool decode,
                            int splits = 0) {
  const int row = (c.nh + 2 * c.nkv) * c.hd;
  std::vector<float> part(all.fused.begin() + start * row, all.fused.begin() + (start + n) * row);
  auto qkv = make_tensor(ctx(), {int64_t(part.size())}, part);
  auto out = test::poisoned(int64_t(n) * c.nh * c.hd);
  Batch b(ctx());
  ops().kv_append(b, cache, qkv, c.nh * c.hd, qkv, (c.nh + c.nkv) * c.hd, row, start, n);
  AttentionArgs a;
  a.n_tokens = n;
  a.n_heads = c.nh;
  a.start = start;
  a.q_stride = row;
  a.splits = splits;
  if (decode)
    ops().attention_decode(b, cache, qkv, out, a);
  else
    ops().attention_prefill(b, cache, qkv, out, a);
  b.run();
  return download<float>(ctx(), out);
}

std::vector<float> slice(const std::vector<float>& v, size_t from, size_t n) {
  return {v.begin() + long(from), v.begin() + long(from + n)};
}

}  // namespace

TEST(LlmAttention, KvAppendWritesTheCacheLayout) {
  const Cfg c{4, 2, 8};
  auto cache = make_kv_cache(ctx(), 2, c.nkv, 16, c.hd);
  fill_u32(ctx(), cache.k, 0);
  fill_u32(ctx(), cache.v, 0);
  auto all = make_qkv(c, 8, 1);  // tokens 5..7 are appended
  run_step(c, cache.layer(1), all, 5, 3, false);
  auto kc = download<float>(ctx(), cache.k), vc = download<float>(ctx(), cache.v);
  const size_t layer = size_t(c.nkv * 16 * c.hd);
  for (int t = 0; t < 3; ++t)
    for (int h = 0; h < c.nkv; ++h)
      for (int d = 0; d < c.hd; ++d) {
        size_t at = layer + size_t((h * 16 + 5 + t) * c.hd + d);
        ASSERT_EQ(kc[at], all.k[size_t(((5 + t) * c.nkv + h) * c.hd + d)]);
        ASSERT_EQ(vc[at], all.v[size_t(((5 + t) * c.nkv + h) * c.hd + d)]);
      }
  EXPECT_EQ(kc[0], 0.f);  // layer 0 untouched
}

TEST(LlmAttention, PrefillMatchesReference) {
  for (const auto& c : kCfgs)
    for (int n : {1, 7, 300}) {
      auto cache = make_kv_cache(ctx(), 1, c.nkv, 320, c.hd);
      auto all = make_qkv(c, n, uint32_t(n));
      auto got = run_step(c, cache.layer(0), all, 0, n, false);
      auto want = ref::attention(all.q, all.k, all.v, n, c.nh, c.nkv, c.hd, 0, 1.f / std::sqrt(float(c.hd)));
      EXPECT_LE(test::rel_error(got, want), 1e-5) << c.nh << "/" << c.nkv << " hd=" << c.hd << " n=" << n;
    }
}

TEST(LlmAttention, PrefillContinuesAfterCachedTokens) {
  for (const auto& c : kCfgs) {
    const int first = 37, second = 21;
    auto cache = make_kv_cache(ctx(), 1, c.nkv, 64, c.hd);
    auto all = make_qkv(c, first + second, 99);
    run_step(c, cache.layer(0), all, 0, first, false);
    auto got = run_step(c, cache.layer(0), all, first, second, false);
    auto want = ref::attention(all.q, all.k, all.v, first + second, c.nh, c.nkv, c.hd, 0, 1.f / std::sqrt(float(c.hd)));
    EXPECT_LE(test::rel_error(got, slice(want, size_t(first * c.nh * c.hd), size_t(second * c.nh * c.hd))), 1e-5)
        << c.nh << "/" << c.nkv << " hd=" << c.hd;
  }
}

TEST(LlmAttention, DecodeStepsEqualOnePrefill) {
  for (const auto& c : kCfgs) {
    const int steps = 40, pre = 3;
    auto all = make_qkv(c, steps, 7);
    auto full_cache = make_kv_cache(ctx(), 1, c.nkv, 64, c.hd);
    auto full = run_step(c, full_cache.layer(0), all, 0, steps, false);
    auto cache = make_kv_cache(ctx(), 2, c.nkv, 64, c.hd);  // layer 1: a cache offset
    run_step(c, cache.layer(1), all, 0, pre, false);
    const size_t per = size_t(c.nh * c.hd);
    for (int s = pre; s < steps; ++s) {
      auto got = run_step(c, cache.layer(1), all, s, 1, true, s % 3 == 0 ? 0 : 1 + s % 5);
      ASSERT_LE(test::rel_error(got, slice(full, size_t(s) * per, per)), 1e-5)
          << c.nh << "/" << c.nkv << " hd=" << c.hd << " step " << s;
    }
  }
}

TEST(LlmAttention, DecodeOverALongCacheWithSplits) {
  for (const auto& c : kCfgs)
    for (int splits : {0, 1, 7}) {
      const int len = 300;
      auto all = make_qkv(c, len, 5);
      auto cache = make_kv_cache(ctx(), 1, c.nkv, len, c.hd);
      run_step(c, cache.layer(0), all, 0, len - 1, false);
      auto got = run_step(c, cache.layer(0), all, len - 1, 1, true, splits);
      auto want = ref::attention(all.q, all.k, all.v, len, c.nh, c.nkv, c.hd, 0, 1.f / std::sqrt(float(c.hd)));
      EXPECT_LE(test::rel_error(got, slice(want, size_t((len - 1) * c.nh * c.hd), size_t(c.nh * c.hd))), 1e-5)
          << c.nh << "/" << c.nkv << " hd=" << c.hd << " splits=" << splits;
    }
}
