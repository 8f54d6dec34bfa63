// Every map version (copy, add, unary and binary expression maps) against the CPU reference at
// awkward lengths with the output poisoned first; the expression checks; the CPU expression
// evaluator; the host-memory CPU/GPU threshold.
#include "cpu/map.h"
#include "ops/map.h"
#include "test_util.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <limits>

using namespace wgc;
using wgc::test::ctx;

namespace {

const size_t kLengths[] = {1, 2, 3, 17, 1000, 1023, 4097, 100003};

Tensor upload(const std::vector<float>& v) { return make_tensor(ctx(), {static_cast<int64_t>(v.size())}, v); }

// An output poisoned over its whole buffer, including the bytes past its last element.
Tensor poisoned(size_t n) {
  Tensor t = make_tensor(ctx(), {static_cast<int64_t>(n)});
  fill_u32(ctx(), t, kPoisonNaN);
  return t;
}

// The output's elements, after checking the buffer past them still holds the poison (the vec4
// kernels' partial last vec4 must not write there).
std::vector<float> read_checked(const Tensor& t, const std::string& what) {
  auto whole = download<uint32_t>(ctx(), t.view({static_cast<int64_t>(t.capacity() / 4)}, DType::U32));
  for (size_t i = static_cast<size_t>(t.numel()); i < whole.size(); ++i)
    EXPECT_EQ(whole[i], kPoisonNaN) << what << ": word " << i << " past the end (n=" << t.numel() << ") written";
  std::vector<float> out(static_cast<size_t>(t.numel()));
  std::memcpy(out.data(), whole.data(), out.size() * 4);
  return out;
}

template <class F>
std::vector<float> ref1(const std::vector<float>& x, F f) {
  std::vector<float> r(x.size());
  for (size_t i = 0; i < x.size(); ++i) r[i] = f(x[i]);
  return r;
}

template <class F>
std::vector<float> ref2(const std::vector<float>& x, const std::vector<float>& y, F f) {
  std::vector<float> r(x.size());
  for (size_t i = 0; i < x.size(); ++i) r[i] = f(x[i], y[i]);
  return r;
}

std::string version_name(const ::testing::TestParamInfo<MapVersion>& p) {
  std::string s(to_string(p.param));
  std::replace(s.begin(), s.end(), '-', '_');
  return s;
}

}  // namespace

class MapVersions : public ::testing::TestWithParam<MapVersion> {};

TEST_P(MapVersions, CopyIsExact) {
  for (size_t n : kLengths) {
    auto x = test::random_floats(n, static_cast<uint32_t>(n));
    auto out = poisoned(n);
    Batch b(ctx());
    copy(b, upload(x), out, {n}, {}, GetParam());
    b.run();
    EXPECT_EQ(read_checked(out, "copy"), x) << "n=" << n;
  }
}

TEST_P(MapVersions, AddIsExact) {
  for (size_t n : kLengths) {
    auto x = test::random_floats(n, 1), y = test::random_floats(n, 2);
    auto out = poisoned(n);
    Batch b(ctx());
    add(b, upload(x), upload(y), out, {n}, {}, GetParam());
    b.run();
    EXPECT_EQ(read_checked(out, "add"), ref2(x, y, [](float a, float c) { return a + c; })) << "n=" << n;
  }
}

TEST_P(MapVersions, UnaryExpression) {
  for (size_t n : kLengths) {
    auto x = test::random_floats(n, 3, -4.f, 4.f);
    auto out = poisoned(n);
    Batch b(ctx());
    map(b, upload(x), out, {n}, "exp(x) * 0.5", {}, GetParam());
    b.run();
    auto want = ref1(x, [](float v) { return std::exp(v) * 0.5f; });
    EXPECT_LT(test::rel_error(read_checked(out, "exp"), want), 1e-5) << "n=" << n;
  }
}

TEST_P(MapVersions, BinaryExpression) {
  for (size_t n : kLengths) {
    auto x = test::random_floats(n, 4), y = test::random_floats(n, 5);
    auto out = poisoned(n);
    Batch b(ctx());
    map(b, upload(x), upload(y), out, {n}, "x * y + 1.0", {}, GetParam());
    b.run();
    auto want = ref2(x, y, [](float a, float c) { return a * c + 1.f; });
    EXPECT_LT(test::rel_error(read_checked(out, "fma"), want), 1e-6) << "n=" << n;
  }
}

