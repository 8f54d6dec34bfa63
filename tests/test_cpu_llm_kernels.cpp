// The CPU LLM kernels (src/cpu/llm) of every level this processor runs, against the f64 references
// of src/cpu/llm/llm_ref at awkward sizes (rows not a multiple of the 8-row tiles, float rows with a
// tail, token counts across the token blocks), outputs poisoned first; batch invariance (a token
// alone gives the bits it gives among others, whatever the row split); and the levels against
// each other.
#include "cpu/llm/kernels.h"
#include "cpu/llm/llm_ref.h"
#include "cpu/llm/q8_buffer.h"
#include "cpu/llm/thread_pool.h"
#include "test_util.h"

#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>

using namespace wgc;
using namespace wgc::llm;
using namespace wgc::llm::cpu;

namespace {

const auto& kTypes = kCpuKernelTypes;

std::string label(Isa isa, TensorType t, int64_t rows, int64_t cols, int64_t n) {
  return std::string(to_string(isa)) + " " + std::string(llm::to_string(t)) + " " + std::to_string(rows) + "x" +
         std::to_string(cols) + " n=" + std::to_string(n);
}

struct Problem {
  TensorType type;
  int64_t rows, cols, n;
  std::vector<std::byte> bytes;
  std::vector<float> x;
  Q8Buffer xq;

  Problem(TensorType t, int64_t r, int64_t c, int64_t tokens, uint32_t seed) : type(t), rows(r), cols(c), n(tokens) {
    bytes = ref::random_weight(t, rows, cols, seed);
    x = test::random_floats(size_t(n * cols), seed + 1, -2.f, 2.f);
    if (takes_q8(t)) {
      xq.resize(n, cols);
      kernels(Isa::Portable).quantize(x.data(), cols, 0, n, xq.rows());
    }
  }
  Weight weight() const { return {type, bytes.data(), rows, cols, int64_t(bytes.size()) / rows}; }
  // y = W x in f64 from the dequantized weights and (for quantized types) the dequantized
  // activations the kernels see.
  std::vector<float> reference() const {
    std::vector<double> w = ref::dequantize(type, bytes, rows, cols);
    std::vector<float> xs = x;
    if (takes_q8(type))
      for (int64_t i = 0; i < n * cols; ++i) xs[size_t(i)] = float(xq.q[size_t(i)]) * xq.d[size_t(i / 32)];
    auto y = ref::linear(w, cols, xs, int(n), 0, rows);
    return {y.begin(), y.end()};
  }
  // The kernel's y, rows computed in chunks of `chunk` (like the engine's threads), from w (default:
  // the rows as stored).
  std::vector<float> run(const Kernels& k, int64_t chunk, std::vector<float> y, bool accumulate,
                         const Weight* w = nullptr) {
    LinearIo io;
    io.x = x.data();
    io.x_stride = cols;
    if (takes_q8(type)) io.xq = xq.rows();
    io.n = n;
    io.y = y.data();
    io.y_stride = rows;
    io.accumulate = accumulate;
    std::vector<std::byte> scratch(size_t(k.linear_scratch(cols)) + 64);
    void* s = reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(scratch.data()) + 63) & ~uintptr_t(63));
    const Weight stored = weight();
    for (int64_t r = 0; r < rows; r += chunk) k.linear(w ? *w : stored, io, r, std::min(rows, r + chunk), s);
    return y;
  }
};

std::vector<float> poison(size_t n) { return std::vector<float>(n, std::numeric_limits<float>::quiet_NaN()); }

double tolerance(TensorType t) {
  // f32 accumulation of up to ~600 terms (and, for the quantized types, f32 block scales).
  return t == TensorType::F32 || t == TensorType::F16 || t == TensorType::BF16 ? 2e-6 : 1e-5;
}

}  // namespace

TEST(CpuLlmKernels, LevelsOfThisProcessor) {
  // Portable always runs; the x86 levels where the processor has them (forced off by nothing).
  auto isas = supported_isas();
  ASSERT_FALSE(isas.empty());
  EXPECT_EQ(isas[0], Isa::Portable);
  EXPECT_NO_THROW(kernels(default_isa()));
  EXPECT_FALSE(describe_cpu().empty());
  std::printf("levels:");
  for (Isa i : isas) std::printf(" %s", std::string(to_string(i)).c_str());
  std::printf(" (%s)\n", describe_cpu().c_str());
  EXPECT_THROW(parse_isa("sse9"), Error);
}

