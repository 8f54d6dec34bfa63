// The kernel families under the ONNX ops beyond classifiers (ops/elementwise.h, ops/norm.h,
// ops/resize.h, ops/index_ops.h) against their CPU references at awkward shapes (odd extents,
// broadcasting, rows not a multiple of the workgroup), outputs poisoned first; integer and
// boolean tensors as the device holds them (i32).
#include "ops/elementwise.h"
#include "ops/index_ops.h"
#include "ops/norm.h"
#include "ops/resize.h"
#include "test_util.h"

#include <cstring>

using namespace wgc;
using wgc::test::ctx;

namespace {

Tensor upload_f(const std::vector<float>& v) {
  return make_tensor(ctx(), {std::max<int64_t>(int64_t(v.size()), 1)}, std::span<const float>(v));
}

Tensor upload_i(const std::vector<int32_t>& v) {
  std::vector<int32_t> w = v.empty() ? std::vector<int32_t>{0} : v;
  return make_tensor(ctx(), {int64_t(w.size())}, DType::I32, std::as_bytes(std::span<const int32_t>(w)));
}

Tensor poisoned(size_t n) {
  Tensor t = make_tensor(ctx(), {std::max<int64_t>(int64_t(n), 1)});
  fill_u32(ctx(), t, kPoisonNaN);
  return t;
}

template <class T>
std::vector<T> down(const Tensor& t, size_t n) {
  std::vector<std::byte> b(std::max<size_t>(n, 1) * 4);
  download(ctx(), t, b);
  std::vector<T> v(n);
  std::memcpy(v.data(), b.data(), n * 4);
  return v;
}

std::vector<int32_t> random_ints(size_t n, uint32_t seed, int lo, int hi) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(lo, hi);
  std::vector<int32_t> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

cpu::ConstWords words(const std::vector<float>& v) { return {v.data(), cpu::WordType::F32, v.size()}; }
cpu::ConstWords words(const std::vector<int32_t>& v) { return {v.data(), cpu::WordType::I32, v.size()}; }
cpu::Words out_words(std::vector<float>& v) { return {v.data(), cpu::WordType::F32, v.size()}; }
cpu::Words out_words(std::vector<int32_t>& v) { return {v.data(), cpu::WordType::I32, v.size()}; }

// Per element |got - want| <= atol + rtol |want| (NaN equal to NaN); the first miss, or "".
std::string close(const std::vector<float>& got, const std::vector<float>& want, double atol = 1e-5,
                  double rtol = 1e-4) {
  if (got.size() != want.size()) return "size " + std::to_string(got.size()) + " vs " + std::to_string(want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i]) && std::isnan(got[i])) continue;
    if (std::isinf(want[i]) && got[i] == want[i]) continue;
    if (!(std::fabs(double(got[i]) - double(want[i])) <= atol + rtol * std::fabs(double(want[i]))))
      return "element " + std::to_string(i) + ": " + std::to_string(got[i]) + ", expected " + std::to_string(want[i]);
  }
  return "";
}

using Shape = std::vector<int64_t>;

}  // namespace

TEST(DenseOpsCpu, WhereAndCompareOnHostIntegers) {
  // The host's int64 path (shape arithmetic): values beyond 2^53 compare exactly.
  std::vector<int64_t> a = {INT64_MAX, 5, -3}, b = {INT64_MAX - 1, 5, 7};
  std::vector<int64_t> eq(3), w(3);
  std::vector<Shape> shapes = {{3}, {3}};
  EwDims d = ew_broadcast(shapes);
  cpu::elementwise({EwOp::Equal, true}, d,
                   std::vector<cpu::ConstWords>{{a.data(), cpu::WordType::I64, 3}, {b.data(), cpu::WordType::I64, 3}},
                   {eq.data(), cpu::WordType::I64, 3});
  EXPECT_EQ(eq, (std::vector<int64_t>{0, 1, 0}));
  std::vector<Shape> s3 = {{3}, {3}, {3}};
  cpu::elementwise(
      {EwOp::Where, true}, ew_broadcast(s3),
      std::vector<cpu::ConstWords>{
          {eq.data(), cpu::WordType::I64, 3}, {a.data(), cpu::WordType::I64, 3}, {b.data(), cpu::WordType::I64, 3}},
      {w.data(), cpu::WordType::I64, 3});
  EXPECT_EQ(w, (std::vector<int64_t>{INT64_MAX - 1, 5, 7}));
}