TEST_P(MapVersions, ConvenienceFormsAllocateTheOutput) {
  auto x = test::random_floats(1000, 6), y = test::random_floats(1000, 7);
  auto tx = upload(x), ty = upload(y);
  EXPECT_EQ(download<float>(ctx(), copy(ctx(), tx, GetParam())), x);
  EXPECT_EQ(download<float>(ctx(), add(ctx(), tx, ty, GetParam())), ref2(x, y, [](float a, float c) { return a + c; }));
  auto m = download<float>(ctx(), map(ctx(), tx, "max(x, 0.0)", GetParam()));
  EXPECT_EQ(m, ref1(x, [](float v) { return std::max(v, 0.f); }));
  auto m2 = download<float>(ctx(), map(ctx(), tx, ty, "select(y, x, x > y)", GetParam()));
  EXPECT_EQ(m2, ref2(x, y, [](float a, float c) { return a > c ? a : c; }));
}

TEST_P(MapVersions, OtherWorkgroupSizesAndGrids) {
  const size_t n = 100003;
  auto x = test::random_floats(n, 8), y = test::random_floats(n, 9);
  auto tx = upload(x), ty = upload(y);
  auto want = ref2(x, y, [](float a, float c) { return a - c; });
  for (MapConfig cfg : {MapConfig{64, 1}, MapConfig{32, 3}, MapConfig{128, 7}, MapConfig{256, 100000}}) {
    auto out = poisoned(n);
    Batch b(ctx());
    map(b, tx, ty, out, {n}, "x - y", cfg, GetParam());
    b.run();
    EXPECT_EQ(read_checked(out, "sub"), want) << "wg=" << cfg.workgroup << " groups=" << cfg.max_groups;
  }
}

TEST_P(MapVersions, EmptyTensorsAreANoOp) {
  auto e = make_tensor(ctx(), {0});
  Batch b(ctx());
  EXPECT_NO_THROW(map(b, e, e, {0}, "x + 1.0", {}, GetParam()));
  EXPECT_EQ(b.size(), 0u);
  EXPECT_THROW(map(b, e, e, {0}, "x +", {}, GetParam()), ShaderError);  // the expression is still checked
}

INSTANTIATE_TEST_SUITE_P(All, MapVersions, ::testing::ValuesIn(kMapVersions), version_name);

TEST(Map, ExpressionWithStatementsIsRefused) {
  auto t = make_tensor(ctx(), {4});
  for (const char* bad : {"x; }", "x }", "{ x }", "", "   "}) {
    try {
      map(ctx(), t, bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const ShaderError& e) {
      ADD_FAILURE() << "reached the compiler: " << e.what();
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("map expression"), std::string::npos) << e.what();
    }
  }
}

TEST(Map, WgslErrorsNameTheExpression) {
  auto t = make_tensor(ctx(), {4});
  for (auto [expr, word] : {std::pair{"x * undefined_thing", "undefined_thing"}, std::pair{"x + y", "y"},
                            std::pair{"x > 0.0", "x > 0.0"}}) {
    try {
      map(ctx(), t, expr);
      ADD_FAILURE() << "accepted '" << expr << "'";
    } catch (const ShaderError& e) {
      std::string m = e.what();
      EXPECT_NE(m.find(std::string("'") + expr + "'"), std::string::npos) << m;
      EXPECT_NE(m.find(word), std::string::npos) << m;
    }
  }
}

TEST(Map, MismatchedTensorsAreErrors) {
  auto a = make_tensor(ctx(), {8}), b = make_tensor(ctx(), {9}), u = make_tensor(ctx(), {8}, DType::U32);
  Batch batch(ctx());
  EXPECT_THROW(map(batch, b, a, a, {9}, "x + y"), Error);  // a holds 8
  EXPECT_THROW(map(batch, b, a, {9}, "x"), Error);
  EXPECT_THROW(map(batch, u, a, {8}, "x"), Error);
  EXPECT_THROW(add(batch, a, a, u, {8}), Error);
  EXPECT_THROW(map(batch, a, a, {8}, "x", {100000, 0}, MapVersion::Vec4), LimitError);
  EXPECT_THROW(map(ctx(), a, b, "x + y"), Error);  // the tensor forms take same-length tensors
  EXPECT_NO_THROW(map(batch, b, a, {8}, "x"));     // a prefix of a longer tensor
  EXPECT_THROW(parse_map_version("fast"), Error);
  EXPECT_EQ(parse_map_version("grid-stride"), MapVersion::GridStride);
}