TEST(CpuLlmKernels, LinearMatchesReference) {
  for (Isa isa : supported_isas()) {
    const Kernels& k = kernels(isa);
    for (TensorType t : kTypes) {
      const int64_t block = int64_t(block_size(t));
      const int64_t cols = block == 1 ? 77 : block == 32 ? 96 : 512;
      for (int64_t n : {1, 3, 70}) {
        Problem p(t, 37, cols, n, uint32_t(n * 100 + int(t)));
        const auto want = p.reference();
        const auto got = p.run(k, 16, poison(size_t(n * p.rows)), false);
        EXPECT_LT(test::rel_error(got, want), tolerance(t)) << label(isa, t, p.rows, cols, n);
        // Accumulating adds to what is there.
        std::vector<float> base = test::random_floats(size_t(n * p.rows), 7);
        const auto acc = p.run(k, 16, base, true);
        std::vector<float> want_acc(want.size());
        for (size_t i = 0; i < want.size(); ++i) want_acc[i] = want[i] + base[i];
        EXPECT_LT(test::rel_error(acc, want_acc), 4 * tolerance(t)) << label(isa, t, p.rows, cols, n) << " accumulate";
      }
    }
  }
}

TEST(CpuLlmKernels, FloatRowsOfAnyLength) {
  for (Isa isa : supported_isas())
    for (TensorType t : {TensorType::F32, TensorType::F16, TensorType::BF16})
      for (int64_t cols : {1, 7, 8, 9, 31, 64, 130}) {
        Problem p(t, 11, cols, 4, uint32_t(cols));
        EXPECT_LT(test::rel_error(p.run(kernels(isa), 8, poison(size_t(4 * 11)), false), p.reference()), 2e-6)
            << label(isa, t, 11, cols, 4);
      }
}

// A token's outputs are the same bits alone, among 70 tokens, and whatever the row chunks.
TEST(CpuLlmKernels, BatchInvariant) {
  for (Isa isa : supported_isas()) {
    const Kernels& k = kernels(isa);
    for (TensorType t : kTypes) {
      const int64_t cols = int64_t(block_size(t)) == 256 ? 768 : 200 + (int64_t(block_size(t)) == 1 ? 5 : 24);
      Problem all(t, 29, cols, 70, 11);
      const auto y_all = all.run(k, 29, poison(size_t(70 * 29)), false);
      const auto y_split = all.run(k, 8, poison(size_t(70 * 29)), false);
      EXPECT_EQ(std::memcmp(y_all.data(), y_split.data(), y_all.size() * 4), 0) << label(isa, t, 29, cols, 70);
      for (int64_t tok : {0, 1, 33, 64, 69}) {
        Problem one(t, 29, cols, 1, 11);
        one.x.assign(all.x.begin() + tok * cols, all.x.begin() + (tok + 1) * cols);
        if (takes_q8(t)) k.quantize(one.x.data(), cols, 0, 1, one.xq.rows());
        const auto y1 = one.run(k, 13, poison(29), false);
        EXPECT_EQ(std::memcmp(y1.data(), y_all.data() + tok * 29, 29 * 4), 0)
            << label(isa, t, 29, cols, 70) << " token " << tok;
      }
    }
  }
}

// Every level quantizes activations to the same bytes (the portable definition).
TEST(CpuLlmKernels, QuantizeIsTheSameOnEveryLevel) {
  const int64_t n = 5, k = 160;
  auto x = test::random_floats(size_t(n * k), 3, -3.f, 3.f);
  for (int i = 0; i < 32; ++i) x[size_t(32 + i)] = 0;  // an all-zero block: d = 0
  x[100] = 1e-30f;
  Q8Buffer want;
  want.resize(n, k);
  kernels(Isa::Portable).quantize(x.data(), k, 0, n, want.rows());
  // The portable result against the definition.
  for (int64_t b = 0; b < n * k / 32; ++b) {
    float amax = 0;
    for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[size_t(b * 32 + i)]));
    ASSERT_EQ(want.d[size_t(b)], amax / 127.f);
    for (int i = 0; i < 32; ++i) {
      const float q = want.d[size_t(b)] > 0 ? std::nearbyint(x[size_t(b * 32 + i)] / want.d[size_t(b)]) : 0.f;
      ASSERT_LE(std::fabs(q - float(want.q[size_t(b * 32 + i)])), 1.f) << b << " " << i;
    }
    for (int h = 0; h < 2; ++h) {
      int s = 0;
      for (int i = 0; i < 16; ++i) s += want.q[size_t(b * 32 + h * 16 + i)];
      ASSERT_EQ(want.s[size_t(2 * b + h)], s);
    }
  }
  for (Isa isa : supported_isas()) {
    Q8Buffer got;
    got.resize(n, k);
    std::fill(got.q.begin(), got.q.end(), int8_t(99));
    kernels(isa).quantize(x.data(), k, 0, n, got.rows());
    EXPECT_EQ(got.q, want.q) << to_string(isa);
    EXPECT_EQ(got.d, want.d) << to_string(isa);
    EXPECT_EQ(got.s, want.s) << to_string(isa);
  }
}