TEST(DenseOpsCpu, ResizeTapsKnownValues) {
  // Linear, align_corners, 2 -> 3: the middle output is the mean of the two inputs.
  ResizeAxis a{2, 3, 1.5, ResizeMode::Linear, ResizeCoords::AlignCorners};
  ResizeTaps t = resize_taps(a);
  ASSERT_EQ(t.taps, 2u);
  std::vector<float> x = {1, 5}, y(3);
  ResizeTaps one = resize_taps({1, 1, 1.0, ResizeMode::Nearest});
  ResizeDims d;
  d.in_w = 2, d.out_w = 3, d.taps_w = 2;
  cpu::resize(x, resize_table(one, t), y, d);
  EXPECT_EQ(y, (std::vector<float>{1, 3, 5}));
  // Nearest, asymmetric, floor, 3 -> 7 (scale 7/3): output o reads floor(o * 3 / 7).
  ResizeTaps n = resize_taps({3, 7, 7.0 / 3, ResizeMode::Nearest, ResizeCoords::Asymmetric, NearestMode::Floor});
  EXPECT_EQ(n.index, (std::vector<int32_t>{0, 0, 0, 1, 1, 2, 2}));
}

TEST(DenseOps, ElementwiseMatchesReference) {
  const Shape sa = {3, 1, 5, 7}, sb = {4, 1, 7}, sc = {5, 1};
  std::vector<Shape> shapes = {sa, sb, sc};
  for (int o = 0; o <= int(EwOp::Where); ++o) {
    EwOp op = EwOp(o);
    int arity = ew_arity(op);
    EwDims d = ew_broadcast(std::span(shapes).first(size_t(arity)));
    size_t n = size_t(d.count());
    for (bool ints : {false, true}) {
      if ((ints && ew_float_only(op)) || (!ints && ew_int_only(op))) continue;
      if (!ints && op >= EwOp::Add && op <= EwOp::Min && op != EwOp::Mod && op != EwOp::FMod) continue;
      if (ints && (op == EwOp::CastToInt)) continue;
      if (!ints && (op == EwOp::Neg || op == EwOp::Abs)) continue;
      EwParams p{op, ints, 0.7f, 1.3f};
      if (op == EwOp::IsInf) p.alpha = 1, p.beta = 0;
      std::vector<Tensor> dev;
      std::vector<std::vector<float>> fs(3);
      std::vector<std::vector<int32_t>> is(3);
      std::vector<cpu::ConstWords> w;
      for (int k = 0; k < 3; ++k) {
        size_t m = size_t(numel(shapes[size_t(k)]));
        bool int_operand = (op == EwOp::Where && k == 0) || (ints && !(op == EwOp::Where && k == 0) && true);
        bool bools =
            op == EwOp::And || op == EwOp::Or || op == EwOp::Xor || op == EwOp::Not || (op == EwOp::Where && k == 0);
        if (int_operand || bools) {
          is[size_t(k)] =
              bools ? random_ints(m, uint32_t(o * 7 + k), 0, 1) : random_ints(m, uint32_t(o * 7 + k), -9, 9);
          dev.push_back(upload_i(is[size_t(k)]));
          w.push_back(words(is[size_t(k)]));
        } else {
          float lo = -3, hi = 3;
          if (op == EwOp::Asin || op == EwOp::Acos || op == EwOp::Atanh) lo = -0.9f, hi = 0.9f;
          if (op == EwOp::Acosh) lo = 1.1f, hi = 4;
          if (op == EwOp::Tan) lo = -1.2f, hi = 1.2f;
          fs[size_t(k)] = test::random_floats(m, uint32_t(o * 7 + k), lo, hi);
          if (op == EwOp::IsNaN || op == EwOp::IsInf) {
            fs[size_t(k)][1] = NAN;
            fs[size_t(k)][2] = INFINITY;
            fs[size_t(k)][3] = -INFINITY;
          }
          if (op == EwOp::Equal && k == 1) fs[1][0] = fs[0][0];  // an equal pair
          dev.push_back(upload_f(fs[size_t(k)]));
          w.push_back(words(fs[size_t(k)]));
        }
      }
      Tensor out = poisoned(n);
      Batch b(ctx());
      elementwise(b, dev[0], dev[1], dev[2], out, p, d);
      b.run();
      std::string what = std::string(to_string(op)) + (ints ? " (ints)" : " (floats)");
      bool int_out = ew_int_output(op, ints) || (op == EwOp::Where && ints);
      if (int_out) {
        std::vector<int32_t> want(n);
        cpu::elementwise(p, d, w, out_words(want));
        EXPECT_EQ(down<int32_t>(out, n), want) << what;
      } else {
        std::vector<float> want(n);
        cpu::elementwise(p, d, w, out_words(want));
        // SwiftShader's sin and cos are accurate to ~1e-4 (ONNX's backend tests allow 1e-3).
        bool trig = op == EwOp::Sin || op == EwOp::Cos || op == EwOp::Tan;
        EXPECT_EQ(close(down<float>(out, n), want, 1e-5, trig ? 1e-3 : 1e-4), "") << what;
      }
    }
  }
}

