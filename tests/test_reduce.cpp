// Every reduction version (sum, max, min, mean) against a float64 CPU reference at awkward
// lengths, outputs and intermediate partials poisoned first; the host-memory CPU/GPU threshold.
#include "cpu/reduce.h"
#include "ops/reduce.h"
#include "test_util.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>

using namespace wgc;
using wgc::test::ctx;

namespace {

constexpr double kEps = 1.0 / (1 << 24);  // f32 unit roundoff

// Puts NaN-filled buffers of many sizes (16 B .. 256 KiB, 20% apart) into the context's pool, so
// the partials a reduction allocates next come out poisoned: a partial never written poisons the
// result.
void poison_pool() {
  std::vector<Tensor> ts;
  for (double bytes = 16; bytes <= 256 * 1024; bytes *= 1.2) {
    ts.push_back(make_tensor(ctx(), {static_cast<int64_t>(bytes / 4) + 1}));
    fill_u32(ctx(), ts.back(), kPoisonNaN);
  }
}

float expected(ReduceOp op, const std::vector<float>& x) {
  switch (op) {
    case ReduceOp::Sum: return static_cast<float>(cpu::sum_f64(x));
    case ReduceOp::Mean: return static_cast<float>(cpu::sum_f64(x) / double(x.size()));
    case ReduceOp::Max: return *std::max_element(x.begin(), x.end());
    case ReduceOp::Min: return *std::min_element(x.begin(), x.end());
  }
  return 0;
}

// Error bound: n * eps * sum|x| for a sum (any order of f32 additions), over n for a mean plus
// the rounding of 1/n; max and min are exact.
double tolerance(ReduceOp op, const std::vector<float>& x) {
  double n = double(x.size()), s = cpu::sum_abs_f64(x);
  switch (op) {
    case ReduceOp::Sum: return n * kEps * s + 1e-30;
    case ReduceOp::Mean: return kEps * s + 4 * kEps * std::fabs(cpu::sum_f64(x) / n) + 1e-30;
    case ReduceOp::Max:
    case ReduceOp::Min: return 0;
  }
  return 0;
}

float run_gpu(const std::vector<float>& x, ReduceOp op, ReduceVersion v, ReduceConfig cfg = {}) {
  Tensor tx = make_tensor(ctx(), {static_cast<int64_t>(x.size())}, x);
  Tensor out = make_tensor(ctx(), {1});
  fill_u32(ctx(), out, kPoisonNaN);
  poison_pool();
  Batch b(ctx());
  reduce(b, tx, out, {x.size()}, op, cfg, v);
  b.run();
  return download<float>(ctx(), out)[0];
}

void check(ReduceOp op, ReduceVersion v, const std::vector<float>& x, ReduceConfig cfg = {}) {
  float got = run_gpu(x, op, v, cfg);
  float want = expected(op, x);
  double tol = tolerance(op, x);
  EXPECT_TRUE(std::isfinite(got)) << to_string(op) << "/" << to_string(v) << " n=" << x.size() << " got " << got;
  EXPECT_LE(std::fabs(double(got) - double(want)), tol)
      << to_string(op) << "/" << to_string(v) << " n=" << x.size() << " wg=" << cfg.workgroup
      << " groups=" << cfg.max_groups << ": got " << got << ", want " << want;
}

const size_t kLengths[] = {1, 2, 3, 17, 255, 256, 257, 1000, 1023, 4097, 65537, 100003};
constexpr ReduceOp kOps[] = {ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min, ReduceOp::Mean};

std::string version_name(const ::testing::TestParamInfo<ReduceVersion>& p) { return std::string(to_string(p.param)); }

}  // namespace

class ReduceVersions : public ::testing::TestWithParam<ReduceVersion> {
 protected:
  void SetUp() override {
    if (!supports(ctx(), GetParam(), {})) GTEST_SKIP() << "adapter has no subgroups";
  }
};

TEST_P(ReduceVersions, MatchFloat64ReferenceAtAwkwardLengths) {
  for (size_t n : kLengths) {
    auto x = test::random_floats(n, static_cast<uint32_t>(n) * 3 + 1);
    for (ReduceOp op : kOps) check(op, GetParam(), x);
  }
}

