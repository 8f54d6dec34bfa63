// Every convolution version against the CPU reference at awkward shapes (odd sizes, channels not
// a multiple of 4, stride 2, asymmetric padding, dilation, groups, batch > 1), every epilogue,
// the output poisoned first; BatchNorm folding; the prepared-layer and host-memory APIs; errors.
#include "cpu/conv.h"
#include "ops/conv.h"
#include "test_util.h"

#include <limits>

using namespace wgc;
using wgc::test::ctx;

namespace {

Conv2dDims dims(uint32_t n, uint32_t ci, uint32_t h, uint32_t w, uint32_t co, uint32_t k_h, uint32_t k_w, uint32_t s_h,
                uint32_t s_w, uint32_t dil, uint32_t g, uint32_t pt, uint32_t pl, uint32_t pb, uint32_t pr) {
  Conv2dDims d;
  d.n = n, d.c_in = ci, d.h = h, d.w = w, d.c_out = co, d.kh = k_h, d.kw = k_w, d.stride_h = s_h, d.stride_w = s_w;
  d.dil_h = d.dil_w = dil, d.groups = g, d.pad_top = pt, d.pad_left = pl, d.pad_bottom = pb, d.pad_right = pr;
  return d;
}

// Small (SwiftShader is slow) but awkward; the last ones cross the GEMM tiles (64 x 128).
const Conv2dDims kCases[] = {
    dims(2, 3, 9, 11, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1),     // 3x3 "same"
    dims(1, 6, 13, 7, 10, 3, 3, 2, 2, 1, 2, 1, 0, 0, 1),    // stride 2, groups 2, asymmetric pads
    dims(3, 5, 10, 12, 7, 3, 3, 1, 1, 2, 1, 2, 2, 2, 2),    // dilation 2
    dims(2, 8, 9, 9, 8, 3, 3, 1, 1, 1, 8, 1, 1, 1, 1),      // depthwise
    dims(1, 4, 11, 9, 12, 3, 3, 2, 2, 1, 4, 1, 1, 1, 1),    // depthwise, multiplier 3, stride 2
    dims(2, 6, 10, 9, 6, 5, 5, 1, 2, 1, 6, 2, 1, 2, 2),     // depthwise 5x5, stride (1, 2)
    dims(2, 17, 7, 9, 9, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0),     // pointwise
    dims(1, 3, 15, 17, 6, 5, 5, 2, 1, 1, 1, 2, 1, 0, 2),    // 5x5, stride (2, 1)
    dims(2, 19, 12, 10, 21, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1),  // Winograd-shaped, 3 ragged tiles
    dims(1, 7, 13, 11, 5, 3, 3, 1, 1, 1, 1, 0, 2, 1, 0),    // Winograd-shaped, asymmetric pads
    dims(1, 2, 5, 6, 3, 1, 7, 1, 1, 1, 1, 0, 3, 0, 3),      // 1x7
    dims(1, 6, 8, 8, 4, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0),      // 1x1 stride 2
    dims(2, 33, 9, 11, 70, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1),   // c_out past one 64-row tile, K = 297
    dims(3, 9, 7, 7, 70, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1),     // the same, cheaper (tile tests)
    dims(1, 40, 9, 15, 24, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0),   // pointwise, K a multiple of 4
};

// A different epilogue for each case, so every version meets each kind.
ConvEpilogue epilogue_for(size_t i) {
  ConvEpilogue ep;
  switch (i % 5) {
    case 0: ep.bias = true, ep.act = Activation::Relu; break;
    case 1: ep.residual = true, ep.act = Activation::Relu6; break;
    case 2: ep.bias = ep.residual = true, ep.act = Activation::Clip, ep.clip_min = -0.3f, ep.clip_max = 0.4f; break;
    case 3: break;
    case 4: ep.bias = true; break;
  }
  return ep;
}

double tolerance(Conv2dVersion v, const Conv2dDims& d) {
  double k = double(d.c_in / d.groups) * d.kh * d.kw;
  // f32 sums of k products: relative error grows like sqrt(k) * eps. Winograd's transforms add a
  // few roundings of larger intermediates (docs/cnn.md).
  return (v == Conv2dVersion::Winograd2x2 ? 1e-4 : 1e-5) * (1 + std::sqrt(k));
}

struct Data {
  std::vector<float> x, w, bias, res, want;
};

Data make_run(const Conv2dDims& d, const ConvEpilogue& ep, uint32_t seed) {
  Data r;
  r.x = test::random_floats(d.x_elements(), seed);
  r.w = test::random_floats(d.w_elements(), seed + 1);
  r.bias = test::random_floats(d.c_out, seed + 2);
  r.res = test::random_floats(d.y_elements(), seed + 3);
  r.want.resize(d.y_elements());
  cpu::conv2d_reference(r.x, r.w, r.bias, r.res, r.want, d, ep);
  return r;
}

std::vector<float> run_gpu(const Data& r, const Conv2dDims& d, const ConvEpilogue& ep, Conv2dVersion v) {
  Tensor tx = make_tensor(ctx(), {int64_t(r.x.size())}, r.x);
  Tensor tw = make_tensor(ctx(), {int64_t(r.w.size())}, r.w);
  Tensor tb = make_tensor(ctx(), {int64_t(r.bias.size())}, r.bias);
  Tensor tr = make_tensor(ctx(), {int64_t(r.res.size())}, r.res);
  Tensor ty = make_tensor(ctx(), {int64_t(d.y_elements())});
  fill_u32(ctx(), ty, kPoisonNaN);
  Batch b(ctx());
  conv2d(b, tx, tw, ep.bias ? tb : Tensor{}, ep.residual ? tr : Tensor{}, ty, d, ep, v);
  b.run();
  return download<float>(ctx(), ty);
}

}  // namespace

