// The dispatch-floor cases of `wgc bench` (bench/dispatch_bench.cpp) on this machine's device:
// every case's check runs its kernels once with the outputs poisoned and compares with what the
// chain computes (a chain's last buffer holds the input plus one per link; chain-read's the sums
// of every slice it read), at awkward sizes; and the line fit recovers known terms. The one-token
// LLM matvecs as chains of links (bench/llm_bench.cpp, WGC_BENCH_LINKS), and the SGEMM knob sweep
// (bench/matmul_bench.cpp, WGC_MATMUL_SWEEP).
#include "bench/bench.h"
#include "test_util.h"
#include "util/error.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

using namespace wgc;
using namespace wgc::bench;

namespace {

std::vector<Case> cases_of(const std::string& op, const Options& o) {
  for (auto& [name, make] : registry())
    if (name == op) return make(test::ctx(), o);
  ADD_FAILURE() << op << " is not registered";
  return {};
}

Options sized(std::vector<double> sizes) {
  Options o;
  o.quick = true;
  o.sizes = sizes;
  for (double s : sizes) o.size_names.push_back(std::to_string(s));
  return o;
}

Result synthetic(double dispatches, double bytes, double ms) {
  Result r;
  r.c.dispatches = dispatches;
  r.c.bytes = bytes;
  r.gpu_ms = ms;
  return r;
}

}  // namespace

TEST(DispatchFloor, EveryVersionComputesItsChain) {
  auto cases = cases_of("gpu.dispatch", sized({1, 7}));
  ASSERT_EQ(cases.size(), 12u);
  for (auto& c : cases) {
    SCOPED_TRACE(c.version + " x" + c.size);
    EXPECT_EQ(c.dispatches, std::stod(c.size));
    EXPECT_LT(c.check(), c.tolerance);
  }
}

// 4000 bytes leave most workgroups of the grid without data; 300,000 take the grid kernel's
// unrolled loop (more than 4 grid strides of vec4s) and its tail. The rows and block patterns take
// whole workgroups of 16 awkward rows (141 vec4s: one unrolled pass and a tail of 13; 37: the tail
// only, or one pass and a tail of 5 in block order).
TEST(DispatchFloor, ChainReadSumsEverySliceOnce) {
  auto cases = cases_of("gpu.chain-read", sized({4000, 300000}));
  ASSERT_EQ(cases.size(), 10u);
  for (auto& c : cases) {
    SCOPED_TRACE(c.version + " " + c.size);
    const double size = std::stod(c.size);
    if (c.version == "chain-read") {
      EXPECT_EQ(size, c.size == "4096" ? 4096 : 300032);  // rounded up to 256 bytes
    } else {
      const double row_bytes = c.version.ends_with("-8k") ? 141 * 16 : 37 * 16;
      EXPECT_EQ(std::fmod(size, 16 * row_bytes), 0);
      EXPECT_LT(size - 16 * row_bytes, 300000);
    }
    EXPECT_GE(c.dispatches, 8);
    EXPECT_EQ(c.bytes, size * c.dispatches);
    EXPECT_LT(c.check(), c.tolerance);
  }
}

TEST(DispatchFloor, SpanAndRoundTripAreTimed) {
  Options o = sized({3});
  for (auto& c : cases_of("gpu.dispatch", o))
    if (c.version == "chain-1wg" || c.version == "submit-wait") {
      Result r = run_case(test::ctx(), c, o);
      EXPECT_GT(r.gpu_ms, 0) << c.version;
      EXPECT_EQ(r.timestamps, c.version == "chain-1wg" && test::ctx().features().timestamp_query);
    }
}

TEST(DispatchFit, RecoversTheTerms) {
  // t = 2 us + n x 4 us + bytes / 3 GB/s
  std::vector<Result> rs;
  for (double n : {1, 8, 64, 256})
    for (double b : {0.0, 1e6, 3e7}) rs.push_back(synthetic(n, b * n, (2 + 4 * n + b * n / 3e9 * 1e6) * 1e-3));
  auto f = fit_dispatches(rs);
  ASSERT_TRUE(f);
  EXPECT_NEAR(f->fixed_us, 2, 1e-6);
  EXPECT_NEAR(f->per_dispatch_us, 4, 1e-6);
  EXPECT_NEAR(f->bandwidth, 3e9, 1);
  EXPECT_LT(f->max_rel_residual, 1e-9);
}