TEST(Map, CachedPipelinesPerExpression) {
  auto t = upload({1.f, 2.f, 3.f});
  EXPECT_EQ(download<float>(ctx(), map(ctx(), t, "x * 2.0")), (std::vector<float>{2.f, 4.f, 6.f}));
  EXPECT_EQ(download<float>(ctx(), map(ctx(), t, "x * 3.0")), (std::vector<float>{3.f, 6.f, 9.f}));
  EXPECT_EQ(download<float>(ctx(), map(ctx(), t, "x * 2.0")), (std::vector<float>{2.f, 4.f, 6.f}));
}

TEST(Map, BenchHooksRecordEveryVersion) {
  const size_t n = 4099;
  auto x = test::random_floats(n, 10), y = test::random_floats(n, 11);
  Tensor ins[] = {upload(x), upload(y)};
  auto vs = map_versions(ctx());
  EXPECT_EQ(vs.size(), 4 * std::size(kMapVersions) + 1);
  for (auto& v : vs) {
    auto out = poisoned(n);
    Batch b(ctx());
    v.record(b, std::span<const Tensor>(ins, static_cast<size_t>(v.inputs)), out);
    b.run();
    std::vector<float> want;
    if (v.op == "copy") want = x;
    if (v.op == "add") want = ref2(x, y, [](float a, float c) { return a + c; });
    if (v.op == "map.exp") want = ref1(x, [](float a) { return std::exp(a) * 0.5f; });
    if (v.op == "map2.fma") want = ref2(x, y, [](float a, float c) { return a * c + 1.f; });
    EXPECT_LT(test::rel_error(read_checked(out, v.op), want), 1e-5) << v.op << "/" << v.version;
    EXPECT_EQ(v.bytes_per_element, v.inputs == 1 ? 8 : 12) << v.op << "/" << v.version;
  }
}

// --- the CPU evaluator --------------------------------------------------------------------------

TEST(CpuExpr, ArithmeticAndPrecedence) {
  EXPECT_EQ(cpu::Expr("x * 2 + 1", 1)(3.f), 7.f);
  EXPECT_EQ(cpu::Expr("x * (2 + 1)", 1)(3.f), 9.f);
  EXPECT_EQ(cpu::Expr("-x - -2.0", 1)(3.f), -1.f);
  EXPECT_EQ(cpu::Expr("x / y % 3.0", 2)(20.f, 2.f), 1.f);
  EXPECT_EQ(cpu::Expr("-7.0 % 3.0 + x", 1)(0.f), -1.f);  // WGSL's % truncates, like fmod
  EXPECT_EQ(cpu::Expr(".5e1 + 1.f + 2.", 1)(0.f), 8.f);
  EXPECT_EQ(cpu::Expr("x", 1)(5.f), 5.f);
  EXPECT_EQ(cpu::Expr("3", 1)(5.f), 3.f);
  EXPECT_EQ(cpu::Expr("x * (7 / 2) + 7 % 4 - (-7) / 2", 1)(1.f), 9.f);  // abstract ints truncate
}

TEST(CpuExpr, FunctionsAndSelect) {
  EXPECT_FLOAT_EQ(cpu::Expr("exp(x) * 0.5", 1)(1.f), std::exp(1.f) * 0.5f);
  EXPECT_EQ(cpu::Expr("max(x, 0)", 1)(-3.f), 0.f);
  EXPECT_EQ(cpu::Expr("clamp(x, -1.0, 1.0)", 1)(5.f), 1.f);
  EXPECT_EQ(cpu::Expr("select(x, y, x < y)", 2)(1.f, 2.f), 2.f);
  EXPECT_EQ(cpu::Expr("select(0.0, 1.0, x > 0.0 && !(y > 0.0) || x == 7.0)", 2)(1.f, -1.f), 1.f);
  EXPECT_EQ(cpu::Expr("round(x)", 1)(2.5f), 2.f);  // halves to even, as WGSL
  EXPECT_EQ(cpu::Expr("step(1.0, x) + sign(-x) + fract(1.25)", 1)(2.f), 0.25f);
  EXPECT_FLOAT_EQ(cpu::Expr("fma(x, y, 1.0) + mix(0.0, 10.0, 0.25)", 2)(2.f, 3.f), 9.5f);
  EXPECT_FLOAT_EQ(cpu::Expr("inverseSqrt(x) + smoothstep(0.0, 1.0, 0.5)", 1)(4.f), 1.f);
  EXPECT_EQ(cpu::Expr("f32(x) + saturate(y)", 2)(1.f, 5.f), 2.f);
}

