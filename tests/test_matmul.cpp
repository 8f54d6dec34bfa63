// Every matmul version against the CPU reference at awkward shapes, outputs poisoned first.
#include "cpu/matmul.h"
#include "ops/matmul.h"
#include "test_util.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

using namespace wgc;
using wgc::test::ctx;

namespace {

struct Case {
  uint32_t m, n, k;
  bool trans_b;
};

void check(MatmulVersion v, Case c, const MatmulTuning& t = {}) {
  MatmulDims d{c.m, c.n, c.k, c.trans_b};
  if (!supports(ctx(), v, d)) return;
  auto a = test::random_floats(size_t(c.m) * c.k, c.m * 7 + c.k);
  auto b = test::random_floats(size_t(c.k) * c.n, c.n * 13 + c.k);
  std::vector<float> want(size_t(c.m) * c.n);
  cpu::matmul_reference(a, b, want, c.m, c.n, c.k, c.trans_b);
  Tensor ta = make_tensor(ctx(), {c.m, c.k}, a);
  Tensor tb = make_tensor(ctx(), {int64_t(b.size())}, b);
  Tensor tc = make_tensor(ctx(), {c.m, c.n});
  fill_u32(ctx(), tc, kPoisonNaN);
  Batch batch(ctx());
  matmul(batch, ta, tb, tc, d, t, v);
  batch.run();
  auto got = download<float>(ctx(), tc);
  // f32 accumulation over K terms of size <= 1: error grows like sqrt(K) * eps relative.
  EXPECT_LT(test::rel_error(got, want), 1e-5 * (1 + std::sqrt(double(c.k))))
      << to_string(v) << " bm=" << t.bm << " bn=" << t.bn << " wn=" << t.wn << " group_m=" << t.group_m
      << " bk=" << t.bk << " pad=" << t.pad << " two=" << t.two << " M=" << c.m << " N=" << c.n << " K=" << c.k
      << " trans_b=" << c.trans_b;
}

const Case kCases[] = {{1, 1, 1, false},      {1, 17, 3, false},       {17, 1, 5, true},      {33, 65, 17, false},
                       {130, 129, 12, false}, {130, 129, 12, true},    {100, 260, 64, false}, {257, 131, 259, true},
                       {64, 64, 64, false},   {1023, 517, 259, false}, {130, 132, 20, false}, {129, 260, 36, true},
                       {300, 4, 260, false},  {250, 136, 68, false}};

}  // namespace

class MatmulVersions : public ::testing::TestWithParam<MatmulVersion> {};

TEST_P(MatmulVersions, MatchReferenceAtAwkwardShapes) {
  if (!supports(ctx(), GetParam(), {128, 128, 128, false}))
    GTEST_SKIP() << to_string(GetParam()) << " needs more than this adapter offers (workgroup memory)";
  for (auto c : kCases) check(GetParam(), c);
}

INSTANTIATE_TEST_SUITE_P(All, MatmulVersions, ::testing::ValuesIn(kMatmulVersions), [](const auto& param_info) {
  std::string s(to_string(param_info.param));
  for (auto& ch : s)
    if (ch == '-') ch = '_';
  return s;
});

// vec4-db2 under each block shape, warp layout and workgroup order (the shapes above span
// several blocks of every size, with partial ones at both ends).
TEST(Matmul, Vec4Db2KnobsMatchReference) {
  const char* sets[] = {"wn=0",
                        "wn=4",
                        "wn=16",
                        "bm=64",
                        "bm=64/wn=4",
                        "bn=64",
                        "bn=64/wn=4",
                        "bm=64/bn=64",
                        "group_m=8",
                        "group_m=3",
                        "bm=256",
                        "bm=256/wn=4",
                        "bm=256/wn=0",
                        "bn=256/wn=0",
                        "bm=512/bn=64",
                        "bm=256/group_m=3",
                        "bk=16",
                        "bk=16/wn=0",
                        "bk=16/bm=256",
                        "pad=1",
                        "pad=1/bm=64/bn=64",
                        "pad=1/bk=16",
                        "pad=1/bm=256",
                        "two=1",
                        "two=1/bk=16/wn=0",
                        "two=1/pad=1/bm=256",
                        "two=1/pad=1",
                        "two=1/pad=1/bn=64"};
  for (const char* s : sets) {
    MatmulTuning t = parse_matmul_tuning(s);
    if (std::string e = matmul_tuning_error(ctx(), t); !e.empty()) {
      std::printf("skipped %s: %s\n", s, e.c_str());
      continue;
    }
    for (auto c : kCases) check(MatmulVersion::Vec4Db2, c, t);
  }
}

// Auto, whose knobs depend on the shape (choose_matmul_tuning: taller blocks from 2048 rows where
// the adapter offers them), at awkward shapes on both sides of that rule.
TEST(Matmul, AutoMatchesReference) {
  const Case cases[] = {{2050, 36, 12, false}, {2049, 132, 20, true}, {300, 68, 16, false}};
  for (auto c : cases) check(MatmulVersion::Auto, c, choose_matmul_tuning(ctx(), {c.m, c.n, c.k, c.trans_b}));
}

