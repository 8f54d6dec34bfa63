// The serving engine's linear kernels (linear_batched.wgsl, linear_batched_q8.wgsl and its
// small-step and RoPE forms): against the reference, and batch-invariant bit for bit.
#include "llm/formats/model_config.h"
#include "test_llm_util.h"

#include <array>
#include <cmath>
#include <cstring>

using namespace wgc;
using namespace wgc::llm;
using wgc::test::ctx;
using wgc::test::ops;

// The serving kernel's results do not depend on the batch: a token alone, among others, at any
// place in the batch, with any token tile, gives bit-identical outputs (with a row range, bias and
// accumulation on top).
TEST(LlmLinear, BatchedIsBatchInvariant) {
  for (auto t : kGpuTensorTypes) {
    const int64_t rows = 45, cols = int64_t(block_size(t)) == 256 ? 512 : int64_t(block_size(t)) == 32 ? 608 : 203;
    auto bytes = ref::random_weight(t, rows + 7, cols, 31);
    auto w = upload_weight(ctx(), t, bytes, rows + 7, cols);
    const int n = 21;
    auto xv = test::random_floats(size_t(n * cols), 32);
    auto x = make_tensor(ctx(), {int64_t(xv.size())}, xv);
    auto bias = make_tensor(ctx(), {rows + 7}, test::random_floats(size_t(rows + 7), 33));
    auto y0v = test::random_floats(size_t(n * rows), 34);
    // Tokens [first, first + count) of x, as a batch of their own, into rows [first, ...) of y.
    auto run = [&](LlmOps& o, int first, int count) {
      auto y = make_tensor(ctx(), {int64_t(y0v.size())}, y0v);
      auto xs = make_tensor(ctx(), {int64_t(count) * cols},
                            std::span<const float>(xv).subspan(size_t(first) * size_t(cols), size_t(count * cols)));
      LinearOptions lo;
      lo.row0 = 7;
      lo.rows = rows;
      lo.bias = bias;
      lo.accumulate = true;
      Batch b(ctx());
      auto yv = test::poisoned(int64_t(count) * rows);
      b.copy(y, uint64_t(first) * uint64_t(rows) * 4, yv, 0, uint64_t(count) * uint64_t(rows) * 4);
      o.linear(b, w, xs, yv, count, lo, LinearVersion::Batched);
      b.run();
      return download<float>(ctx(), yv);
    };
    LlmOps& o = ops();
    auto all = run(o, 0, n);
    auto deq = ref::dequantize(t, bytes, rows + 7, cols);
    auto r = ref::linear(deq, cols, xv, n, 7, rows);
    std::vector<float> want(r.size());
    auto bv = download<float>(ctx(), bias);
    for (size_t i = 0; i < r.size(); ++i) want[i] = float(r[i] + bv[7 + i % size_t(rows)] + y0v[i]);
    EXPECT_LE(test::rel_error(all, want), 1e-5) << to_string(t);
    auto same = [&](const std::vector<float>& got, int first, const std::string& what) {
      ASSERT_EQ(std::memcmp(got.data(), all.data() + size_t(first) * size_t(rows), got.size() * 4), 0)
          << to_string(t) << " " << what;
    };
    for (int i : {0, n - 1}) same(run(o, i, 1), i, "token " + std::to_string(i) + " alone");
    same(run(o, 3, 9), 3, "tokens 3..11");
    for (uint32_t tt : {2u, 32u}) {
      LlmOps other(ctx());
      other.tuning.batched_tt = tt;
      same(run(other, 0, n), 0, "token tile " + std::to_string(tt));
      same(run(other, 2, 4), 2, "token tile " + std::to_string(tt) + ", 4 tokens");
    }
  }
}