TEST(DenseOps, NormMatchesReference) {
  struct Case {
    NormDims d;
    const char* what;
  };
  const Case cases[] = {
      {{6, 300, 1, 0, 1, 1e-5f}, "layer norm, rows longer than the workgroup"},
      {{34, 48, 1, 0, 1, 1e-12f}, "layer norm, short rows"},
      {{2 * 5, 7 * 9, 5, 1, 7 * 9, 1e-5f}, "instance norm, one scale per channel"},
      {{3 * 4, 6 * 11, 4, 6, 11, 1e-5f}, "group norm, one scale per channel"},
      {{3 * 4, 6 * 11, 4, 1, 66, 1e-5f}, "group norm, one scale per group"},
  };
  for (const auto& c : cases) {
    size_t n = size_t(c.d.count()), np = size_t(c.d.params());
    auto x = test::random_floats(n, 3, -2, 5);  // an offset mean: a one-pass variance would lose digits
    auto sc = test::random_floats(np, 4, 0.5f, 1.5f), bi = test::random_floats(np, 5);
    std::vector<float> want(n), want_stats(2 * c.d.rows);
    cpu::norm(x, sc, bi, want, c.d);
    cpu::norm_stats(x, want_stats, c.d);
    Tensor y = poisoned(n), st = poisoned(2 * c.d.rows);
    Tensor tx = upload_f(x);
    Batch b(ctx());
    norm(b, tx, upload_f(sc), upload_f(bi), y, c.d);
    norm_stats(b, tx, st, c.d);
    b.run();
    EXPECT_LT(test::rel_error(down<float>(y, n), want), 1e-5) << c.what;
    EXPECT_EQ(close(down<float>(st, 2 * c.d.rows), want_stats, 1e-5, 1e-4), "") << c.what;
  }
}