// gpu.chain-read on the H200 (run A of session 9): bytes from 256 MiB to 2 GiB per run, times
// from 0.1 to 1 ms; the columns differ by 1e9 in scale and the fit must still be found.
TEST(DispatchFit, HoldsAtTheScaleOfBytes) {
  const double ms[] = {1.0074, 0.5493, 0.3316, 0.1961, 0.1301, 0.0987, 0.1543, 0.2700, 0.4999};
  std::vector<Result> rs;
  for (int i = 0; i < 9; ++i) {
    const double slice = double(1 << 20) * (1 << i), links = std::clamp(256.0 / (1 << i), 8.0, 256.0);
    rs.push_back(synthetic(links, slice * links, ms[i]));
  }
  auto f = fit_dispatches(rs);
  ASSERT_TRUE(f);
  EXPECT_NEAR(f->per_dispatch_us, 3.8, 0.1);
  EXPECT_NEAR(f->bandwidth * 1e-9, 4740, 50);
  EXPECT_LT(f->max_rel_residual, 0.06);
}

TEST(DispatchFit, LeavesOutBytesWhenThereAreNone) {
  std::vector<Result> rs = {synthetic(1, 0, 0.010), synthetic(16, 0, 0.070), synthetic(256, 0, 1.030)};
  auto f = fit_dispatches(rs);
  ASSERT_TRUE(f);
  EXPECT_NEAR(f->fixed_us, 6, 1e-6);
  EXPECT_NEAR(f->per_dispatch_us, 4, 1e-6);
  EXPECT_EQ(f->bandwidth, 0);
}

TEST(DispatchFit, RefusesWhatTheRunsCannotDetermine) {
  EXPECT_FALSE(fit_dispatches(std::vector<Result>{synthetic(8, 0, 0.04)}));
  // Every run the same count: the fixed and per-dispatch terms are one.
  EXPECT_FALSE(fit_dispatches(std::vector<Result>{synthetic(8, 0, 0.04), synthetic(8, 0, 0.041)}));
}

// WGC_MATMUL_SWEEP: each set is vec4-db2 again under its knobs ("vec4-db2 [KNOBS]", at the sizes
// "@N" names), checked like every case; a set this device cannot run is left out, a malformed one
// refused.
TEST(MatmulSweep, RunsEachSetThisDeviceCanRun) {
  // bm=512/bn=512: 4096 invocations, more than any device offers
  ASSERT_LT(test::ctx().limits().max_compute_invocations_per_workgroup, 4096u);
  ::setenv("WGC_MATMUL_SWEEP", "wn=4,two=1/pad=1@68,bm=512/bn=512", 1);
  const Options o = sized({68, 36});
  std::vector<std::string> names;
  for (auto& c : cases_of("matmul", o)) {
    if (!c.version.starts_with("vec4-db2 [")) continue;
    names.push_back(c.version + " " + c.size);
    EXPECT_LE(c.check(), c.tolerance) << c.version << " " << c.size;
  }
  ::unsetenv("WGC_MATMUL_SWEEP");
  for (const char* want : {"vec4-db2 [wn=4] 68^3", "vec4-db2 [wn=4] 36^3", "vec4-db2 [two=1/pad=1] 68^3"})
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
  for (const auto& n : names) EXPECT_EQ(n.find("bm=512"), std::string::npos) << n;
  EXPECT_EQ(std::find(names.begin(), names.end(), "vec4-db2 [two=1/pad=1] 36^3"), names.end());
  ::setenv("WGC_MATMUL_SWEEP", "wn=4,bogus=1", 1);
  EXPECT_THROW(cases_of("matmul", o), Error);
  ::unsetenv("WGC_MATMUL_SWEEP");
}