TEST_P(ReduceVersions, OneMillionAndThree) {
  auto x = test::random_floats(1000003, 99, -1.f, 3.f);
  for (ReduceOp op : kOps) check(op, GetParam(), x);
}

TEST_P(ReduceVersions, MaxOfAllNegativeAndMinOfAllPositive) {
  for (size_t n : {1, 3, 257, 4097}) {
    check(ReduceOp::Max, GetParam(), test::random_floats(n, 5, -9.f, -2.f));
    check(ReduceOp::Min, GetParam(), test::random_floats(n, 6, 2.f, 9.f));
    check(ReduceOp::Sum, GetParam(), test::random_floats(n, 7, -9.f, -2.f));
  }
}

TEST_P(ReduceVersions, ExtremeAtEitherEndIsFound) {
  for (size_t n : {5, 1023, 65537}) {
    auto x = test::random_floats(n, 8);
    x.back() = 100.f;
    x.front() = -100.f;
    check(ReduceOp::Max, GetParam(), x);
    check(ReduceOp::Min, GetParam(), x);
  }
}

TEST_P(ReduceVersions, OtherWorkgroupSizesAndGrids) {
  if (GetParam() == ReduceVersion::Naive) {
    auto x = test::random_floats(70001, 9);
    for (uint32_t wg : {32u, 64u, 128u}) check(ReduceOp::Sum, GetParam(), x, {wg, 0});
    return;
  }
  auto x = test::random_floats(100003, 10);
  for (ReduceConfig cfg : {ReduceConfig{64, 1}, ReduceConfig{64, 3}, ReduceConfig{128, 7}, ReduceConfig{32, 1000}})
    for (ReduceOp op : kOps) check(op, GetParam(), x, cfg);
}