class Conv2dVersions : public ::testing::TestWithParam<Conv2dVersion> {};

TEST_P(Conv2dVersions, MatchReferenceAtAwkwardShapes) {
  Conv2dVersion v = GetParam();
  int ran = 0;
  for (size_t i = 0; i < std::size(kCases); ++i) {
    const Conv2dDims& d = kCases[i];
    if (!supports(ctx(), v, d)) continue;
    ConvEpilogue ep = epilogue_for(i + size_t(v));
    Data r = make_run(d, ep, uint32_t(i * 10 + 1));
    auto got = run_gpu(r, d, ep, v);
    EXPECT_LT(test::rel_error(got, r.want), tolerance(v, d)) << to_string(v) << " " << d.str() << " case " << i;
    ++ran;
  }
  EXPECT_GT(ran, 0) << to_string(v) << " ran none of the cases";
}

INSTANTIATE_TEST_SUITE_P(All, Conv2dVersions, ::testing::ValuesIn(kConv2dVersions), [](const auto& param_info) {
  std::string s(to_string(param_info.param));
  for (auto& ch : s)
    if (ch == '-') ch = '_';
  return s;
});

// WGC_CONV_TUNING's text: known keys set their fields; an unknown key (a prefix of one too), a
// missing, non-numeric or too large value is an error.
TEST(Conv2d, TuningTextSetsTheNamedKnobs) {
  const ConvTuning t = parse_conv2d_tuning("igemm_bm=128,dw_rows=3");
  EXPECT_EQ(t.igemm_bm, 128u);
  EXPECT_EQ(t.dw_rows, 3u);
  EXPECT_EQ(t.igemm_bn, ConvTuning{}.igemm_bn);
  for (const char* bad : {"igemm_b=1", "igemm_bm=", "igemm_bm=x", "igemm_bm=2000000", "igemm_bm"})
    EXPECT_THROW(parse_conv2d_tuning(bad), Error) << bad;
}