TEST(DenseOps, ResizeMatchesReference) {
  struct Case {
    ResizeAxis h, w;
    ResizeDims d;
  };
  auto axis = [](uint32_t in, uint32_t out, ResizeMode m, ResizeCoords c, bool aa = false, bool excl = false) {
    ResizeAxis a;
    a.in = in, a.out = out, a.scale = double(out) / in, a.mode = m, a.coords = c, a.antialias = aa;
    a.exclude_outside = excl;
    return a;
  };
  std::vector<Case> cases;
  cases.push_back({axis(7, 15, ResizeMode::Linear, ResizeCoords::HalfPixel),
                   axis(5, 11, ResizeMode::Linear, ResizeCoords::HalfPixel),
                   {2, 7, 5, 15, 11, 3, 1}});  // [outer][h][mid][w]: NCHW-like with mid = 3
  cases.push_back({axis(9, 4, ResizeMode::Cubic, ResizeCoords::AlignCorners, false, true),
                   axis(13, 6, ResizeMode::Cubic, ResizeCoords::PytorchHalfPixel, true),
                   {3, 9, 13, 4, 6, 1, 2}});
  cases.push_back({axis(5, 12, ResizeMode::Nearest, ResizeCoords::Asymmetric),
                   axis(1, 1, ResizeMode::Nearest, ResizeCoords::Asymmetric),
                   {4, 5, 1, 12, 1, 1, 3}});
  ResizeAxis crop = axis(6, 8, ResizeMode::Linear, ResizeCoords::TfCropAndResize);
  crop.roi_start = -0.2, crop.roi_end = 1.1;  // partly outside: extrapolated
  cases.push_back({crop, axis(3, 3, ResizeMode::Nearest, ResizeCoords::HalfPixel), {2, 6, 3, 8, 3, 1, 1}});
  for (auto& c : cases) {
    ResizeTaps th = resize_taps(c.h), tw = resize_taps(c.w);
    c.d.taps_h = th.taps, c.d.taps_w = tw.taps;
    c.d.extrapolation = -7.5f;
    std::vector<float> table = resize_table(th, tw);
    auto x = test::random_floats(size_t(c.d.in_count()), 9);
    std::vector<float> want(c.d.out_count());
    cpu::resize(x, table, want, c.d);
    Tensor y = poisoned(want.size());
    Batch b(ctx());
    resize(b, upload_f(x), upload_f(table), y, c.d);
    b.run();
    EXPECT_EQ(close(down<float>(y, want.size()), want), "") << "taps " << th.taps << " x " << tw.taps;
  }
}

TEST(DenseOps, PadMatchesReference) {
  struct Case {
    Shape shape;
    std::vector<int64_t> pads;
    PadMode mode;
  };
  const Case cases[] = {{{3, 5, 7}, {0, 2, 1, 1, 3, 4}, PadMode::Constant},
                        {{2, 3, 5, 7}, {0, 0, 4, 6, 0, 0, 3, 5}, PadMode::Reflect},
                        {{1, 2, 4, 3}, {0, 1, 2, 2, 0, 0, 3, 1}, PadMode::Edge},
                        {{5, 9}, {-1, 3, 2, -4}, PadMode::Wrap},
                        {{6, 5}, {-2, -1, -1, 2}, PadMode::Constant}};
  for (const auto& c : cases)
    for (bool ints : {false, true}) {
      PadDims d = pad_dims(c.shape, c.pads, c.mode, ints ? -4.0 : 2.5);
      d.ints = ints;
      size_t n = size_t(d.out_count()), m = size_t(d.in_count());
      Tensor y = poisoned(n);
      Batch b(ctx());
      if (ints) {
        auto x = random_ints(m, 2, -100, 100);
        std::vector<int32_t> want(n);
        cpu::pad(words(x), out_words(want), d);
        pad(b, upload_i(x), y, d);
        b.run();
        EXPECT_EQ(down<int32_t>(y, n), want) << int(c.mode);
      } else {
        auto x = test::random_floats(m, 2);
        std::vector<float> want(n);
        cpu::pad(words(x), out_words(want), d);
        pad(b, upload_f(x), y, d);
        b.run();
        EXPECT_EQ(down<float>(y, n), want) << int(c.mode);
      }
    }
  // Zero insertion with strides (ConvTranspose): 3 x 4 -> stride 2, 3 with a border.
  PadDims z;
  z.rank = 2;
  z.in_shape = {3, 4};
  z.out_shape = {3 * 2 - 1 + 3, 4 * 3 - 2 + 2};
  z.begin = {1, 1};
  z.stride = {2, 3};
  auto x = test::random_floats(12, 8);
  std::vector<float> want(z.out_count());
  cpu::pad(words(x), out_words(want), z);
  EXPECT_EQ(want[0], 0.f);
  EXPECT_EQ(want[size_t(z.out_shape[1]) + 1], x[0]);
  Tensor y = poisoned(want.size());
  Batch b(ctx());
  pad(b, upload_f(x), y, z);
  b.run();
  EXPECT_EQ(down<float>(y, want.size()), want);
}

