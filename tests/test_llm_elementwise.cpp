// LLM RMSNorm, RoPE (tables, both pair conventions, llama3/linear scaling), RoPE fused with the KV
// cache append, SwiGLU, residual add, scale, argmax and top-k.
#include "llm/formats/model_config.h"
#include "test_llm_util.h"

#include <cmath>
#include <cstring>
#include <numbers>
#include <tuple>

using namespace wgc;
using namespace wgc::llm;
using wgc::test::ctx;

namespace {

// The frequencies of a model: theta^(-2i/d), with Llama 3.1's scaling when asked.
std::vector<double> inv_freq(int head_dim, double theta = 10000, bool llama3 = false) {
  ModelConfig c;
  c.head_dim = c.rope_dim = head_dim;
  c.rope_theta = theta;
  if (llama3) c.rope_scaling = {RopeScalingType::Llama3, 8, 1, 4, 8192};
  return c.rope_inv_freq();
}

std::vector<float> as_float(const std::vector<double>& v) { return {v.begin(), v.end()}; }

}  // namespace
using wgc::test::ops;

TEST(LlmRmsNorm, EveryVersionMatchesReference) {
  std::vector<RmsNormVersion> vs = {RmsNormVersion::Shared};
  if (ctx().features().subgroups) vs.push_back(RmsNormVersion::Subgroup);
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
      EXPECT_LE(test::rel_error(download<float>(ctx(), y), want), 1e-5) << rows << "x" << n << " " << to_string(v);
    }
  }
}

