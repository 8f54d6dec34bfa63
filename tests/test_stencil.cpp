// Stencil ops: every kernel version against the CPU reference at awkward sizes, sigma edge cases,
// the host-image overloads and their CPU threshold, and the benchmark hook.
#include "cpu/stencil.h"
#include "io/image.h"
#include "ops/stencil.h"
#include "test_util.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

using namespace wgc;
using wgc::test::ctx;

namespace {

struct Size {
  int w, h;
};
const Size kSizes[] = {{1, 1}, {17, 5}, {65, 33}, {257, 130}};
const StencilVersion kVersions[] = {StencilVersion::Naive, StencilVersion::Tiled, StencilVersion::NaiveVec4,
                                    StencilVersion::TiledVec4};

Tensor poisoned(int w, int h, int c) {
  Tensor t = make_tensor(ctx(), {h, w, c});
  fill_u32(ctx(), t, kPoisonNaN);
  return t;
}

std::string what(StencilOp op, StencilVersion v, int w, int h, int c, float sigma = 0) {
  std::string s = std::string(to_string(op)) + "/" + std::string(to_string(v)) + " " + std::to_string(w) + "x" +
                  std::to_string(h) + "x" + std::to_string(c);
  if (op == StencilOp::GaussianBlur) s += " sigma " + std::to_string(sigma);
  return s;
}

// Runs version v of op on a random image and compares with the CPU reference.
void check_against_cpu(StencilOp op, StencilVersion v, int w, int h, int c, float sigma, uint32_t seed) {
  auto in = test::random_floats(size_t(w) * size_t(h) * size_t(c), seed, 0.f, 1.f);
  Tensor t = make_tensor(ctx(), {h, w, c}, in);
  Tensor out = poisoned(w, h, c);
  Batch b(ctx());
  std::vector<float> want;
  stencil(b, t, out, {op, w, h, c, sigma}, {}, v);
  want = op == StencilOp::Sobel ? cpu::sobel(in, w, h, c) : cpu::gaussian_blur(in, w, h, c, sigma);
  b.run();
  auto got = download<float>(ctx(), out);
  EXPECT_LT(test::rel_error(got, want), 2e-6) << what(op, v, w, h, c, sigma);
}

}  // namespace

TEST(StencilCpu, GaussianWeightsAreNormalizedSymmetricWithRadiusCeil3Sigma) {
  for (float sigma : {0.1f, 0.5f, 1.f, 1.34f, 2.5f, 7.f}) {
    auto w = cpu::gaussian_weights(sigma);
    int r = cpu::gaussian_radius(sigma);
    EXPECT_EQ(r, int(std::ceil(3.0 * double(sigma)))) << sigma;
    ASSERT_EQ(w.size(), size_t(2 * r + 1));
    double sum = 0;
    for (float x : w) sum += x;
    EXPECT_NEAR(sum, 1.0, 1e-6) << sigma;
    for (int k = 0; k < r; ++k) EXPECT_EQ(w[size_t(k)], w[size_t(2 * r - k)]);
    for (int k = 0; k < r; ++k) EXPECT_LT(w[size_t(k)], w[size_t(k + 1)]);
  }
  EXPECT_EQ(cpu::gaussian_weights(0.f), std::vector<float>{1.f});
}

TEST(StencilCpu, BadSigmaIsAnError) {
  EXPECT_THROW(cpu::gaussian_radius(-1.f), Error);
  EXPECT_THROW(cpu::gaussian_radius(NAN), Error);
  EXPECT_THROW(cpu::gaussian_radius(INFINITY), Error);
  EXPECT_THROW(cpu::gaussian_radius(float(cpu::kMaxBlurRadius)), Error);
  EXPECT_EQ(cpu::gaussian_radius(1365.f), 4095);
}

TEST(StencilCpu, SobelOfARampClampsAtTheEdges) {
  // f(x, y) = x: interior gx = 4 * (f(x+1) - f(x-1)) = 8; at the clamped edges 4; gy = 0.
  const int w = 6, h = 4;
  std::vector<float> img(w * h);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) img[size_t(y * w + x)] = float(x);
  auto s = cpu::sobel(img, w, h, 1);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) EXPECT_EQ(s[size_t(y * w + x)], (x == 0 || x == w - 1) ? 4.f : 8.f) << x << "," << y;
}