TEST_P(ReduceVersions, EmptyInput) {
  Tensor empty = make_tensor(ctx(), {0});
  EXPECT_EQ(sum(ctx(), empty, GetParam()), 0.f);
  for (ReduceOp op : {ReduceOp::Mean, ReduceOp::Max, ReduceOp::Min}) {
    try {
      reduce(ctx(), empty, op, GetParam());
      ADD_FAILURE() << to_string(op) << " of nothing gave no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("empty"), std::string::npos) << e.what();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(All, ReduceVersions, ::testing::ValuesIn(kReduceVersions), version_name);

TEST(Reduce, AutoPicksTheBestSupportedVersion) {
  EXPECT_EQ(choose_reduce(ctx(), {1000}), ctx().features().subgroups ? ReduceVersion::Subgroup : ReduceVersion::Vec4);
  auto x = test::random_floats(12345, 11);
  check(ReduceOp::Sum, ReduceVersion::Auto, x);
  auto t = make_tensor(ctx(), {12345}, x);
  EXPECT_NEAR(sum(ctx(), t), cpu::sum_f64(x), tolerance(ReduceOp::Sum, x));
  EXPECT_EQ(max(ctx(), t), expected(ReduceOp::Max, x));
  EXPECT_EQ(min(ctx(), t), expected(ReduceOp::Min, x));
  EXPECT_NEAR(mean(ctx(), t), expected(ReduceOp::Mean, x), tolerance(ReduceOp::Mean, x));
}

TEST(Reduce, BadInputsAreClearErrors) {
  auto u = make_tensor(ctx(), {8}, DType::U32);
  EXPECT_THROW(reduce(ctx(), u, ReduceOp::Sum), Error);
  auto x = make_tensor(ctx(), {8});
  Batch b(ctx());
  EXPECT_THROW(reduce(b, x, Tensor(), {8}, ReduceOp::Sum), Error);
  EXPECT_THROW(reduce(b, x, make_tensor(ctx(), {1}), {9}, ReduceOp::Sum), Error);  // x holds 8
  EXPECT_THROW(reduce(b, x, make_tensor(ctx(), {1}), {8}, ReduceOp::Sum, {100, 0}, ReduceVersion::Vec4), LimitError);
  EXPECT_THROW(parse_reduce_version("fast"), Error);
  EXPECT_EQ(parse_reduce_version("subgroup"), ReduceVersion::Subgroup);
}

TEST(Reduce, ChainsInOneBatch) {
  // The sum of a sum: the second reduction reads the first's 1-element output in the same batch.
  auto x = test::random_floats(5000, 12);
  auto tx = make_tensor(ctx(), {5000}, x);
  auto s1 = make_tensor(ctx(), {1}), s2 = make_tensor(ctx(), {1});
  fill_u32(ctx(), s2, kPoisonNaN);
  Batch b(ctx());
  reduce(b, tx, s1, {5000}, ReduceOp::Sum);
  reduce(b, s1, s2, {1}, ReduceOp::Max);
  b.run();
  EXPECT_NEAR(download<float>(ctx(), s2)[0], cpu::sum_f64(x), tolerance(ReduceOp::Sum, x));
}

// --- host memory and the CPU threshold --------------------------------------------------------

TEST(ReduceHost, CpuAndDevicePathsAgree) {
  for (size_t n : {1, 17, 1000, 65537}) {
    auto x = test::random_floats(n, static_cast<uint32_t>(n) + 20);
    Policy cpu{std::numeric_limits<int64_t>::max()}, gpu{0};
    EXPECT_NEAR(sum(ctx(), x, cpu), cpu::sum_f64(x), tolerance(ReduceOp::Sum, x));
    EXPECT_NEAR(sum(ctx(), x, gpu), cpu::sum_f64(x), tolerance(ReduceOp::Sum, x));
    EXPECT_EQ(max(ctx(), x, cpu), max(ctx(), x, gpu));
    EXPECT_EQ(min(ctx(), x, cpu), min(ctx(), x, gpu));
    EXPECT_NEAR(mean(ctx(), x, cpu), mean(ctx(), x, gpu), 2 * tolerance(ReduceOp::Mean, x));
    EXPECT_NEAR(mean(ctx(), x), expected(ReduceOp::Mean, x), tolerance(ReduceOp::Mean, x));
  }
}

TEST(ReduceHost, EmptyInput) {
  std::vector<float> none;
  EXPECT_EQ(sum(ctx(), none), 0.f);
  for (Policy p : {Policy{0}, Policy{std::numeric_limits<int64_t>::max()}}) {
    EXPECT_THROW(mean(ctx(), none, p), Error);
    EXPECT_THROW(max(ctx(), none, p), Error);
    EXPECT_THROW(min(ctx(), none, p), Error);
  }
  try {
    mean(ctx(), none);
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("mean of an empty"), std::string::npos) << e.what();
  }
}

TEST(ReduceHost, ThresholdComesFromPolicyThenEnvironmentThenAdapter) {
  const auto& t = thresholds::kSum;
  ::unsetenv("WGC_CPU_BELOW_SUM");
  EXPECT_EQ(cpu_below(ctx(), t), ctx().adapter().is_cpu() ? t.cpu_adapter : t.gpu_adapter);
  ::setenv("WGC_CPU_BELOW_SUM", "1234", 1);
  EXPECT_EQ(cpu_below(ctx(), t), 1234u);
  EXPECT_EQ(cpu_below(ctx(), t, Policy{7}), 7u);
  EXPECT_TRUE(run_on_cpu(ctx(), t, {}, 1233));
  EXPECT_FALSE(run_on_cpu(ctx(), t, {}, 1234));
  ::setenv("WGC_CPU_BELOW_SUM", "12k", 1);
  try {
    cpu_below(ctx(), t);
    ADD_FAILURE() << "a malformed value was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("WGC_CPU_BELOW_SUM"), std::string::npos) << e.what();
  }
  ::unsetenv("WGC_CPU_BELOW_SUM");
  EXPECT_EQ(cpu_below(ctx(), thresholds::kMean),
            ctx().adapter().is_cpu() ? thresholds::kMean.cpu_adapter : thresholds::kMean.gpu_adapter);
}

TEST(ReduceHost, BenchHooksRecordEverySupportedVersion) {
  auto x = test::random_floats(100003, 13);
  auto tx = make_tensor(ctx(), {100003}, x);
  for (ReduceOp op : kOps) {
    auto vs = reduce_versions(ctx(), op);
    EXPECT_EQ(vs.size(), ctx().features().subgroups ? 3u : 2u);
    EXPECT_EQ(std::count_if(vs.begin(), vs.end(), [](const OpVersion& v) { return v.is_default; }), 1);
    for (auto& v : vs) {
      EXPECT_TRUE(v.scalar_output);
      EXPECT_EQ(v.bytes_per_element, 4);
      auto out = make_tensor(ctx(), {1});
      fill_u32(ctx(), out, kPoisonNaN);
      Batch b(ctx());
      Tensor in[] = {tx};
      v.record(b, in, out);
      b.run();
      EXPECT_NEAR(download<float>(ctx(), out)[0], expected(op, x), tolerance(op, x) + 1e-30)
          << v.op << "/" << v.version;
    }
  }
}

// --- measurements, run by hand -----------------------------------------------------------------

// WGC_THRESHOLD_SCAN=1: times the host-span sum, max and mean on the CPU and on the device
// (upload + reduce + readback) per length; the basis of ops/thresholds.h.
TEST(Measure, ThresholdScan) {
  if (!std::getenv("WGC_THRESHOLD_SCAN")) GTEST_SKIP() << "set WGC_THRESHOLD_SCAN=1 to measure";
  Policy cpu{std::numeric_limits<int64_t>::max()}, gpu{0};
  std::printf("%-6s %10s %12s %12s\n", "op", "n", "cpu ms", "device ms");
  for (size_t n = 256; n <= (size_t(1) << 24); n *= 4) {
    auto x = test::random_floats(n, 1);
    int reps = n <= (1u << 20) ? 15 : 5;
    volatile float sink = 0;
    using HostOp = float (*)(const Context&, std::span<const float>, Policy);
    const std::pair<const char*, HostOp> ops[] = {{"sum", &wgc::sum}, {"max", &wgc::max}, {"mean", &wgc::mean}};
    for (const auto& op : ops) {
      const char* name = op.first;
      HostOp f = op.second;  // a plain variable: clang 14 cannot capture a structured binding
      f(ctx(), x, gpu);      // warm-up: compiles
      double c = test::median_ms([&] { sink = sink + f(ctx(), x, cpu); }, reps);
      double g = test::median_ms([&] { sink = sink + f(ctx(), x, gpu); }, reps);
      std::printf("%-6s %10zu %12.4f %12.4f %s\n", name, n, c, g, g < c ? "<- device wins" : "");
    }
  }
}

// WGC_BENCH_N=<elements>: GPU time of every version (timestamp queries, median of repeats).
TEST(Measure, VersionBandwidth) {
  const char* env = std::getenv("WGC_BENCH_N");
  if (!env) GTEST_SKIP() << "set WGC_BENCH_N=<elements> to measure";
  if (!ctx().features().timestamp_query) GTEST_SKIP() << "no timestamp queries";
  const int64_t n = std::atoll(env);
  const int reps = 20;
  auto x = make_tensor(ctx(), {n});
  std::vector<float> host(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) host[size_t(i)] = float(i % 1000) * 1e-3f - 0.5f;
  upload(ctx(), x, std::as_bytes(std::span(host)));
  double want = cpu::sum_f64(host);
  for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Max}) {
    for (auto& v : reduce_versions(ctx(), op)) {
      for (uint32_t groups : {0u, 256u, 512u, 1024u, 2048u, 4096u}) {
        if (v.version == "naive" && groups) continue;
        auto out = make_tensor(ctx(), {1});
        Batch b(ctx(), true);
        std::vector<size_t> starts;
        for (int r = 0; r < reps; ++r) {
          starts.push_back(b.size());
          reduce(b, x, out, {static_cast<uint64_t>(x.numel())}, op, {256, groups}, parse_reduce_version(v.version));
        }
        starts.push_back(b.size());
        b.run();
        std::vector<double> ms;
        for (int r = 0; r < reps; ++r) {
          double t = 0;
          for (size_t i = starts[size_t(r)]; i < starts[size_t(r) + 1]; ++i) t += b.timings()[i].ms;
          ms.push_back(t);
        }
        std::sort(ms.begin(), ms.end());
        double med = ms[ms.size() / 2];
        float got = download<float>(ctx(), out)[0];
        std::printf("%-5s %-9s groups=%-5u n=%lld  %8.4f ms  %8.1f GB/s  (min %.4f ms)  result %g%s\n", v.op.c_str(),
                    v.version.c_str(), groups, (long long)n, med, double(n) * 4 / med * 1e-6, ms[0], double(got),
                    op == ReduceOp::Sum ? (" want " + std::to_string(want)).c_str() : "");
      }
    }
  }
}