TEST(DenseOps, GatherMatchesReference) {
  GatherDims d{3, 11, 5, 7};
  auto x = test::random_floats(3 * 11 * 5, 4);
  std::vector<int32_t> idx = {0, 10, -1, -11, 4, 4, 3};
  std::vector<float> want(d.out_count());
  cpu::gather(words(x), words(idx), out_words(want), d);
  EXPECT_EQ(want[5], x[10 * 5]);  // index 10 of pre 0, q 0
  Tensor y = poisoned(want.size());
  Batch b(ctx());
  gather(b, upload_f(x), upload_i(idx), y, d);
  b.run();
  EXPECT_EQ(down<float>(y, want.size()), want);

  // GatherElements along each axis of a [4, 3, 5] tensor with [2, 3, 4]-shaped indices (x larger
  // off the axis than the indices).
  for (uint32_t axis = 0; axis < 3; ++axis) {
    Shape xs = {4, 3, 5}, is = {2, 3, 4};
    auto xv = test::random_floats(60, axis + 1);
    auto iv = random_ints(24, axis + 11, -int(xs[axis]), int(xs[axis]) - 1);
    GatherElementsDims g;
    g.rank = 3;
    g.shape = {2, 3, 4};
    g.x_strides = {15, 5, 1};
    g.axis = axis;
    g.axis_len = uint32_t(xs[axis]);
    std::vector<float> w(24);
    cpu::gather_elements(words(xv), words(iv), out_words(w), g);
    Tensor out = poisoned(24);
    Batch bb(ctx());
    gather_elements(bb, upload_f(xv), upload_i(iv), out, g);
    bb.run();
    EXPECT_EQ(down<float>(out, 24), w) << "axis " << axis;
  }
}

TEST(DenseOps, ArgTopKCumSumMatchReference) {
  AxisDims a{3, 37, 5};
  auto x = test::random_floats(a.count(), 6);
  for (size_t i = 0; i < x.size(); i += 3) x[i] = 0.25f;  // ties
  for (bool mx : {true, false})
    for (bool last : {false, true}) {
      ArgReduceDims d{a, mx, last};
      std::vector<int32_t> want(a.outer * a.inner);
      cpu::arg_reduce(x, out_words(want), d);
      Tensor y = poisoned(want.size());
      Batch b(ctx());
      arg_reduce(b, upload_f(x), y, d);
      b.run();
      EXPECT_EQ(down<int32_t>(y, want.size()), want) << mx << last;
    }
  for (uint32_t k : {1u, 6u, 37u})
    for (bool largest : {true, false}) {
      TopKDims d{a, k, largest};
      size_t n = size_t(a.outer) * k * a.inner;
      std::vector<float> wv(n);
      std::vector<int32_t> wi(n);
      cpu::topk(x, wv, out_words(wi), d);
      Tensor yv = poisoned(n), yi = poisoned(n);
      Tensor tx = upload_f(x);
      Batch b(ctx());
      topk(b, tx, yv, d, false);
      topk(b, tx, yi, d, true);
      b.run();
      EXPECT_EQ(down<float>(yv, n), wv) << k << largest;
      EXPECT_EQ(down<int32_t>(yi, n), wi) << k << largest;
    }
  for (bool ints : {false, true})
    for (bool excl : {false, true})
      for (bool rev : {false, true}) {
        CumSumDims d{a, excl, rev};
        size_t n = size_t(a.count());
        Tensor y = poisoned(n);
        Batch b(ctx());
        if (ints) {
          auto xi = random_ints(n, 12, -50, 50);
          std::vector<int32_t> want(n);
          cpu::cumsum(words(xi), out_words(want), d);
          cumsum(b, upload_i(xi), y, d, true);
          b.run();
          EXPECT_EQ(down<int32_t>(y, n), want);
        } else {
          std::vector<float> want(n);
          cpu::cumsum(words(x), out_words(want), d);
          cumsum(b, upload_f(x), y, d, false);
          b.run();
          EXPECT_LT(test::rel_error(down<float>(y, n), want), 1e-5);
        }
      }
}