TEST(StencilCpu, BlurKeepsAConstantImageAndSumsOfAnImpulse) {
  const int w = 9, h = 7;
  std::vector<float> flat(w * h * 3, 0.25f);
  for (float v : cpu::gaussian_blur(flat, w, h, 3, 1.5f)) EXPECT_NEAR(v, 0.25f, 1e-6f);
  std::vector<float> impulse(w * h, 0.f);
  impulse[size_t(3 * w + 4)] = 1.f;  // far enough from the edges for sigma 0.6 (radius 2)
  auto b = cpu::gaussian_blur(impulse, w, h, 1, 0.6f);
  double sum = 0;
  for (float v : b) sum += v;
  EXPECT_NEAR(sum, 1.0, 1e-6);
  auto wt = cpu::gaussian_weights(0.6f);
  EXPECT_NEAR(b[size_t(3 * w + 4)], wt[2] * wt[2], 1e-7);
}

TEST(Stencil, VersionsParseAndName) {
  for (auto v : kVersions) EXPECT_EQ(parse_stencil_version(to_string(v)), v);
  EXPECT_EQ(parse_stencil_version("auto"), StencilVersion::Auto);
  EXPECT_THROW(parse_stencil_version("fast"), Error);
}

TEST(Stencil, SobelEveryVersionMatchesCpuAtAwkwardSizes) {
  uint32_t seed = 1;
  for (auto v : kVersions)
    for (int c : {1, 3, 4}) {
      if (!supports(ctx(), v, {StencilOp::Sobel, 8, 8, c})) continue;
      for (auto s : kSizes) check_against_cpu(StencilOp::Sobel, v, s.w, s.h, c, 0.f, seed++);
    }
}

TEST(Stencil, BlurEveryVersionMatchesCpuAtAwkwardSizes) {
  uint32_t seed = 100;
  for (auto v : kVersions)
    for (int c : {1, 3, 4}) {
      if (!supports(ctx(), v, {StencilOp::GaussianBlur, 8, 8, c, 1.5f})) continue;
      for (auto s : kSizes) check_against_cpu(StencilOp::GaussianBlur, v, s.w, s.h, c, 1.5f, seed++);
    }
}

TEST(Stencil, OtherConfigsMatchCpu) {
  // Workgroup shapes and outputs per thread other than the defaults (odd ones on purpose).
  const StencilShape shapes[] = {{8, 4, 3}, {4, 16, 2}, {32, 1, 1}, {16, 8, 5}};
  uint32_t seed = 500;
  for (const auto& sh : shapes) {
    StencilConfig cfg;
    cfg.sobel_naive = cfg.sobel_tiled = cfg.sobel_tiled_vec4 = cfg.blur_naive = cfg.blur_tiled_h = cfg.blur_tiled_v =
        cfg.blur_tiled_h_vec4 = cfg.blur_tiled_v_vec4 = sh;
    for (auto v : kVersions)
      for (int c : {1, 4})
        for (auto sz : {Size{17, 5}, Size{65, 33}}) {
          for (auto op : {StencilOp::Sobel, StencilOp::GaussianBlur}) {
            if (!supports(ctx(), v, {op, sz.w, sz.h, c, 1.1f}, cfg)) continue;
            auto in = test::random_floats(size_t(sz.w) * size_t(sz.h) * size_t(c), seed++, 0.f, 1.f);
            Tensor t = make_tensor(ctx(), {sz.h, sz.w, c}, in), out = poisoned(sz.w, sz.h, c);
            Batch b(ctx());
            std::vector<float> want;
            stencil(b, t, out, {op, sz.w, sz.h, c, 1.1f}, cfg, v);
            want = op == StencilOp::Sobel ? cpu::sobel(in, sz.w, sz.h, c) : cpu::gaussian_blur(in, sz.w, sz.h, c, 1.1f);
            b.run();
            EXPECT_LT(test::rel_error(download<float>(ctx(), out), want), 2e-6)
                << what(op, v, sz.w, sz.h, c, 1.1f) << " config " << sh.x << "x" << sh.y << "x" << sh.per;
          }
        }
  }
  StencilConfig too_big;
  too_big.sobel_naive = {1024, 1024, 1};
  Tensor t = make_tensor(ctx(), {5, 17, 1});
  Batch b(ctx());
  EXPECT_THROW(
      stencil(b, t, make_tensor(ctx(), {5, 17, 1}), {StencilOp::Sobel, 17, 5, 1}, too_big, StencilVersion::Naive),
      LimitError);
}