TEST(CpuLlmKernels, LevelsAgree) {
  for (TensorType t : kTypes) {
    Problem p(t, 19, int64_t(block_size(t)) == 256 ? 256 : 160, 6, 5);
    const auto base = p.run(kernels(Isa::Portable), 19, poison(size_t(6 * 19)), false);
    for (Isa isa : supported_isas())
      EXPECT_LT(test::rel_error(p.run(kernels(isa), 19, poison(size_t(6 * 19)), false), base), 1e-5)
          << to_string(isa) << " " << llm::to_string(t);
  }
}

// Long rows (the avx512 level unpacks 32 blocks at a time) and token counts past its blocks of
// 64 and groups of 4, rows not a multiple of its 16-row tiles; every level against the reference,
// and the quantized types bit for bit the same on every SIMD level (the same exact block sums and
// float steps, kernels.h).
TEST(CpuLlmKernels, LongRowsAndManyTokens) {
  const std::vector<Isa> isas = supported_isas();
  for (TensorType t : kTypes) {
    if (!takes_q8(t) && t != TensorType::F16) continue;
    const int64_t cols = int64_t(block_size(t)) == 256 ? 1280 : 1120 + (t == TensorType::F16 ? 9 : 0);
    for (int64_t n : {1, 7, 67}) {
      Problem p(t, 21, cols, n, uint32_t(n + 31 * int(t)));
      const auto want = p.reference();
      std::vector<float> simd;
      for (Isa isa : isas) {
        const auto got = p.run(kernels(isa), 21, poison(size_t(n * p.rows)), false);
        EXPECT_LT(test::rel_error(got, want), 2 * tolerance(t)) << label(isa, t, p.rows, cols, n);
        if (isa == Isa::Portable || !takes_q8(t)) continue;
        if (simd.empty())
          simd = got;
        else
          EXPECT_EQ(std::memcmp(got.data(), simd.data(), simd.size() * 4), 0) << label(isa, t, p.rows, cols, n);
      }
    }
  }
}

// Load-time repacking (Kernels::pack, the levels that have it): the packed copy is as big as the
// whole row groups it covers, and linear gives the same bits from it as from the rows as stored,
// for one token and many, row chunks on and off the groups, rows past the last whole group; the
// other levels ignore a copy that is not theirs.
TEST(CpuLlmKernels, PackedWeightsGiveTheSameBits) {
  int packed_levels = 0;
  for (Isa isa : supported_isas()) {
    const Kernels& k = kernels(isa);
    for (TensorType t : kTypes) {
      const int64_t cols = int64_t(block_size(t)) == 256 ? 768 : int64_t(block_size(t)) == 32 ? 320 : 40;
      Problem p(t, 37, cols, 70, uint32_t(7 + int(t)));
      const Weight stored = p.weight();
      PackedWeight pw = pack_weight(k, stored);
      if (!pw.bytes) {
        EXPECT_EQ(pw.weight.packed, nullptr);
        continue;
      }
      ++packed_levels;
      EXPECT_TRUE(takes_q8(t)) << label(isa, t, 37, cols, 70);
      EXPECT_EQ(pw.size, 37 / k.tile_rows * k.tile_rows * stored.row_bytes) << label(isa, t, 37, cols, 70);
      EXPECT_EQ(pw.weight.packed_isa, isa);
      for (int64_t chunk : {int64_t(k.tile_rows) * 2, int64_t(13), int64_t(37)}) {
        const auto want = p.run(k, chunk, poison(size_t(70 * 37)), false);
        const auto got = p.run(k, chunk, poison(size_t(70 * 37)), false, &pw.weight);
        EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size() * 4), 0)
            << label(isa, t, 37, cols, 70) << " chunk " << chunk;
        Problem one(t, 37, cols, 1, 11);
        one.bytes = p.bytes;
        const auto want1 = one.run(k, chunk, poison(37), true);
        Weight w1 = pw.weight;
        w1.data = one.bytes.data();
        const auto got1 = one.run(k, chunk, poison(37), true, &w1);
        EXPECT_EQ(std::memcmp(got1.data(), want1.data(), 37 * 4), 0)
            << label(isa, t, 37, cols, 1) << " chunk " << chunk;
      }
      // The copy is what the level reads: whole row groups come out the same with other bytes in
      // their place in `data` (row chunks on the groups; the rows past them are read from data).
      {
        const int64_t whole = 37 / k.tile_rows * k.tile_rows;
        std::vector<std::byte> other = ref::random_weight(t, 37, cols, 99);
        std::memcpy(other.data() + whole * stored.row_bytes, p.bytes.data() + whole * stored.row_bytes,
                    size_t((37 - whole) * stored.row_bytes));
        Weight w = pw.weight;
        w.data = other.data();
        const auto want = p.run(k, 37, poison(size_t(70 * 37)), false);
        EXPECT_EQ(std::memcmp(p.run(k, 2 * k.tile_rows, poison(size_t(70 * 37)), false, &w).data(), want.data(),
                              want.size() * 4),
                  0)
            << label(isa, t, 37, cols, 70) << " reads the packed copy";
      }
      // Another level reads the rows as stored, whatever copy is attached.
      for (Isa other : supported_isas()) {
        if (other == isa) continue;
        const auto want = p.run(kernels(other), 37, poison(size_t(70 * 37)), false);
        const auto got = p.run(kernels(other), 37, poison(size_t(70 * 37)), false, &pw.weight);
        EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size() * 4), 0) << label(other, t, 37, cols, 70);
      }
    }
  }
  std::printf("levels x types packed: %d\n", packed_levels);
}