// WGC_BENCH_LINKS=3: each one-token F16 case (the plain matvec, QKV + RoPE with its norm, the o
// projection with the combine) records 3 links over 3 copies of its weights, timed as one span
// with 3 times the bytes of one, and its check (poisoned output, CPU reference) passes; anything
// but a count from 1 to 256 is an error naming the variable. Tuning sets give each case once per set;
// WGC_BENCH_SHAPES keeps the cases of the sizes it names.
TEST(MatvecLinks, EveryF16CaseChainsItsCopies) {
  // (the GPU machine's run may set both for the bench: this test sets its own)
  ::unsetenv("WGC_BENCH_LINKS");
  ::unsetenv("WGC_LLM_TUNING");
  ::unsetenv("WGC_BENCH_SHAPES");
  ::unsetenv("WGC_BENCH_LLM_VERSIONS");
  Options o = sized({256});
  o.versions = {"F16/subgroup", "F16/shared", "F16/qkv-rope-norm", "F16/combine-o"};
  std::vector<Case> one = cases_of("llm.matvec", o);
  ::setenv("WGC_BENCH_LINKS", "3", 1);
  std::vector<Case> three = cases_of("llm.matvec", o);
  ::unsetenv("WGC_BENCH_LINKS");
  ASSERT_EQ(one.size(), three.size());
  size_t seen = 0;
  for (size_t i = 0; i < three.size(); ++i) {
    const Case& c = three[i];
    if (std::find(o.versions.begin(), o.versions.end(), c.version) == o.versions.end()) continue;
    SCOPED_TRACE(c.version + " " + c.size);
    ++seen;
    EXPECT_EQ(one[i].timing, Timing::PerDispatch);
    EXPECT_EQ(c.timing, Timing::Span);
    EXPECT_EQ(c.dispatches, 3);
    EXPECT_EQ(c.bytes, 3 * one[i].bytes);
    EXPECT_LT(c.check(), c.tolerance);
    Batch b(test::ctx());
    c.record(b);
    EXPECT_EQ(b.freeze().dispatches(), 3u);
  }
  EXPECT_EQ(seen, o.versions.size());
  // Tuning sets (WGC_LLM_TUNING, ';' between sets): each case once per set, "VERSION [SET]"
  ::setenv("WGC_LLM_TUNING", "matvec_unroll=2;matvec_rows=1/swiglu_wg_rows=16", 1);
  std::vector<Case> sets = cases_of("llm.matvec", o);
  ::unsetenv("WGC_LLM_TUNING");
  ASSERT_EQ(sets.size(), 2 * one.size());
  for (const Case& c : sets) {
    if (c.version.find(" [") == std::string::npos) continue;
    SCOPED_TRACE(c.version + " " + c.size);
    EXPECT_TRUE(c.version.ends_with(" [matvec_unroll=2]") || c.version.ends_with(" [matvec_rows=1/swiglu_wg_rows=16]"));
    if (c.version.starts_with("F16/")) {
      EXPECT_LT(c.check(), c.tolerance);
    }
  }
  // WGC_BENCH_SHAPES: only the cases of those sizes are built (the QKV case's 512 x 256 here)
  ::setenv("WGC_BENCH_SHAPES", "512x256", 1);
  std::vector<Case> shaped = cases_of("llm.matvec", o);
  ::unsetenv("WGC_BENCH_SHAPES");
  ASSERT_EQ(shaped.size(), 1u);
  EXPECT_EQ(shaped[0].version, "F16/qkv-rope-norm");
  // WGC_BENCH_LLM_VERSIONS: --versions for the llm benches alone, each case once per set
  ::setenv("WGC_BENCH_LLM_VERSIONS", "F16/combine-o,F16/subgroup", 1);
  ::setenv("WGC_LLM_TUNING", "matvec_kx=2;matvec_kx=0", 1);
  std::vector<std::string> names;
  for (const Case& c : cases_of("llm.matvec", sized({256}))) names.push_back(c.version + " " + c.size);
  ::unsetenv("WGC_BENCH_LLM_VERSIONS");
  ::unsetenv("WGC_LLM_TUNING");
  EXPECT_EQ(names,
            (std::vector<std::string>{"F16/combine-o [matvec_kx=2] 256x256", "F16/combine-o [matvec_kx=0] 256x256",
                                      "F16/subgroup [matvec_kx=2] 256x256", "F16/subgroup [matvec_kx=0] 256x256"}));
  for (const char* bad : {"0", "257", "3x", "", "-1"}) {
    ::setenv("WGC_BENCH_LINKS", bad, 1);
    EXPECT_THROW(cases_of("llm.matvec", o), Error) << bad;
  }
  ::unsetenv("WGC_BENCH_LINKS");
}