TEST(Stencil, BlurSigmaEdgeCases) {
  // sigma 0: the identity, exactly. Tiny sigma: radius 1 with outer weights ~0.
  // A radius larger than the image: clamping reads the edge pixels many times.
  for (auto v : kVersions) {
    if (!supports(ctx(), v, {StencilOp::GaussianBlur, 17, 5, 4, 0.f})) continue;
    auto in = test::random_floats(17 * 5 * 4, 7, 0.f, 1.f);
    Tensor t = make_tensor(ctx(), {5, 17, 4}, in);
    EXPECT_EQ(download<float>(ctx(), gaussian_blur(ctx(), t, 17, 5, 4, 0.f, v)), in) << to_string(v);
    for (float sigma : {0.01f, 0.33f, 0.34f, 9.f})
      if (supports(ctx(), v, {StencilOp::GaussianBlur, 17, 5, 4, sigma}))
        check_against_cpu(StencilOp::GaussianBlur, v, 17, 5, 4, sigma, 9);
  }
  Tensor t = make_tensor(ctx(), {1, 1, 1}, std::vector<float>{0.5f});
  EXPECT_THROW(gaussian_blur(ctx(), t, 1, 1, 1, -0.5f), Error);
  EXPECT_THROW(gaussian_blur(ctx(), t, 1, 1, 1, NAN), Error);
}

TEST(Stencil, HugeRadiusFallsBackToNaiveAndTiledSaysWhy) {
  // A halo too big for workgroup memory: Auto picks the naive kernel, asking for tiled is an error
  // naming the limit.
  float sigma = 0.f;
  for (float s = 4.f; s < 1000.f; s *= 1.5f)
    if (!supports(ctx(), StencilVersion::Tiled, {StencilOp::GaussianBlur, 17, 5, 1, s})) {
      sigma = s;
      break;
    }
  ASSERT_GT(sigma, 0.f);
  auto auto_name = [](StencilOp op, int c, float sg) { return to_string(choose_stencil(ctx(), {op, 17, 5, c, sg})); };
  EXPECT_EQ(auto_name(StencilOp::GaussianBlur, 1, sigma), "naive");
  EXPECT_EQ(auto_name(StencilOp::GaussianBlur, 4, sigma), "naive_vec4");
  // Tiled on a GPU, naive on a CPU adapter (SwiftShader's barriers are slow); vec4: naive.
  bool cpu = ctx().adapter().is_cpu();
  EXPECT_EQ(auto_name(StencilOp::GaussianBlur, 3, 1.f), cpu ? "naive" : "tiled");
  EXPECT_EQ(auto_name(StencilOp::GaussianBlur, 4, 1.f), "naive_vec4");
  EXPECT_EQ(auto_name(StencilOp::Sobel, 4, 0.f), "naive_vec4");
  EXPECT_EQ(auto_name(StencilOp::Sobel, 1, 0.f), cpu ? "naive" : "tiled");
  Tensor t = make_tensor(ctx(), {5, 17, 1}, test::random_floats(85, 3, 0.f, 1.f));
  try {
    gaussian_blur(ctx(), t, 17, 5, 1, sigma, StencilVersion::Tiled);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("maxComputeWorkgroupStorageSize"), std::string::npos) << e.what();
  }
  check_against_cpu(StencilOp::GaussianBlur, StencilVersion::Auto, 17, 5, 1, sigma, 11);
}