TEST(CpuExpr, OutsideTheSubsetOrInvalidIsRefused) {
  for (const char* e : {"x +", "foo(x)", "y", "x > 1.0", "max(x)", "1 < 2", "x * 2u", "vec2(x)", "1 / 0", "x.x", "0x10",
                        "x & 1", "select(0, 1, x > 0.0)", "(x", "abs(-2)", "x + (x < 1.0)", "1.5h"})
    EXPECT_FALSE(cpu::Expr::parse(e, 1)) << e;
  try {
    cpu::Expr("x + z", 2);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'z'"), std::string::npos) << e.what();
  }
}

TEST(CpuExpr, AgreesWithTheDevice) {
  const size_t n = 4097;
  auto x = test::random_floats(n, 12, 0.1f, 3.f), y = test::random_floats(n, 13, -2.f, 2.f);
  // WGSL lets devices approximate: exp/log/pow to a few ULP per unit of argument, sin/cos to
  // 2^-11 absolute, atan2 to 4096 ULP; the tolerances follow.
  for (auto [e, tol] : {std::pair{"sqrt(x) * y - abs(y)", 1e-5}, std::pair{"tanh(y) + log(x) / exp2(y)", 1e-4},
                        std::pair{"select(x, y * 2.0, y > 0.5)", 0.0},
                        std::pair{"pow(x, 1.5) + clamp(y, -0.5, 0.5) + floor(y) + ceil(x) + trunc(y)", 1e-5},
                        std::pair{"atan2(y, x) + sin(x) * cos(y) + fract(x * 3.0)", 2e-3}}) {
    cpu::Expr ce(e, 2);
    std::vector<float> want(n);
    cpu::map(x, y, want, ce);
    auto got = download<float>(ctx(), map(ctx(), upload(x), upload(y), e));
    EXPECT_LE(test::rel_error(got, want), tol) << e;
  }
}

// --- host memory and the CPU threshold --------------------------------------------------------

TEST(MapHost, CpuAndDevicePathsAgree) {
  Policy cpu{std::numeric_limits<int64_t>::max()}, gpu{0};
  for (size_t n : {1, 17, 1000, 4097}) {
    auto x = test::random_floats(n, 14), y = test::random_floats(n, 15);
    EXPECT_EQ(add(ctx(), x, y, cpu), add(ctx(), x, y, gpu));
    EXPECT_LT(test::rel_error(map(ctx(), x, "exp(x) - x", cpu), map(ctx(), x, "exp(x) - x", gpu)), 1e-5);
    // a device may fuse x * y + 1.0 into one fma (the H200 does): not bit-exact
    EXPECT_LT(test::rel_error(map(ctx(), x, y, "x * y + 1.0", cpu), map(ctx(), x, y, "x * y + 1.0", gpu)), 1e-6);
    EXPECT_EQ(map(ctx(), x, y, "x - y"), ref2(x, y, [](float a, float c) { return a - c; }));
  }
}

TEST(MapHost, ExpressionOutsideTheCpuSubsetRunsOnTheDevice) {
  Policy cpu{std::numeric_limits<int64_t>::max()};
  std::vector<float> x = {1.f, -2.f, 3.f};
  EXPECT_EQ(map(ctx(), x, "dot(vec2<f32>(x, 1.0), vec2<f32>(2.0, 3.0))", cpu), (std::vector<float>{5.f, -1.f, 9.f}));
  EXPECT_THROW(map(ctx(), x, "x +", cpu), ShaderError);
  EXPECT_THROW(map(ctx(), x, "x; x", cpu), Error);
  EXPECT_TRUE(map(ctx(), std::vector<float>{}, "x * 2.0").empty());
  EXPECT_THROW(map(ctx(), std::vector<float>{}, "x *"), ShaderError);
  EXPECT_THROW(add(ctx(), x, std::vector<float>{1.f}), Error);
}

TEST(MapHost, ThresholdEnvironmentOverride) {
  ::setenv("WGC_CPU_BELOW_MAP", "5", 1);
  EXPECT_EQ(cpu_below(ctx(), thresholds::kMap), 5u);
  ::unsetenv("WGC_CPU_BELOW_MAP");
  EXPECT_EQ(cpu_below(ctx(), thresholds::kMap2),
            ctx().adapter().is_cpu() ? thresholds::kMap2.cpu_adapter : thresholds::kMap2.gpu_adapter);
}