// Qwen 3's per-head norms, in place inside a fused QKV row: the heads it covers change as the
// reference says, everything else in the row (the other heads, the gap) stays untouched.
TEST(LlmHeadRmsNorm, InPlaceOnStridedHeadsMatchesReference) {
  for (auto [tokens, heads, hd, off] :
       std::vector<std::tuple<int, int, int, int>>{{1, 2, 64, 0}, {7, 3, 128, 20}, {5, 1, 8, 4}}) {
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
  auto f = inv_freq(64);
  ASSERT_EQ(f.size(), 32u);
  EXPECT_EQ(f[0], 1.0);
  EXPECT_NEAR(f[31], std::pow(10000.0, -62.0 / 64), 1e-12 * f[31]);
  // llama3 (Llama 3.1 values): high frequencies kept, low divided by 8, the middle interpolated
  auto g = inv_freq(128, 500000, true);
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
        auto inv64 = inv_freq(hd, 500000, true);
        auto table = make_rope_table(ctx(), inv64, hd, 400);
        auto inv = as_float(inv64);
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
  auto table = make_rope_table(ctx(), inv_freq(8), 8, 10);
  auto x = make_tensor(ctx(), {64});
  RopeArgs a;
  a.n_tokens = 2;
  a.n_heads = 1;
  a.pos0 = 9;
  Batch b(ctx());
  EXPECT_THROW(ops().rope(b, x, table, a), Error);
}

namespace {

struct RopeKvCase {
  int nh, nkv, hd, n, pos0;
  bool interleaved, from_buffer, v_before_k;
};

std::vector<uint32_t> bits(const Tensor& t) { return download<uint32_t>(ctx(), t); }

// How many elements of two tensors differ bit for bit.
size_t bit_differences(const Tensor& a, const Tensor& b) {
  auto x = bits(a), y = bits(b);
  if (x.size() != y.size()) return std::max(x.size(), y.size());
  size_t n = 0;
  for (size_t i = 0; i < x.size(); ++i) n += size_t(x[i] != y[i]);
  return n;
}

// The heads [off, off + heads * hd) of every row of a [n][stride] activation, back to back.
std::vector<float> heads_of(const std::vector<float>& x, int n, int64_t stride, int64_t off, int heads, int hd) {
  std::vector<float> r;
  for (int t = 0; t < n; ++t)
    r.insert(r.end(), x.begin() + t * stride + off, x.begin() + t * stride + off + heads * hd);
  return r;
}

}  // namespace

// The fused op against the references of its parts: ref::rope for the query heads (in place) and
// the keys (in the cache), the cache layout of kv_append for keys and values; every other qkv
// element and every other cache element (the other layer, the other positions) untouched; and bit
// for bit against rope + rope + kv_append.
TEST(LlmRopeKvAppend, MatchesRopeAndKvAppend) {
  const RopeKvCase cases[] = {
      {4, 4, 64, 1, 17, false, false, false},  {4, 4, 128, 7, 100, true, false, true},
      {4, 4, 64, 300, 5, true, false, false},  {8, 2, 128, 1, 399, true, false, false},
      {8, 2, 128, 7, 300, false, true, false}, {8, 2, 64, 300, 50, false, false, false},
      {8, 1, 64, 7, 33, true, true, true},     {8, 1, 128, 300, 1, false, false, false},
      {8, 1, 64, 1, 0, false, false, false},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(testing::Message() << "nh=" << c.nh << " nkv=" << c.nkv << " hd=" << c.hd << " n=" << c.n
                                    << " pos0=" << c.pos0 << " interleaved=" << c.interleaved
                                    << " buffer=" << c.from_buffer << " v_before_k=" << c.v_before_k);
    const int hd = c.hd, n = c.n, max_ctx = c.pos0 + n + 3, max_pos = 400;
    const int64_t q_len = int64_t(c.nh) * hd, kv_len = int64_t(c.nkv) * hd;
    const int64_t q_off = 4, stride = q_off + q_len + 2 * kv_len + 12;  // gaps before and after the heads
    const int64_t k_off = c.v_before_k ? q_off + q_len + kv_len : q_off + q_len;
    const int64_t v_off = c.v_before_k ? q_off + q_len : q_off + q_len + kv_len;
    auto inv64 = inv_freq(hd, 500000, true);
    auto table = make_rope_table(ctx(), inv64, hd, max_pos);
    auto inv = as_float(inv64);
    auto xv = test::random_floats(size_t(n * stride), uint32_t(n * hd + c.nkv), -2.f, 2.f);
    std::vector<int> pos(static_cast<size_t>(n));
    std::vector<uint32_t> upos(static_cast<size_t>(n));
    for (int t = 0; t < n; ++t)
      pos[size_t(t)] = int(upos[size_t(t)] = c.from_buffer ? uint32_t((t * 37 + 11) % max_pos) : uint32_t(c.pos0 + t));
    auto pt = make_tensor(ctx(), {n}, DType::U32, std::as_bytes(std::span(upos)));

    // fused, on a poisoned two-layer cache (layer 1, so the layer offset is not 0)
    auto qkv = make_tensor(ctx(), {int64_t(xv.size())}, xv);
    auto cache = make_kv_cache(ctx(), 2, c.nkv, max_ctx, hd);
    fill_u32(ctx(), cache.k, kPoisonNaN);
    fill_u32(ctx(), cache.v, kPoisonNaN);
    RopeKvArgs a;
    a.n_tokens = n;
    a.n_heads = c.nh;
    a.stride = stride;
    a.q_offset = q_off;
    a.k_offset = c.v_before_k ? k_off : -1;  // the defaults where q|k|v are back to back
    a.v_offset = c.v_before_k ? v_off : -1;
    a.pos0 = c.pos0;
    if (c.from_buffer) a.positions = pt;
    a.interleaved = c.interleaved;
    Batch b(ctx());
    ops().rope_kv_append(b, qkv, table, cache.layer(1), a);
    b.run();
    auto got = download<float>(ctx(), qkv);
    auto kc = download<float>(ctx(), cache.k), vc = download<float>(ctx(), cache.v);

    // the parts, unfused, on a copy of the input and a second poisoned cache
    auto qkv2 = make_tensor(ctx(), {int64_t(xv.size())}, xv);
    auto cache2 = make_kv_cache(ctx(), 2, c.nkv, max_ctx, hd);
    fill_u32(ctx(), cache2.k, kPoisonNaN);
    fill_u32(ctx(), cache2.v, kPoisonNaN);
    RopeArgs ra;
    ra.n_tokens = n;
    ra.n_heads = c.nh;
    ra.stride = stride;
    ra.offset = q_off;
    ra.pos0 = c.pos0;
    if (c.from_buffer) ra.positions = pt;
    ra.interleaved = c.interleaved;
    Batch b2(ctx());
    ops().rope(b2, qkv2, table, ra);
    ra.n_heads = c.nkv;
    ra.offset = k_off;
    ops().rope(b2, qkv2, table, ra);
    ops().kv_append(b2, cache2.layer(1), qkv2, k_off, qkv2, v_off, stride, c.pos0, n);
    b2.run();
    auto got2 = download<float>(ctx(), qkv2);
    EXPECT_EQ(bit_differences(cache.k, cache2.k), 0u) << "k cache differs from rope + kv_append";
    EXPECT_EQ(bit_differences(cache.v, cache2.v), 0u) << "v cache differs from kv_append";
    EXPECT_EQ(0, std::memcmp(heads_of(got, n, stride, q_off, c.nh, hd).data(),
                             heads_of(got2, n, stride, q_off, c.nh, hd).data(), size_t(n * q_len) * 4))
        << "query heads differ from rope";

    // qkv: the query heads as ref::rope says, everything else bit for bit the input
    auto q = heads_of(xv, n, stride, q_off, c.nh, hd);
    ref::rope(q, n, c.nh, hd, pos, inv, c.interleaved);
    EXPECT_LE(test::rel_error(heads_of(got, n, stride, q_off, c.nh, hd), q), 1e-6);
    size_t changed = 0;
    for (int t = 0; t < n; ++t)
      for (int64_t e = 0; e < stride; ++e)
        if (e < q_off || e >= q_off + q_len)
          changed += std::memcmp(&got[size_t(t * stride + e)], &xv[size_t(t * stride + e)], 4) != 0;
    EXPECT_EQ(changed, 0u) << "qkv elements outside the query heads changed";

    // the cache: rotated keys and copied values at pos0 + t of layer 1, poison everywhere else
    auto k = heads_of(xv, n, stride, k_off, c.nkv, hd);
    auto v = heads_of(xv, n, stride, v_off, c.nkv, hd);
    ref::rope(k, n, c.nkv, hd, pos, inv, c.interleaved);
    const size_t layer = size_t(kv_len) * size_t(max_ctx);
    std::vector<float> gk, gv;
    for (int t = 0; t < n; ++t)
      for (int h = 0; h < c.nkv; ++h)
        for (int d = 0; d < hd; ++d) {
          size_t at = layer + size_t((h * max_ctx + c.pos0 + t) * hd + d);
          gk.push_back(kc[at]);
          gv.push_back(vc[at]);
        }
    EXPECT_LE(test::rel_error(gk, k), 1e-6);
    EXPECT_EQ(0, std::memcmp(gv.data(), v.data(), v.size() * 4)) << "values not copied exactly";
    auto written = [&](size_t e) {  // layer 1, position pos0 .. pos0 + n - 1
      const int p = int(e / size_t(hd) % size_t(max_ctx));
      return e >= layer && p >= c.pos0 && p < c.pos0 + n;
    };
    size_t unpoisoned = 0;
    auto kb = bits(cache.k), vb = bits(cache.v);
    for (size_t e = 0; e < kb.size(); ++e)
      if (!written(e)) unpoisoned += size_t(kb[e] != kPoisonNaN) + size_t(vb[e] != kPoisonNaN);
    EXPECT_EQ(unpoisoned, 0u) << "cache elements outside positions pos0 .. pos0 + n - 1 of layer 1 written";
  }
}

TEST(LlmRopeKvAppend, BadSizesAreErrors) {
  const int nh = 4, nkv = 2, hd = 8, row = (nh + 2 * nkv) * hd;
  auto table = make_rope_table(ctx(), inv_freq(hd), hd, 16);
  auto cache = make_kv_cache(ctx(), 1, nkv, 8, hd);
  auto qkv = make_tensor(ctx(), {3 * row});
  auto run = [&](RopeKvArgs a, const RopeTable& t, const KvLayer& l) {
    Batch b(ctx());
    ops().rope_kv_append(b, qkv, t, l, a);
  };
  RopeKvArgs ok;
  ok.n_tokens = 3;
  ok.n_heads = nh;
  ok.pos0 = 5;
  EXPECT_NO_THROW(run(ok, table, cache.layer(0)));
  auto a = ok;
  a.pos0 = 6;  // past max_ctx 8
  EXPECT_THROW(run(a, table, cache.layer(0)), Error);
  a = ok;
  a.n_tokens = 4;  // qkv holds 3 rows
  a.pos0 = 0;
  EXPECT_THROW(run(a, table, cache.layer(0)), Error);
  a = ok;
  a.k_offset = hd;  // keys inside the query heads
  EXPECT_THROW(run(a, table, cache.layer(0)), Error);
  a = ok;
  a.stride = row - 1;  // values past the stride
  EXPECT_THROW(run(a, table, cache.layer(0)), Error);
  EXPECT_THROW(run(ok, make_rope_table(ctx(), inv_freq(hd), hd, 7), cache.layer(0)),
               Error);  // positions past the table
  EXPECT_THROW(run(ok, make_rope_table(ctx(), inv_freq(2 * hd), 2 * hd, 16), cache.layer(0)),
               Error);  // head_dim differs
  try {
    a = ok;
    a.pos0 = 6;
    run(a, table, cache.layer(0));
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("rope_kv_append"), std::string::npos) << e.what();
  }
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

// At sizes around topk.wgsl's 256 invocations and 2,048 entries per workgroup, with a NaN (which
// must not win: at 512, 800, 1000 and 1024 entries it did on SwiftShader while select_order.wgsl
// told NaN by x != x), equal maxima in one workgroup and in two.
TEST(LlmSelect, ArgmaxOverAVocabulary) {
  for (int n : {128256, 1, 2049, 300, 1025, 1024, 1020, 1000, 800, 513, 512}) {
    auto v = test::random_floats(size_t(n), uint32_t(n), -20.f, 20.f);
    uint32_t want = ref::argmax(v);
    if (n > 10) {
      v[size_t(n - 3)] = 30.f;  // two equal maxima: the first wins
      v[size_t(n - 1)] = 30.f;
      v[5] = NAN;
      want = uint32_t(n - 3);
      if (n > 2048) {  // and an equal one in an earlier workgroup
        v[1030] = 30.f;
        want = 1030;
      }
    }
    auto x = make_tensor(ctx(), {n}, v);
    auto out = test::poisoned(1, DType::U32);
    Batch b(ctx());
    ops().argmax(b, x, n, out);
    b.run();
    EXPECT_EQ(download<uint32_t>(ctx(), out)[0], want) << n;
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

// Several rows at once (the serving engine's per-sequence argmax / top-k), and each row's
// log-sum-exp (log probabilities), against the references.
TEST(LlmSelect, TopKRowsAndLogSumExp) {
  for (auto [n, k] : std::vector<std::pair<int, int>>{{5000, 7}, {100, 1}, {4100, 64}}) {
    const int rows = 3;
    auto v = test::random_floats(size_t(rows * n), uint32_t(n + k), -20.f, 20.f);
    for (int i = 0; i < rows * n; i += 89) v[size_t(i)] = 19.5f;  // ties: lower ids first
    auto x = make_tensor(ctx(), {int64_t(v.size())}, v);
    auto ov = test::poisoned(rows * k), oi = test::poisoned(rows * k, DType::U32), lse = test::poisoned(rows);
    Batch b(ctx());
    ops().topk_rows(b, x, rows, n, k, ov, oi);
    ops().row_logsumexp(b, x, rows, n, lse);
    b.run();
    auto gv = download<float>(ctx(), ov);
    auto gi = download<uint32_t>(ctx(), oi);
    auto gl = download<float>(ctx(), lse);
    for (int r = 0; r < rows; ++r) {
      std::vector<float> row(v.begin() + long(r) * n, v.begin() + long(r + 1) * n);
      auto want = ref::topk(row, k);
      for (int i = 0; i < k; ++i) {
        EXPECT_EQ(gv[size_t(r * k + i)], want[size_t(i)].first) << n << " row " << r << " #" << i;
        EXPECT_EQ(gi[size_t(r * k + i)], want[size_t(i)].second) << n << " row " << r << " #" << i;
      }
      double mx = want[0].first, s = 0;
      for (float f : row) s += std::exp(double(f) - mx);
      EXPECT_NEAR(gl[size_t(r)], mx + std::log(s), 1e-5 * std::fabs(mx) + 1e-5) << n << " row " << r;
    }
  }
}