TEST(Stencil, BadArgumentsAreClearErrors) {
  Tensor t = make_tensor(ctx(), {5, 17, 3});
  EXPECT_THROW(sobel(ctx(), t, 17, 5, 4), Error);  // too few values
  EXPECT_THROW(sobel(ctx(), t, 17, 5, 5), Error);  // channels
  EXPECT_THROW(sobel(ctx(), t, 0, 5, 1), Error);
  EXPECT_THROW(sobel(ctx(), t.view({85}, DType::U32), 17, 5, 1), Error);
  try {
    sobel(ctx(), t, 17, 5, 3, StencilVersion::TiledVec4);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("4 channels"), std::string::npos) << e.what();
  }
  Batch b(ctx());
  EXPECT_THROW(stencil(b, t, make_tensor(ctx(), {5, 16, 3}), {StencilOp::GaussianBlur, 17, 5, 3, 1.f}),
               Error);  // out too small
}

TEST(Stencil, CpuThresholdResolvesPolicyThenEnvThenDefault) {
  unsetenv("WGC_CPU_BELOW_SOBEL");
  unsetenv("WGC_CPU_BELOW_BLUR");
  bool cpu = ctx().adapter().is_cpu();
  using thresholds::kBlur, thresholds::kSobel;
  EXPECT_EQ(cpu_below(ctx(), kSobel), cpu ? kSobel.cpu_adapter : kSobel.gpu_adapter);
  EXPECT_EQ(cpu_below(ctx(), kBlur), cpu ? kBlur.cpu_adapter : kBlur.gpu_adapter);
  EXPECT_FALSE(cpu_below_override(kSobel).has_value());
  EXPECT_EQ(cpu_below(ctx(), kSobel, Policy{7}), 7u);
  setenv("WGC_CPU_BELOW_BLUR", "123", 1);
  EXPECT_EQ(cpu_below(ctx(), kBlur), 123u);
  EXPECT_EQ(cpu_below(ctx(), kBlur, Policy{0}), 0u);
  EXPECT_TRUE(run_on_cpu(ctx(), kBlur, {}, 122));
  EXPECT_FALSE(run_on_cpu(ctx(), kBlur, {}, 123));
  for (const char* bad : {"lots", "-5", "12x", " 5", "+5", "99999999999999999999999"}) {
    setenv("WGC_CPU_BELOW_BLUR", bad, 1);
    try {
      cpu_below(ctx(), kBlur);
      ADD_FAILURE() << "no error for " << bad;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("WGC_CPU_BELOW_BLUR"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("pixels"), std::string::npos) << e.what();
    }
  }
  unsetenv("WGC_CPU_BELOW_BLUR");
}

TEST(Stencil, RequestedVersionRunsOnTheGpuOrFails) {
  // Far below the CPU threshold: Auto takes the CPU, a named version still runs its kernel.
  Image img(9, 7, 1);
  auto noise = test::random_floats(img.data.size(), 5, 0.f, 255.f);
  for (size_t i = 0; i < noise.size(); ++i) img.data[i] = uint8_t(noise[i]);
  Policy cpu_only{int64_t(1) << 40};
  Image want = sobel_on_cpu(img);
  for (auto v : {StencilVersion::Naive, StencilVersion::Tiled}) {
    Image got = sobel(ctx(), img, cpu_only, v);
    ASSERT_EQ(got.data.size(), want.data.size());
    for (size_t i = 0; i < got.data.size(); ++i) ASSERT_LE(std::abs(int(got.data[i]) - int(want.data[i])), 1) << i;
  }
  // A version the input cannot run is an error, not the CPU: Sobel runs on 1 channel of luma.
  EXPECT_THROW(sobel(ctx(), img, cpu_only, StencilVersion::TiledVec4), Error);
}