// 8-bit activations (Q4_0 / Q8_0 weights): against the reference with x quantized the same way
// (per token and block of 32: d = max|x| / 127, q = round(x / d)) and, looser, the exact one; and
// batch-invariant like the f32 kernel.
TEST(LlmLinear, BatchedQ8MatchesReferenceAndIsBatchInvariant) {
  for (auto t : {TensorType::Q4_0, TensorType::Q8_0})
    for (auto [rows, cols] : {std::pair<int64_t, int64_t>{37, 96}, {45, 1088}}) {
      const struct { int64_t rows, cols; } s{rows, cols};
      auto bytes = ref::random_weight(t, s.rows, s.cols, 41);
      auto w = upload_weight(ctx(), t, bytes, s.rows, s.cols);
      auto deq = ref::dequantize(t, bytes, s.rows, s.cols);
      const int n = 19;
      auto xv = test::random_floats(size_t(n * s.cols), 42);
      for (int64_t i = 0; i < s.cols; ++i) xv[size_t(3 * s.cols + i)] = 0;  // an all-zero token
      auto xq = xv;                                                         // as the kernel quantizes it
      for (size_t b = 0; b < xq.size(); b += 32) {
        float amax = 0;
        for (size_t i = b; i < b + 32; ++i) amax = std::max(amax, std::fabs(xq[i]));
        const float d = amax / 127.0f, inv = d > 0 ? 1.0f / d : 0.0f;
        for (size_t i = b; i < b + 32; ++i) xq[i] = std::clamp(std::nearbyint(xq[i] * inv), -127.0f, 127.0f) * d;
      }
      auto x = make_tensor(ctx(), {int64_t(xv.size())}, xv);
      auto run = [&](const LlmOps& o, int first, int count) {
        auto xs =
            make_tensor(ctx(), {int64_t(count) * s.cols},
                        std::span<const float>(xv).subspan(size_t(first) * size_t(s.cols), size_t(count * s.cols)));
        auto y = test::poisoned(int64_t(count) * s.rows);
        Batch b(ctx());
        o.linear(b, w, xs, y, count, {}, LinearVersion::BatchedQ8);
        b.run();
        return download<float>(ctx(), y);
      };
      auto all = run(ops(), 0, n);
      const std::string what = std::string(to_string(t)) + " " + std::to_string(s.rows) + "x" + std::to_string(s.cols);
      const auto want_q = test::to_float(ref::linear(deq, s.cols, xq, n, 0, s.rows));
      EXPECT_LE(test::rel_error(all, want_q), 1e-3) << what;
      EXPECT_LE(test::rel_error(all, test::to_float(ref::linear(deq, s.cols, xv, n, 0, s.rows))), 3e-2) << what;
      const auto same = [&](const std::vector<float>& got, int first, const std::string& how) {
        ASSERT_EQ(std::memcmp(got.data(), all.data() + size_t(first) * size_t(s.rows), got.size() * 4), 0)
            << what << " " << how;
      };
      for (int i : {0, 3, n - 1}) same(run(ops(), i, 1), i, "token " + std::to_string(i) + " alone");
      same(run(ops(), 5, 3), 5, "tokens 5..7");
      // Token tiles change who computes an output, not how.
      for (uint32_t tt : {2u, 32u}) {
        LlmOps other(ctx());
        other.tuning.batched_tt = tt;
        const std::string how = "tt " + std::to_string(tt);
        same(run(other, 0, n), 0, how);
        same(run(other, 4, 6), 4, how + ", tokens 4..9");
      }
      // Small steps shaped like a matvec (linear_batched_q8_mv.wgsl; the default for steps of up to
      // 4 tokens, checked above), its schedules: row groups of 8 to 64 lanes (chunks of several
      // blocks, several per row here), up to 8 tokens: the same bits. Without it (batched_mv_n 0),
      // one token through linear_batched_q8.wgsl: the same bits too.
      for (uint32_t sl : {1u, 2u, 8u}) {
        LlmOps other(ctx());
        other.tuning.batched_mv_n = 8;
        other.tuning.batched_mv_sl = sl;
        const std::string how = "mv sl " + std::to_string(sl);
        same(run(other, 3, 1), 3, how + ", token 3 alone");
        same(run(other, 5, 3), 5, how + ", tokens 5..7");
        same(run(other, 4, 6), 4, how + ", tokens 4..9");
        same(run(other, 11, 8), 11, how + ", tokens 11..18");
      }
      {
        LlmOps other(ctx());
        other.tuning.batched_mv_n = 0;
        same(run(other, 3, 1), 3, "no mv kernel, token 3 alone");
      }
      // x quantized first (the serving engine's fused path): the same bits.
      {
        const int first = 2, count = 11;
        auto xs =
            make_tensor(ctx(), {int64_t(count) * s.cols},
                        std::span<const float>(xv).subspan(size_t(first) * size_t(s.cols), size_t(count * s.cols)));
        Q8Act q = make_q8_act(ctx(), count + 2, s.cols);
        auto y = test::poisoned(int64_t(count) * s.rows);
        Batch b(ctx());
        ops().quantize_q8(b, xs, q, count);
        ops().linear_batched_q8(b, w, q, y, count);
        b.run();
        same(download<float>(ctx(), y), first, "from quantize_q8");
      }
      // 32 lanes per row: another summation order, as close to the reference.
      LlmOps kl32(ctx());
      kl32.tuning.batched_kl = 32;
      EXPECT_LE(test::rel_error(run(kl32, 0, n), want_q), 1e-3) << what << " 32 lanes per row";
    }
  auto f16 = upload_weight(ctx(), TensorType::F16, ref::random_weight(TensorType::F16, 4, 32, 1), 4, 32);
  auto x = make_tensor(ctx(), {32}, test::random_floats(32, 1));
  auto y = test::poisoned(4);
  Batch b(ctx());
  EXPECT_THROW(ops().linear(b, f16, x, y, 1, {}, LinearVersion::BatchedQ8), Error);  // not for f16 weights
  EXPECT_THROW(ops().linear_batched_q8(b, f16, make_q8_act(ctx(), 1, 32), y, 1), Error);
  auto q8 = upload_weight(ctx(), TensorType::Q8_0, ref::random_weight(TensorType::Q8_0, 4, 32, 1), 4, 32);
  for (const char* bad : {"batched_mv_n=9", "batched_mv_sl=3", "batched_kl=3"}) {
    LlmOps bad_mv(ctx());
    apply_tuning(bad_mv.tuning, bad);
    EXPECT_THROW(bad_mv.linear(b, q8, x, y, 1, {}, LinearVersion::BatchedQ8), Error) << bad;
  }
}