TEST(Matmul, Vec4Db2RejectsBadKnobs) {
  EXPECT_THROW(parse_matmul_tuning("bm=64/warp=8"), Error);
  EXPECT_THROW(parse_matmul_tuning("bm=x"), Error);
  EXPECT_THROW(parse_matmul_tuning("bm="), Error);
  EXPECT_EQ(parse_matmul_tuning("bm=64/wn=8").bm, 64u);
  EXPECT_NE(matmul_tuning_error(ctx(), parse_matmul_tuning("bm=96")), "");
  EXPECT_NE(matmul_tuning_error(ctx(), parse_matmul_tuning("wn=3")), "");
  EXPECT_NE(matmul_tuning_error(ctx(), parse_matmul_tuning("bm=64/wn=2")), "");  // 64 * 2 % 256
  EXPECT_NE(matmul_tuning_error(ctx(), parse_matmul_tuning("bk=12")), "");
  EXPECT_NE(matmul_tuning_error(ctx(), parse_matmul_tuning("bk=16/bm=64")), "");  // 3 A vec4s per invocation
  EXPECT_NE(matmul_tuning_error(ctx(), parse_matmul_tuning("pad=2")), "");
  EXPECT_NE(matmul_tuning_error(ctx(), parse_matmul_tuning("two=2")), "");
  EXPECT_THROW(parse_matmul_tuning("pre=1"), Error);  // removed knobs (docs/history/pruned.md) are unknown
  EXPECT_THROW(
      {
        Batch b(ctx());
        auto t = make_tensor(ctx(), {64});
        matmul(b, t, t, t, {4, 4, 4, false}, parse_matmul_tuning("bn=96"), MatmulVersion::Vec4Db2);
      },
      Error);
}

TEST(Matmul, Vec4SupportFollowsAlignment) {
  EXPECT_TRUE(supports(ctx(), MatmulVersion::RegTileVec4, {8, 8, 8, false}));
  EXPECT_FALSE(supports(ctx(), MatmulVersion::RegTileVec4, {8, 7, 8, false}));
  EXPECT_TRUE(supports(ctx(), MatmulVersion::RegTileVec4, {8, 7, 8, true}));
  EXPECT_FALSE(supports(ctx(), MatmulVersion::RegTileVec4, {8, 8, 6, true}));
  EXPECT_THROW(
      {
        Batch b(ctx());
        auto t = make_tensor(ctx(), {64});
        matmul(b, t, t, t, {2, 3, 6, false}, MatmulVersion::RegTileVec4);
      },
      Error);
}

TEST(Matmul, TensorApiChecksShapes) {
  auto a = make_tensor(ctx(), {3, 4}, test::random_floats(12, 1));
  auto b = make_tensor(ctx(), {5, 2}, test::random_floats(10, 2));
  EXPECT_THROW(matmul(ctx(), a, b), Error);
  auto b2 = make_tensor(ctx(), {4, 2}, test::random_floats(8, 3));
  auto c = matmul(ctx(), a, b2);
  EXPECT_EQ(c.shape(), (Shape{3, 2}));
}

TEST(Matmul, HostApiTakesEitherPathWithTheSameResult) {
  MatmulDims d{19, 23, 29, false};
  auto a = test::random_floats(19 * 29, 5), b = test::random_floats(29 * 23, 6);
  std::vector<float> want(19 * 23);
  cpu::matmul_reference(a, b, want, d.m, d.n, d.k, false);
  EXPECT_LT(test::rel_error(matmul(ctx(), a, b, d, Policy{INT64_MAX}), want), 1e-5);  // forced CPU
  EXPECT_LT(test::rel_error(matmul(ctx(), a, b, d, Policy{0}), want), 1e-5);          // forced GPU
}

TEST(Matmul, VersionNamesRoundTrip) {
  for (MatmulVersion v : kMatmulVersions) EXPECT_EQ(parse_matmul_version(to_string(v)), v);
  EXPECT_EQ(parse_matmul_version("auto"), MatmulVersion::Auto);
  try {
    parse_matmul_version("fast");
    ADD_FAILURE() << "no error for an unknown version";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("matmul"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("vec4-prefetch"), std::string::npos) << e.what();
  }
}

TEST(Matmul, BadThresholdEnvironmentIsAnError) {
  auto a = test::random_floats(4, 1), b = test::random_floats(4, 2);
  ::setenv("WGC_CPU_BELOW_MATMUL", "4e6", 1);
  try {
    matmul(ctx(), a, b, MatmulDims{2, 2, 2, false});
    ADD_FAILURE() << "no error for WGC_CPU_BELOW_MATMUL=4e6";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("WGC_CPU_BELOW_MATMUL"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("FLOPs"), std::string::npos) << e.what();
  }
  ::unsetenv("WGC_CPU_BELOW_MATMUL");
}