TEST(Stencil, HostImageGpuAndCpuPathsAgree) {
  for (int c : {1, 3, 4}) {
    Image img(37, 21, c);
    auto noise = test::random_floats(img.data.size(), uint32_t(c), 0.f, 255.f);
    for (size_t i = 0; i < noise.size(); ++i) img.data[i] = uint8_t(noise[i]);
    Policy gpu{0}, cpu_only{int64_t(1) << 40};
    Image a = gaussian_blur(ctx(), img, 1.2f, gpu), b = gaussian_blur(ctx(), img, 1.2f, cpu_only);
    ASSERT_EQ(a.channels, c);
    ASSERT_EQ(a.data.size(), b.data.size());
    for (size_t i = 0; i < a.data.size(); ++i) ASSERT_LE(std::abs(int(a.data[i]) - int(b.data[i])), 1) << i;
    Image s = sobel(ctx(), img, gpu), t = sobel(ctx(), img, cpu_only);
    ASSERT_EQ(s.channels, 1);
    for (size_t i = 0; i < s.data.size(); ++i) ASSERT_LE(std::abs(int(s.data[i]) - int(t.data[i])), 1) << i;
  }
}

// The float host overloads: the device path (every version that runs the channel count, RGB
// through RGBA for the vec4 ones) against the CPU reference, and bad sizes named.
TEST(Stencil, HostFloatGpuPathMatchesCpu) {
  const int w = 29, h = 13;
  for (int c : {1, 3, 4}) {
    auto img = test::random_floats(size_t(w) * h * size_t(c), uint32_t(40 + c), 0.f, 1.f);
    for (StencilVersion v : {StencilVersion::Auto, StencilVersion::Naive, StencilVersion::NaiveVec4}) {
      if (c == 1 && v == StencilVersion::NaiveVec4) continue;
      const Policy gpu{0};
      EXPECT_LT(test::rel_error(sobel(ctx(), img, w, h, c, gpu, v), cpu::sobel(img, w, h, c)), 2e-6)
          << c << " " << to_string(v);
      EXPECT_LT(
          test::rel_error(gaussian_blur(ctx(), img, w, h, c, 1.5f, gpu, v), cpu::gaussian_blur(img, w, h, c, 1.5f)),
          2e-6)
          << c << " " << to_string(v);
    }
  }
  std::vector<float> img(10);
  EXPECT_THROW(sobel(ctx(), img, 3, 3, 1), Error);                // 9 values expected
  EXPECT_THROW(sobel(ctx(), img, 5, 2, 0), Error);                // no channels
  EXPECT_THROW(gaussian_blur(ctx(), img, 5, 2, 1, -1.f), Error);  // bad sigma
}

TEST(Stencil, BenchHookVariantsRunAndBytesAreCounted) {
  auto vs = stencil_variants();
  ASSERT_EQ(vs.size(), 8u);
  EXPECT_EQ(vs[0].name, "sobel/naive");
  EXPECT_EQ(vs[7].name, "blur/tiled_vec4");
  for (auto& v : vs) {
    StencilDims p{v.op, 33, 19, 4, 1.3f};
    ASSERT_TRUE(v.supports(ctx(), p)) << v.name;
    StencilCall call = v.prepare(ctx(), p);
    fill_u32(ctx(), call.output, kPoisonNaN);
    Batch b(ctx());
    call.record(b);
    call.record(b);  // twice in one batch: the same result
    b.run();
    EXPECT_LT(test::rel_error(download<float>(ctx(), call.output), stencil_cpu(p, call.host_input)), 2e-6) << v.name;
  }
  EXPECT_FALSE(vs[2].supports(ctx(), {StencilOp::Sobel, 8, 8, 3}));
  EXPECT_EQ(stencil_bytes_moved({StencilOp::Sobel, 10, 20, 4}), 2u * 10 * 20 * 4 * 4);
  EXPECT_EQ(stencil_bytes_moved({StencilOp::GaussianBlur, 10, 20, 1}), 4u * 10 * 20 * 4);
}

