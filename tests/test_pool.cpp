// Pooling against the CPU reference at awkward shapes (padding, ceil mode, dilation,
// count_include_pad), outputs poisoned first; a hand-checked case pins the CPU reference.
#include "cpu/conv.h"
#include "ops/pool.h"
#include "test_util.h"

#include <limits>

using namespace wgc;
using wgc::test::ctx;

namespace {

Pool2dDims pool(uint32_t n, uint32_t c, uint32_t h, uint32_t w, uint32_t k, uint32_t s, uint32_t pt, uint32_t pl,
                uint32_t pb, uint32_t pr, bool ceil, bool incl, uint32_t dil = 1) {
  Pool2dDims d;
  d.n = n, d.c = c, d.h = h, d.w = w, d.kh = d.kw = k, d.stride_h = d.stride_w = s;
  d.pad_top = pt, d.pad_left = pl, d.pad_bottom = pb, d.pad_right = pr, d.ceil_mode = ceil;
  d.count_include_pad = incl, d.dil_h = d.dil_w = dil;
  return d;
}

const Pool2dDims kCases[] = {
    pool(2, 3, 9, 11, 3, 2, 1, 1, 1, 1, false, false),     // ResNet's stem max pool, odd sizes
    pool(1, 5, 10, 7, 3, 2, 0, 0, 0, 0, true, false),      // ceil mode (SqueezeNet)
    pool(2, 2, 8, 9, 2, 2, 1, 0, 0, 1, true, true),        // asymmetric pads, include pad
    pool(1, 3, 13, 12, 3, 1, 1, 2, 0, 1, false, true),     // stride 1
    pool(1, 2, 11, 11, 3, 2, 2, 2, 2, 2, true, false, 2),  // dilation 2
    pool(3, 7, 7, 7, 7, 1, 0, 0, 0, 0, false, false),      // a whole plane
};

std::vector<float> run_gpu(const std::vector<float>& x, const Pool2dDims& d, PoolKind kind) {
  Tensor tx = make_tensor(ctx(), {int64_t(x.size())}, x);
  Tensor ty = make_tensor(ctx(), {int64_t(d.y_elements())});
  fill_u32(ctx(), ty, kPoisonNaN);
  Batch b(ctx());
  pool2d(b, tx, ty, d, kind);
  b.run();
  return download<float>(ctx(), ty);
}

}  // namespace

TEST(Pool2d, MatchesReferenceAtAwkwardShapes) {
  for (const auto& d : kCases)
    for (PoolKind kind : {PoolKind::Max, PoolKind::Average}) {
      auto x = test::random_floats(d.x_elements(), d.h * 31 + d.w);
      std::vector<float> want(d.y_elements());
      cpu::pool2d(x, want, d, kind);
      EXPECT_LT(test::rel_error(run_gpu(x, d, kind), want), 1e-6)
          << d.str() << (kind == PoolKind::Max ? " max" : " average");
    }
}

TEST(Pool2d, CpuReferenceFollowsOnnxRuntime) {
  // 1x1x3x3 input 1..9, kernel 2, stride 2, ceil mode: windows [1,2,4,5], [3,6], [7,8], [9].
  Pool2dDims d = pool(1, 1, 3, 3, 2, 2, 0, 0, 0, 0, true, false);
  ASSERT_EQ(d.out_h(), 2u);
  std::vector<float> x{1, 2, 3, 4, 5, 6, 7, 8, 9}, y(4);
  cpu::pool2d(x, y, d, PoolKind::Average);
  EXPECT_EQ(y, (std::vector<float>{3, 4.5f, 7.5f, 9}));
  cpu::pool2d(x, y, d, PoolKind::Max);
  EXPECT_EQ(y, (std::vector<float>{5, 6, 8, 9}));
  // Padding 1 all round, kernel 3, stride 2, count_include_pad: the corner window holds 4 values
  // of 9 taps.
  Pool2dDims p = pool(1, 1, 3, 3, 3, 2, 1, 1, 1, 1, false, true);
  std::vector<float> z(4);
  cpu::pool2d(x, z, p, PoolKind::Average);
  EXPECT_FLOAT_EQ(z[0], (1 + 2 + 4 + 5) / 9.f);
  p.count_include_pad = false;
  cpu::pool2d(x, z, p, PoolKind::Average);
  EXPECT_FLOAT_EQ(z[0], (1 + 2 + 4 + 5) / 4.f);
}