TEST(CpuLlmKernels, AttendOverPagedBlocks) {
  const int hd = 40, block = 4;
  for (Isa isa : supported_isas())
    for (int64_t len : {1, 5, 9, 23}) {
      // Positions scattered over blocks of 4 slots; slots hold [kv heads = 2][hd] rows.
      std::vector<int32_t> blocks;
      for (int64_t b = 0; b * block < len; ++b) blocks.push_back(int32_t((b * 3 + 1) % 7));
      const int64_t stride = 2 * hd;
      auto kc = test::random_floats(size_t(7 * block * stride), 1),
           vc = test::random_floats(size_t(7 * block * stride), 2);
      auto q = test::random_floats(hd, uint32_t(len), -3.f, 3.f);
      std::vector<float> scores(static_cast<size_t>(len)), out(hd, std::numeric_limits<float>::quiet_NaN());
      AttendArgs a;
      a.q = q.data();
      a.head_dim = hd;
      a.scale = 0.3f;
      a.k = kc.data() + hd;  // kv head 1
      a.v = vc.data() + hd;
      a.kv_stride = stride;
      a.blocks = blocks.data();
      a.block = block;
      a.len = len;
      a.scores = scores.data();
      a.out = out.data();
      kernels(isa).attend(a);
      // The reference on the gathered keys and values (one head, kv head = 0 of one).
      std::vector<float> ks, vs;
      for (int64_t j = 0; j < len; ++j) {
        const int64_t slot = int64_t(blocks[size_t(j / block)]) * block + j % block;
        ks.insert(ks.end(), a.k + slot * stride, a.k + slot * stride + hd);
        vs.insert(vs.end(), a.v + slot * stride, a.v + slot * stride + hd);
      }
      auto want = ref::attention(q, ks, vs, 1, 1, 1, hd, int(len - 1), 0.3f);
      EXPECT_LT(test::rel_error(out, want), 2e-6) << to_string(isa) << " len " << len;
    }
}

TEST(CpuLlmKernels, SwiGlu) {
  for (Isa isa : supported_isas())
    for (int64_t n : {1, 8, 13, 100}) {
      auto g = test::random_floats(size_t(n), 1, -30.f, 30.f), u = test::random_floats(size_t(n), 2);
      g[0] = -100.f;  // exp(100) must not make a NaN
      std::vector<float> out(size_t(n), std::numeric_limits<float>::quiet_NaN());
      kernels(isa).swiglu(g.data(), u.data(), out.data(), n);
      EXPECT_LT(test::rel_error(out, ref::swiglu(g, u)), 1e-6) << to_string(isa) << " n " << n;
    }
}

TEST(CpuLlmKernels, ThreadPoolRunsEveryIndexOnce) {
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.size(), threads);
    for (int64_t n : {0, 1, 5, 1000}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      std::atomic<int> bad_thread{0};
      pool.parallel_for(n, [&](int64_t i, int th) {
        hits[size_t(i)].fetch_add(1);
        if (th < 0 || th >= threads) bad_thread.fetch_add(1);
      });
      for (auto& h : hits) ASSERT_EQ(h.load(), 1);
      EXPECT_EQ(bad_thread.load(), 0);
    }
    // An exception reaches the caller; the pool keeps working afterwards.
    EXPECT_THROW(pool.parallel_for(50,
                                   [](int64_t i, int) {
                                     if (i == 17) throw Error("seventeen");
                                   }),
                 Error);
    std::atomic<int64_t> sum{0};
    pool.parallel_for(100, [&](int64_t i, int) { sum += i; });
    EXPECT_EQ(sum.load(), 4950);
  }
}