// The tile knobs (WGC_CONV_TUNING) change the kernels' shapes: every version under other tiles
// than the defaults (which the test above runs), with and without split K.
TEST(Conv2d, OtherTilesMatch) {
  ConvTuning saved = conv2d_tuning();
  struct Tiles {
    uint32_t bm, bn, bk, tm, prefetch;
  };
  const Tiles gemm[] = {{64, 128, 8, 8, 1}, {64, 128, 8, 8, 0}, {32, 64, 16, 4, 1}};
  int ran = 0;
  for (size_t t = 0; t < std::size(gemm); ++t) {
    ConvTuning& k = conv2d_tuning();
    k = saved;
    k.igemm_bm = k.wino_bm = gemm[t].bm, k.igemm_bn = k.wino_bn = gemm[t].bn, k.igemm_bk = k.wino_bk = gemm[t].bk;
    k.igemm_tm = k.wino_tm = gemm[t].tm, k.igemm_prefetch = k.wino_prefetch = gemm[t].prefetch;
    // Tiles 1 and 2 split K (into slices of 8 or 16 k, ragged at the end) and narrow BN to fill a
    // grid that can never be full; tile 0 does neither.
    k.igemm_min_workgroups = t == 0 ? 0 : 1u << 20;
    k.igemm_split_k = t == 0 ? 0 : 8;
    k.tiled_w = 8 + uint32_t(t), k.tiled_h = 3 + uint32_t(t), k.tiled_cout = 16 - 3 * uint32_t(t),
    k.tiled_cin = 1 + uint32_t(t);
    k.dw_tile_w = 7 + 4 * uint32_t(t), k.dw_tile_h = 5 + uint32_t(t), k.dw_threads = 32u << (t % 3);
    k.dw_rows = 1 + 2 * uint32_t(t);
    for (size_t i : {4, 5, 8, 14}) {
      const Conv2dDims& d = kCases[i];
      for (Conv2dVersion v : kConv2dVersions) {
        if (v == Conv2dVersion::Direct || v == Conv2dVersion::Im2colGemm || !supports(ctx(), v, d)) continue;
        ConvEpilogue ep = epilogue_for(i + t);
        Data r = make_run(d, ep, uint32_t(i + 7 * t));
        EXPECT_LT(test::rel_error(run_gpu(r, d, ep, v), r.want), tolerance(v, d))
            << to_string(v) << " " << d.str() << " tiles " << t;
        ++ran;
      }
    }
  }
  conv2d_tuning() = saved;
  EXPECT_GT(ran, 9);
}