// The QKV linear with RoPE and the KV append in its epilogue (the serving engine's fused path):
// the bits of linear_batched_q8 then rope_kv_append, in the output (queries rotated, keys and
// values as computed) and in the paged cache (every other slot left poisoned), with and without
// bias, interleaved pairs or not, one token (the small-step kernel: 2-row groups, whole pairs)
// and 9.
TEST(LlmLinear, BatchedQ8RopeEqualsLinearThenRopeKvAppend) {
  const int nh = 4, nkv = 2, hd = 16, cols = 96, slots = 48;
  const int64_t rows = (nh + 2 * nkv) * hd;
  ModelConfig mc;  // theta 10000, no scaling
  mc.head_dim = mc.rope_dim = hd;
  auto table = make_rope_table(ctx(), mc.rope_inv_freq(), hd, 64);
  for (auto t : {TensorType::Q4_0, TensorType::Q8_0})
    for (int n : {1, 9}) {
      auto w = upload_weight(ctx(), t, ref::random_weight(t, rows, cols, 43), rows, cols);
      auto bias = make_tensor(ctx(), {rows}, test::random_floats(size_t(rows), 44));
      std::vector<uint32_t> pos(size_t(2 * n));
      for (int i = 0; i < n; ++i) {
        pos[size_t(i)] = uint32_t(3 + 5 * i);                 // positions
        pos[size_t(n + i)] = uint32_t((i * 11 + 7) % slots);  // cache rows
      }
      auto pt = make_tensor(ctx(), {int64_t(pos.size())}, DType::U32, std::as_bytes(std::span(pos)));
      auto xs = make_tensor(ctx(), {int64_t(n) * cols}, test::random_floats(size_t(n * cols), 45));
      Q8Act xq = make_q8_act(ctx(), n, cols);
      {
        Batch b(ctx());
        ops().quantize_q8(b, xs, xq, n);
        b.run();
      }
      for (bool interleaved : {false, true})
        for (bool with_bias : {false, true}) {
          RopeKvArgs a;
          a.n_tokens = n;
          a.n_heads = nh;
          a.positions = pt;
          a.cache_rows = true;
          a.interleaved = interleaved;
          LinearOptions o;
          if (with_bias) o.bias = bias;
          LlmOps& small = ops();
          auto run = [&](bool fused) {
            KvCache cache = make_kv_cache(ctx(), 1, nkv, slots, hd);
            fill_u32(ctx(), cache.k, kPoisonNaN);
            fill_u32(ctx(), cache.v, kPoisonNaN);
            auto y = test::poisoned(int64_t(n) * rows);
            Batch b(ctx());
            if (fused) {
              small.linear_batched_q8_rope(b, w, xq, y, n, table, cache.layer(0), a, o.bias);
            } else {
              small.linear_batched_q8(b, w, xq, y, n, o);
              small.rope_kv_append(b, y, table, cache.layer(0), a);
            }
            b.run();
            return std::array<std::vector<uint32_t>, 3>{
                download<uint32_t>(ctx(), y), download<uint32_t>(ctx(), cache.k), download<uint32_t>(ctx(), cache.v)};
          };
          const auto want = run(false), got = run(true);
          const std::string what = std::string(to_string(t)) + " n " + std::to_string(n) +
                                   (interleaved ? " interleaved" : "") + (with_bias ? " bias" : "");
          EXPECT_EQ(got[0], want[0]) << what << ": q|k|v";
          EXPECT_EQ(got[1], want[1]) << what << ": k cache";
          EXPECT_EQ(got[2], want[2]) << what << ": v cache";
        }
    }
  // A weight whose rows are not the heads', and a RoPE table of another head size.
  auto w =
      upload_weight(ctx(), TensorType::Q8_0, ref::random_weight(TensorType::Q8_0, rows - 2, cols, 1), rows - 2, cols);
  KvCache cache = make_kv_cache(ctx(), 1, nkv, slots, hd);
  Q8Act xq = make_q8_act(ctx(), 2, cols);
  auto y = test::poisoned(2 * rows);
  RopeKvArgs a;
  a.n_tokens = 2;
  a.n_heads = nh;
  Batch b(ctx());
  EXPECT_THROW(ops().linear_batched_q8_rope(b, w, xq, y, 2, table, cache.layer(0), a), Error);
  auto w2 = upload_weight(ctx(), TensorType::Q8_0, ref::random_weight(TensorType::Q8_0, rows, cols, 1), rows, cols);
  ModelConfig m8;
  m8.head_dim = m8.rope_dim = 8;
  auto table8 = make_rope_table(ctx(), m8.rope_inv_freq(), 8, 64);
  EXPECT_THROW(ops().linear_batched_q8_rope(b, w2, xq, y, 2, table8, cache.layer(0), a), Error);
  ops().linear_batched_q8_rope(b, w2, xq, y, 2, table, cache.layer(0), a);  // the right one
}