TEST(Pool2d, GlobalAverageMatches) {
  for (auto [n, c, hw] : {std::tuple{2u, 5u, 49u}, std::tuple{1u, 3u, 1u}, std::tuple{3u, 7u, 300u}}) {
    auto x = test::random_floats(size_t(n) * c * hw, hw);
    std::vector<float> want(size_t(n) * c);
    cpu::global_average_pool(x, want, n, c, hw);
    Tensor tx = make_tensor(ctx(), {int64_t(x.size())}, x), ty = make_tensor(ctx(), {int64_t(want.size())});
    fill_u32(ctx(), ty, kPoisonNaN);
    Batch b(ctx());
    global_average_pool(b, tx, ty, n, c, hw);
    b.run();
    EXPECT_LT(test::rel_error(download<float>(ctx(), ty), want), 1e-6) << n << "x" << c << "x" << hw;
  }
}

TEST(Pool2d, HostApiTakesEitherPath) {
  const Pool2dDims& d = kCases[0];
  auto x = test::random_floats(d.x_elements(), 3);
  auto cpu = pool2d(ctx(), x, d, PoolKind::Max, Policy{INT64_MAX});
  auto gpu = pool2d(ctx(), x, d, PoolKind::Max, Policy{0});
  EXPECT_EQ(cpu, gpu);
}

TEST(Pool2d, BadDimsAreErrors) {
  Pool2dDims d = kCases[0];
  d.pad_top = 3;  // as large as the window
  EXPECT_THROW(check(d), Error);
  d = kCases[0];
  d.kh = 20;
  EXPECT_THROW(check(d), Error);
  Tensor t = make_tensor(ctx(), {4});
  Batch b(ctx());
  EXPECT_THROW(pool2d(b, t, make_tensor(ctx(), {4}), kCases[0], PoolKind::Max), Error);
  EXPECT_THROW(global_average_pool(b, t, make_tensor(ctx(), {4}), 1, 2, 3), Error);
}

// WGC_THRESHOLD_SCAN=1: the host-memory max pool (3x3 stride 2) on the CPU against the device
// (upload, kernel, readback) over growing inputs: where the device starts to win is
// thresholds::kPool2d (in elements of x) for this adapter.
TEST(Measure, ThresholdScan) {
  if (!std::getenv("WGC_THRESHOLD_SCAN")) GTEST_SKIP() << "set WGC_THRESHOLD_SCAN=1 to measure";
  Policy cpu{std::numeric_limits<int64_t>::max()}, gpu{0};
  std::printf("%-36s %12s %10s %12s\n", "pool", "elements", "cpu ms", "device ms");
  for (uint32_t c : {16u, 64u, 256u})
    for (uint32_t h : {14u, 56u, 112u}) {
      Pool2dDims d = pool(1, c, h, h, 3, 2, 1, 1, 1, 1, false, false);
      auto x = test::random_floats(d.x_elements(), 1);
      pool2d(ctx(), x, d, PoolKind::Max, gpu);  // warm-up: compiles
      double tc = test::median_ms([&] { pool2d(ctx(), x, d, PoolKind::Max, cpu); }, 9);
      double tg = test::median_ms([&] { pool2d(ctx(), x, d, PoolKind::Max, gpu); }, 9);
      std::printf("%-36s %12llu %10.3f %12.3f %s\n", d.str().c_str(), (unsigned long long)d.x_elements(), tc, tg,
                  tg < tc ? "<- device wins" : "");
    }
}