// depthwise-reg under every kind of block: vec4 rows (widths multiples of 4, paddings 0, 1, 2 so
// the row's first column falls at each place in its block) and scalar ones (stride 2, odd widths,
// blocks that are not a multiple of 4 wide), ragged blocks at the right and bottom edges, odd
// heights, channel counts that are not multiples of 4, channel multipliers; rows stored as they
// complete, or (shuffled blocks) at the end.
TEST(Conv2d, DepthwiseRegBlocksMatch) {
  const Conv2dDims shapes[] = {
      dims(2, 5, 11, 12, 5, 3, 3, 1, 1, 1, 5, 1, 1, 1, 1),  // vec4, odd height, 5 channels
      dims(1, 3, 9, 16, 6, 3, 3, 1, 1, 2, 3, 2, 2, 2, 2),   // vec4, dilation 2, pad 2, multiplier 2
      dims(1, 7, 7, 8, 7, 3, 3, 1, 1, 1, 7, 0, 1, 2, 1),    // vec4, asymmetric pads
      dims(1, 6, 6, 8, 6, 3, 3, 1, 1, 1, 6, 1, 0, 1, 2),    // vec4, pad_left 0
      dims(1, 4, 13, 12, 4, 3, 3, 2, 2, 1, 4, 1, 1, 1, 1),  // stride 2 (scalar rows)
      dims(2, 6, 10, 9, 6, 5, 5, 1, 2, 1, 6, 2, 1, 2, 2),   // 5x5, stride (1, 2), odd width
      dims(1, 3, 12, 20, 3, 5, 5, 1, 1, 1, 3, 2, 2, 2, 2),  // 5x5 vec4 (three blocks per row)
      dims(1, 3, 5, 5, 3, 3, 3, 1, 1, 1, 3, 1, 1, 1, 1),    // 75 outputs: the last vec4 of y partly past them
      dims(2, 3, 7, 24, 6, 3, 3, 1, 1, 1, 3, 1, 1, 1, 1),   // vec4, 6 blocks a row, multiplier 2
      dims(1, 2, 6, 4, 2, 3, 3, 1, 1, 1, 2, 2, 1, 0, 1),    // vec4, one block a row, pads 2 and 0
  };
  struct Block {
    uint32_t cols, rows, threads;
  };
  // Blocks of 4 columns take the columns beside their own vec4s from the lanes beside where the
  // window allows (3x3 with pad_left 1, vec4 rows, at most 8 input rows, workgroups of whole
  // subgroups: SwiftShader's subgroups of 4, so many blocks at a subgroup's ends or in another
  // strip load theirs; 1 to 8 input rows: one shuffle each way or two); 6 invocations (not whole
  // subgroups) and 16 rows (18 input rows) load them.
  const Block blocks[] = {{4, 2, 128}, {4, 4, 128}, {8, 3, 32}, {1, 1, 64}, {2, 5, 96},  {4, 1, 64},
                          {4, 2, 8},   {4, 3, 8},   {4, 6, 64}, {4, 8, 64}, {4, 16, 32}, {4, 2, 6}};
  ConvTuning saved = conv2d_tuning();
  int ran = 0;
  for (size_t b = 0; b < std::size(blocks); ++b) {
    ConvTuning& k = conv2d_tuning();
    k = saved;
    k.dwr_cols = blocks[b].cols, k.dwr_rows = blocks[b].rows, k.dwr_threads = blocks[b].threads;
    for (size_t i = 0; i < std::size(shapes); ++i) {
      const Conv2dDims& d = shapes[i];
      ASSERT_TRUE(supports(ctx(), Conv2dVersion::DepthwiseReg, d)) << d.str() << " block " << b;
      ConvEpilogue ep = epilogue_for(i + b);
      Data r = make_run(d, ep, uint32_t(3 * i + 11 * b));
      EXPECT_LT(test::rel_error(run_gpu(r, d, ep, Conv2dVersion::DepthwiseReg), r.want),
                tolerance(Conv2dVersion::DepthwiseReg, d))
          << d.str() << " block " << b;
      ++ran;
    }
  }
  // A block past the kernel's registers is unsupported, and asking for it an error.
  conv2d_tuning().dwr_cols = 16, conv2d_tuning().dwr_rows = 8;
  EXPECT_FALSE(supports(ctx(), Conv2dVersion::DepthwiseReg, shapes[0]));
  EXPECT_THROW(check_conv2d_tuning(ctx()), Error);
  conv2d_tuning() = saved;
  EXPECT_EQ(ran, int(std::size(blocks) * std::size(shapes)));
}

TEST(Conv2d, AutoPicksASupportedVersionAndMatches) {
  for (size_t i = 0; i < std::size(kCases); ++i) {
    const Conv2dDims& d = kCases[i];
    Conv2dVersion v = choose_conv2d(ctx(), d);
    EXPECT_NE(v, Conv2dVersion::Auto);
    EXPECT_TRUE(supports(ctx(), v, d)) << to_string(v) << " " << d.str();
  }
  ConvEpilogue ep = epilogue_for(2);
  Data r = make_run(kCases[8], ep, 5);
  EXPECT_LT(test::rel_error(run_gpu(r, kCases[8], ep, Conv2dVersion::Auto), r.want), 1e-3);
}

TEST(Conv2d, VersionNamesRoundTrip) {
  for (Conv2dVersion v : kConv2dVersions) EXPECT_EQ(parse_conv2d_version(to_string(v)), v);
  EXPECT_EQ(parse_conv2d_version("auto"), Conv2dVersion::Auto);
  try {
    parse_conv2d_version("fft");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("implicit-gemm"), std::string::npos) << e.what();
  }
}