// How thresholds::kSobel and kBlur were measured: the host-image blur (sigma 2) and Sobel, RGB, at square
// sizes, GPU path (upload, dispatch, download) vs CPU path, best of several runs. Run with
//   test_stencil --gtest_also_run_disabled_tests --gtest_filter='*MeasureCpuThreshold*'
TEST(Stencil, DISABLED_MeasureCpuThreshold) {
  using clock = std::chrono::steady_clock;
  auto best_ms = [](auto&& f) {
    double best = 1e30;
    for (int i = 0; i < 7; ++i) {
      auto t0 = clock::now();
      f();
      best = std::min(best, std::chrono::duration<double, std::milli>(clock::now() - t0).count());
    }
    return best;
  };
  std::printf("adapter: %s\n%8s %10s %10s %10s %10s\n", ctx().adapter().description.c_str(), "side", "blur gpu",
              "blur cpu", "sobel gpu", "sobel cpu");
  std::vector<int> sides{8, 16, 32, 64, 128, 256, 512, 1024};
  if (const char* e = std::getenv("SIDES")) {
    sides.clear();
    for (const char* q = e; *q;) {
      char* end = nullptr;
      sides.push_back(int(std::strtol(q, &end, 10)));
      q = *end ? end + 1 : end;
    }
  }
  for (int side : sides) {
    Image img(side, side, 3);
    auto noise = test::random_floats(img.data.size(), 5, 0.f, 255.f);
    for (size_t i = 0; i < noise.size(); ++i) img.data[i] = uint8_t(noise[i]);
    Policy gpu{0}, cpu_only{int64_t(1) << 40};
    double bg = best_ms([&] { gaussian_blur(ctx(), img, 2.f, gpu); });
    double bc = best_ms([&] { gaussian_blur(ctx(), img, 2.f, cpu_only); });
    double sg = best_ms([&] { sobel(ctx(), img, gpu); });
    double sc = best_ms([&] { sobel(ctx(), img, cpu_only); });
    std::printf("%8d %10.3f %10.3f %10.3f %10.3f\n", side, bg, bc, sg, sc);
  }
}

namespace {

// Median GPU time per dispatch slot of one call (1 slot for Sobel, 2 for the blur's passes), from
// timestamp queries over `reps` calls in one batch; wall-clock per call where there are none.
std::vector<double> call_times(const StencilCall& call, size_t slots, int reps) {
  bool ts = ctx().features().timestamp_query;
  std::vector<std::vector<double>> per(slots);
  for (int round = 0; round < 3; ++round) {
    Batch b(ctx(), ts);
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < reps; ++i) call.record(b);
    b.run();
    double wall = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (round == 0) continue;  // warm-up
    if (ts)
      for (size_t i = 0; i < b.timings().size(); ++i) per[i % slots].push_back(b.timings()[i].ms);
    else
      per[0].push_back(wall / reps);
  }
  std::vector<double> out;
  for (auto& v : per) {
    if (v.empty()) continue;
    std::sort(v.begin(), v.end());
    out.push_back(v[v.size() / 2]);
  }
  return out;
}

// A second of work so the GPU's clocks are up before the first measurement.
void warm_up(int side, float sigma) {
  StencilDims p{StencilOp::GaussianBlur, side, side, 4, sigma};
  StencilCall call = stencil_variants()[5].prepare(ctx(), p);
  auto t0 = std::chrono::steady_clock::now();
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < 1.0) {
    Batch b(ctx());
    for (int i = 0; i < 10; ++i) call.record(b);
    b.run();
  }
}

double total(const std::vector<double>& v) {
  double t = 0;
  for (double x : v) t += x;
  return t;
}

}  // namespace