// --- measurements, run by hand -----------------------------------------------------------------

// WGC_THRESHOLD_SCAN=1: times the host-span add, unary and binary maps on the CPU and on the
// device (upload + map + readback) per length; the basis of ops/thresholds.h. The maps use an
// expression with a transcendental (the CPU evaluator's cost grows with the expression; "cheap"
// shows a plain multiply-add for comparison).
TEST(Measure, ThresholdScan) {
  if (!std::getenv("WGC_THRESHOLD_SCAN")) GTEST_SKIP() << "set WGC_THRESHOLD_SCAN=1 to measure";
  Policy cpu{std::numeric_limits<int64_t>::max()}, gpu{0};
  std::printf("%-6s %10s %12s %12s\n", "op", "n", "cpu ms", "device ms");
  for (size_t n = 256; n <= (size_t(1) << 24); n *= 4) {
    auto x = test::random_floats(n, 1), y = test::random_floats(n, 2);
    int reps = n <= (1u << 20) ? 15 : 5;
    auto row = [&](const char* name, auto f) {
      f(gpu);  // warm-up: compiles
      double c = test::median_ms([&] { f(cpu); }, reps);
      double g = test::median_ms([&] { f(gpu); }, reps);
      std::printf("%-6s %10zu %12.4f %12.4f %s\n", name, n, c, g, g < c ? "<- device wins" : "");
    };
    row("add", [&](Policy p) { return add(ctx(), x, y, p); });
    row("map", [&](Policy p) { return map(ctx(), x, "exp(x) * 0.5", p); });
    row("map2", [&](Policy p) { return map(ctx(), x, y, "exp(x) * y", p); });
    row("cheap", [&](Policy p) { return map(ctx(), x, y, "x * y + 1.0", p); });
  }
}

// WGC_BENCH_N=<elements>: GPU time of every map version (timestamp queries, median of repeats),
// with a few grid sizes for the grid-stride version.
TEST(Measure, VersionBandwidth) {
  const char* env = std::getenv("WGC_BENCH_N");
  if (!env) GTEST_SKIP() << "set WGC_BENCH_N=<elements> to measure";
  if (!ctx().features().timestamp_query) GTEST_SKIP() << "no timestamp queries";
  const int64_t n = std::atoll(env);
  const int reps = 20;
  Tensor a = make_tensor(ctx(), {n}), b = make_tensor(ctx(), {n}), out = make_tensor(ctx(), {n});
  fill_u32(ctx(), a, 0x3f800000);  // 1.0
  fill_u32(ctx(), b, 0x40000000);  // 2.0
  Tensor ins[] = {a, b};
  auto time = [&](const std::function<void(Batch&)>& rec) {
    Batch batch(ctx(), true);
    for (int r = 0; r < reps; ++r) rec(batch);
    auto t0 = std::chrono::steady_clock::now();
    batch.run();
    double wall = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::vector<double> ms;
    for (auto& t : batch.timings()) ms.push_back(t.ms);
    if (ms.empty()) return wall / reps;  // buffer copies get no timestamps: wall clock per run
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
  };
  for (auto& v : map_versions(ctx())) {
    std::vector<uint32_t> grids = {0};
    if (v.version == "grid-stride") grids = {0, 528, 1056, 2112, 4224, 8448};
    for (uint32_t g : grids) {
      double ms = time([&](Batch& batch) {
        if (g == 0) return v.record(batch, std::span<const Tensor>(ins, size_t(v.inputs)), out);
        MapVersion mv = MapVersion::GridStride;
        MapConfig cfg{256, g};
        MapDims d{static_cast<uint64_t>(n)};
        if (v.op == "copy") copy(batch, a, out, d, cfg, mv);
        if (v.op == "add") add(batch, a, b, out, d, cfg, mv);
        if (v.op == "map.exp") map(batch, a, out, d, "exp(x) * 0.5", cfg, mv);
        if (v.op == "map2.fma") map(batch, a, b, out, d, "x * y + 1.0", cfg, mv);
      });
      std::printf("%-9s %-12s groups=%-5u n=%lld  %8.4f ms  %8.1f GB/s\n", v.op.c_str(), v.version.c_str(), g,
                  (long long)n, ms, v.bytes_per_element * double(n) / ms * 1e-6);
    }
  }
}