TEST(Conv2d, PreparedLayerMatches) {
  for (size_t i : {0, 3, 8, 14}) {
    const Conv2dDims& d = kCases[i];
    ConvEpilogue ep = epilogue_for(i);
    ep.bias = true;
    Data r = make_run(d, ep, uint32_t(i + 100));
    PreparedConv layer = prepare_conv2d(ctx(), r.w, r.bias, d);
    EXPECT_NE(layer.version, Conv2dVersion::Auto);
    Tensor tx = make_tensor(ctx(), {int64_t(r.x.size())}, r.x);
    Tensor tr = make_tensor(ctx(), {int64_t(r.res.size())}, r.res);
    Tensor ty = make_tensor(ctx(), {int64_t(d.y_elements())});
    fill_u32(ctx(), ty, kPoisonNaN);
    Batch b(ctx());
    conv2d(b, layer, tx, ep.residual ? tr : Tensor{}, ty, ep);
    b.run();
    EXPECT_LT(test::rel_error(download<float>(ctx(), ty), r.want), tolerance(layer.version, d))
        << to_string(layer.version) << " " << d.str();
  }
}

TEST(Conv2d, HostApiTakesEitherPathWithTheSameResult) {
  const Conv2dDims& d = kCases[1];
  ConvEpilogue ep = epilogue_for(0);
  Data r = make_run(d, ep, 7);
  auto cpu = conv2d(ctx(), r.x, r.w, r.bias, {}, d, ep, Policy{INT64_MAX});
  auto gpu = conv2d(ctx(), r.x, r.w, r.bias, {}, d, ep, Policy{0});
  EXPECT_LT(test::rel_error(cpu, r.want), 1e-5);
  EXPECT_LT(test::rel_error(gpu, r.want), 1e-4);
}

TEST(Conv2d, FoldBatchnormEqualsConvThenBatchnorm) {
  const Conv2dDims& d = kCases[1];
  Data r = make_run(d, {.bias = true}, 9);
  auto scale = test::random_floats(d.c_out, 20), b = test::random_floats(d.c_out, 21);
  auto mean = test::random_floats(d.c_out, 22), var = test::random_floats(d.c_out, 23, 0.1f, 2.f);
  const float eps = 1e-5f;
  std::vector<float> want = r.want;  // conv + bias, then BatchNorm
  size_t plane = size_t(d.out_h()) * d.out_w();
  for (size_t i = 0; i < want.size(); ++i) {
    size_t c = (i / plane) % d.c_out;
    want[i] = float((want[i] - mean[c]) / std::sqrt(double(var[c]) + eps) * scale[c] + b[c]);
  }
  std::vector<float> w = r.w, bias = r.bias, got(d.y_elements());
  cpu::fold_batchnorm(w, bias, scale, b, mean, var, eps, d.c_out);
  cpu::conv2d_reference(r.x, w, bias, {}, got, d, {.bias = true});
  EXPECT_LT(test::rel_error(got, want), 1e-5);
  EXPECT_THROW(cpu::fold_batchnorm(w, bias, scale, b, mean, std::vector<float>(d.c_out, -1.f), 0, d.c_out), Error);
  EXPECT_THROW(cpu::fold_batchnorm(w, bias, scale, b, mean, var, eps, d.c_out + 1), Error);
}

TEST(Conv2d, CpuLoopMatchesReference) {
  for (size_t i = 0; i < std::size(kCases); ++i) {
    const Conv2dDims& d = kCases[i];
    ConvEpilogue ep = epilogue_for(i);
    Data r = make_run(d, ep, uint32_t(i + 50));
    std::vector<float> got(d.y_elements());
    cpu::conv2d(r.x, r.w, r.bias, r.res, got, d, ep);
    EXPECT_LT(test::rel_error(got, r.want), tolerance(Conv2dVersion::Direct, d)) << d.str();
  }
}