// Per-version kernel times through the benchmark hook (a quick look; `wgc bench` does it properly).
//   SIDE=4096 test_stencil --gtest_also_run_disabled_tests --gtest_filter='*VersionTimes*'
TEST(Stencil, DISABLED_VersionTimes) {
  int side = std::getenv("SIDE") ? std::atoi(std::getenv("SIDE")) : 256;
  float sigma = std::getenv("SIGMA") ? float(std::atof(std::getenv("SIGMA"))) : 2.f;
  int reps = ctx().adapter().is_cpu() ? 3 : 30;
  if (!ctx().adapter().is_cpu()) warm_up(side, sigma);
  std::printf("adapter: %s, %dx%d, sigma %g, %s\n", ctx().adapter().description.c_str(), side, side, double(sigma),
              ctx().features().timestamp_query ? "timestamps" : "wall clock");
  for (int c : {1, 3, 4})
    for (auto& v : stencil_variants()) {
      StencilDims p{v.op, side, side, c, sigma};
      if (!v.supports(ctx(), p)) continue;
      StencilCall call = v.prepare(ctx(), p);
      auto t = call_times(call, v.op == StencilOp::Sobel ? 1 : 2, reps);
      std::printf("%-18s c=%d %9.4f ms %9.1f GB/s  (passes:", v.name.c_str(), c, total(t),
                  double(stencil_bytes_moved(p)) / total(t) / 1e6);
      for (double x : t) std::printf(" %.4f", x);
      std::printf(")\n");
    }
}

// Sweeps the workgroup shapes of every kernel (StencilConfig) and prints the time of each.
//   SIDE=4096 SHAPES=16x16x1,64x4x2 ROUNDS=2 test_stencil --gtest_also_run_disabled_tests
//   --gtest_filter='*TuneConfigs*'
TEST(Stencil, DISABLED_TuneConfigs) {
  int side = std::getenv("SIDE") ? std::atoi(std::getenv("SIDE")) : 256;
  float sigma = std::getenv("SIGMA") ? float(std::atof(std::getenv("SIGMA"))) : 2.f;
  int rounds = std::getenv("ROUNDS") ? std::atoi(std::getenv("ROUNDS")) : 1;
  int reps = ctx().adapter().is_cpu() ? 2 : 30;
  std::vector<StencilShape> shapes{{16, 16, 1}, {32, 8, 1}, {64, 4, 1},  {128, 2, 1}, {256, 1, 1}, {32, 8, 2},
                                   {32, 8, 4},  {64, 4, 2}, {64, 4, 4},  {16, 16, 2}, {16, 16, 4}, {32, 16, 1},
                                   {32, 16, 2}, {64, 8, 2}, {32, 32, 1}, {128, 4, 2}, {128, 8, 1}, {32, 8, 8}};
  if (const char* e = std::getenv("SHAPES")) {
    shapes.clear();
    for (const char* q = e; *q;) {
      StencilShape sh;
      int n = 0;
      if (std::sscanf(q, "%ux%ux%u%n", &sh.x, &sh.y, &sh.per, &n) != 3) break;
      shapes.push_back(sh);
      q += n;
      if (*q == ',') ++q;
    }
  }
  uint32_t max_inv = ctx().limits().max_compute_invocations_per_workgroup;
  std::printf("adapter: %s, %dx%d, sigma %g\n", ctx().adapter().description.c_str(), side, side, double(sigma));
  warm_up(side, sigma);
  for (int round = 0; round < rounds; ++round)
    for (int c : {1, 4})
      for (auto& v : stencil_variants()) {
        bool tiled = v.version == StencilVersion::Tiled || v.version == StencilVersion::TiledVec4;
        for (auto& sh : shapes) {
          if (sh.x * sh.y > max_inv || (!tiled && sh.per != 1)) continue;
          StencilConfig cfg;
          cfg.sobel_naive = cfg.sobel_tiled = cfg.sobel_tiled_vec4 = cfg.blur_naive = cfg.blur_tiled_h =
              cfg.blur_tiled_v = cfg.blur_tiled_h_vec4 = cfg.blur_tiled_v_vec4 = sh;
          StencilDims p{v.op, side, side, c, sigma};
          if (!v.supports(ctx(), p, cfg)) continue;
          StencilCall call = v.prepare(ctx(), p, 1, cfg);
          auto t = call_times(call, v.op == StencilOp::Sobel ? 1 : 2, reps);
          std::printf("TUNE r%d %-18s c=%d %3ux%-3u per %u:", round, v.name.c_str(), c, sh.x, sh.y, sh.per);
          for (double x : t) std::printf(" %9.4f", x);
          std::printf("\n");
        }
      }
}