TEST(Conv2d, BadInputIsAnErrorNamingIt) {
  auto expect_error = [](auto f, const char* what) {
    try {
      f();
      ADD_FAILURE() << "no error for " << what;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  Conv2dDims d = kCases[0];
  expect_error(
      [&] {
        Conv2dDims b = d;
        b.groups = 2;
        check(b);
      },
      "groups");
  expect_error(
      [&] {
        Conv2dDims b = d;
        b.stride_h = 0;
        check(b);
      },
      "stride_h is 0");
  expect_error(
      [&] {
        Conv2dDims b = d;
        b.kh = 30;
        check(b);
      },
      "larger than the padded input");
  expect_error(
      [&] {
        Conv2dDims b = d;
        b.n = 1u << 20;
        b.c_in = 1u << 12;
        b.c_out = 1;
        check(b);
      },
      "2^31");
  Tensor small = make_tensor(ctx(), {4});
  Tensor x = make_tensor(ctx(), {int64_t(d.x_elements())}), y = make_tensor(ctx(), {int64_t(d.y_elements())});
  expect_error(
      [&] {
        Batch b(ctx());
        conv2d(b, x, small, {}, {}, y, d);
      },
      "the weights holds 4 floats");
  expect_error(
      [&] {
        Batch b(ctx());
        conv2d(b, x, x, {}, {}, y, d, {.bias = true});
      },
      "bias is an empty tensor");
  expect_error(
      [&] {
        Batch b(ctx());
        conv2d(b, x, x, {}, {}, y, d, {}, Conv2dVersion::Depthwise);
      },
      "cannot run");
  {  // a tile the device cannot run: the knob is named, the version unsupported
    ConvTuning saved = conv2d_tuning();
    conv2d_tuning().igemm_tm = 5;
    expect_error([&] { check_conv2d_tuning(ctx()); }, "igemm_*: TM must be 4 or 8");
    EXPECT_FALSE(supports(ctx(), Conv2dVersion::ImplicitGemm, d));
    conv2d_tuning().igemm_tm = saved.igemm_tm;
    conv2d_tuning().dwr_threads = 1u << 20;  // past the device's invocations per workgroup
    expect_error([&] { check_conv2d_tuning(ctx()); }, "dwr_threads in 1..");
    EXPECT_FALSE(supports(ctx(), Conv2dVersion::DepthwiseReg, kCases[3]));
    conv2d_tuning().dwr_threads = saved.dwr_threads, conv2d_tuning().dwr_rows = 0;
    expect_error([&] { check_conv2d_tuning(ctx()); }, "dwr_cols and dwr_rows >= 1");
    conv2d_tuning() = saved;
    check_conv2d_tuning(ctx());
  }
}

// WGC_THRESHOLD_SCAN=1: the host-memory conv2d forced onto the CPU against the same forced onto
// the device (upload, Auto's kernel, readback), over layers growing in FLOPs: where the device
// starts to win is thresholds::kConv2d for this adapter.
TEST(Measure, ThresholdScan) {
  if (!std::getenv("WGC_THRESHOLD_SCAN")) GTEST_SKIP() << "set WGC_THRESHOLD_SCAN=1 to measure";
  Policy cpu{std::numeric_limits<int64_t>::max()}, gpu{0};
  std::printf("%-44s %10s %10s %12s\n", "layer", "MFLOP", "cpu ms", "device ms");
  const ConvEpilogue ep{true, false, Activation::Relu};
  for (uint32_t c : {8u, 16u, 32u, 64u})
    for (uint32_t h : {8u, 16u, 32u, 56u})
      for (uint32_t k : {1u, 3u}) {
        Conv2dDims d = dims(1, c, h, h, c, k, k, 1, 1, 1, 1, k / 2, k / 2, k / 2, k / 2);
        Data r = make_run(d, ep, 1);
        conv2d(ctx(), r.x, r.w, r.bias, {}, d, ep, gpu);  // warm-up: compiles
        int reps = d.flops() < 1e8 ? 9 : 3;
        double tc = test::median_ms([&] { conv2d(ctx(), r.x, r.w, r.bias, {}, d, ep, cpu); }, reps);
        double tg = test::median_ms([&] { conv2d(ctx(), r.x, r.w, r.bias, {}, d, ep, gpu); }, reps);
        std::printf("%-44s %10.3f %10.3f %12.3f %s\n", d.str().c_str(), d.flops() * 1e-6, tc, tg,
                    tg < tc ? "<- device wins" : "");
      }
}
