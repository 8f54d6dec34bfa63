// The kernels under Faster R-CNN's ONNX export (ops/index_ops.h: RoiAlign, ScatterElements; ops/
// tensor_ops.h: ReduceProd and integer reductions): the CPU references against values worked out
// independently, then the device against the CPU references at awkward sizes (rois partly outside
// the image, bins of fractional extent, duplicate scatter indices), outputs poisoned first.
#include "cpu/detect.h"
#include "cpu/index_ops.h"
#include "cpu/tensor_ops.h"
#include "ops/index_ops.h"
#include "ops/tensor_ops.h"
#include "test_util.h"

#include <cstring>
#include <random>

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

std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -1, float hi = 1) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// Largest |got - want| / (1 + |want|), NaN as infinity.
double max_err(const std::vector<float>& got, const std::vector<float>& want) {
  double e = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    double d = std::fabs(double(got[i]) - double(want[i])) / (1 + std::fabs(double(want[i])));
    e = std::max(e, std::isnan(d) ? INFINITY : d);
  }
  return e;
}

}  // namespace

TEST(DetectOpsCpu, RoiAlignOfALinearImageIsItsValueAtTheBinCentres) {
  // f(x, y) = 3x + 5y + 1 sampled at pixel centres: bilinear interpolation of a linear function is
  // exact inside the image, and the mean of a bin's regular grid of samples is f at the bin's
  // centre. half_pixel: pixel (i, j) holds f(j + 0.5, i + 0.5) in continuous coordinates, so the
  // roi's own coordinates need no shift.
  RoiAlignDims d;
  d.n = 2, d.c = 1, d.h = 9, d.w = 11, d.rois = 2, d.out_h = 3, d.out_w = 2, d.sampling_ratio = 2;
  d.spatial_scale = 0.5f;
  std::vector<float> x(d.x_count());
  for (uint32_t b = 0; b < 2; ++b)
    for (uint32_t i = 0; i < d.h; ++i)
      for (uint32_t j = 0; j < d.w; ++j)
        x[(b * d.h + i) * d.w + j] = 3.f * (float(j) + 0.5f) + 5.f * (float(i) + 0.5f) + 1.f + float(b) * 100.f;
  std::vector<float> rois = {4, 3, 16, 15, 3, 2, 9, 14};  // image coordinates (scale 0.5)
  std::vector<int32_t> bi = {1, 0};
  std::vector<float> y(d.out_count());
  cpu::roi_align(x, rois, {bi.data(), cpu::WordType::I32, 2}, y, d);
  for (uint32_t r = 0; r < 2; ++r) {
    float x0 = rois[4 * r] * 0.5f, y0 = rois[4 * r + 1] * 0.5f;
    float bw = (rois[4 * r + 2] - rois[4 * r]) * 0.5f / 2, bh = (rois[4 * r + 3] - rois[4 * r + 1]) * 0.5f / 3;
    for (uint32_t ph = 0; ph < 3; ++ph)
      for (uint32_t pw = 0; pw < 2; ++pw) {
        double cx = x0 + (pw + 0.5) * bw, cy = y0 + (ph + 0.5) * bh;
        double want = 3 * cx + 5 * cy + 1 + (r == 0 ? 100 : 0);
        EXPECT_NEAR(y[(r * 3 + ph) * 2 + pw], want, 1e-4) << "roi " << r << " bin " << ph << "," << pw;
      }
  }
  // Max of one sample per bin at a pixel centre is that pixel's value (the other corners weigh 0).
  d.max = true, d.sampling_ratio = 1, d.spatial_scale = 1, d.rois = 1, d.out_h = 1, d.out_w = 1;
  std::vector<float> one = {2, 3, 3, 4};  // half_pixel: the centre (2.5 - 0.5, 3.5 - 0.5) = pixel (3, 2)
  std::vector<float> y1(1);
  cpu::roi_align(x, one, {bi.data() + 1, cpu::WordType::I32, 1}, y1, d);
  EXPECT_FLOAT_EQ(y1[0], x[3 * d.w + 2]);
}

TEST(DetectOpsCpu, ScatterElementsAsOnnxDescribesIt) {
  // ONNX's example (axis 1) and a duplicate index with reduction add.
  ScatterElementsDims d;
  d.rank = 2, d.shape = {1, 5}, d.index_shape = {1, 2}, d.axis = 1;
  std::vector<float> data = {1, 2, 3, 4, 5}, upd = {1.1f, 2.1f}, y(5);
  std::vector<int64_t> idx = {1, 3};
  cpu::scatter_elements({data.data(), cpu::WordType::F32, 5}, {idx.data(), cpu::WordType::I64, 2},
                        {upd.data(), cpu::WordType::F32, 2}, {y.data(), cpu::WordType::F32, 5}, d);
  EXPECT_EQ(y, (std::vector<float>{1, 1.1f, 3, 2.1f, 5}));
  idx = {-1, 4};
  d.reduction = ScatterReduction::Add;
  cpu::scatter_elements({data.data(), cpu::WordType::F32, 5}, {idx.data(), cpu::WordType::I64, 2},
                        {upd.data(), cpu::WordType::F32, 2}, {y.data(), cpu::WordType::F32, 5}, d);
  EXPECT_EQ(y, (std::vector<float>{1, 2, 3, 4, 5 + 1.1f + 2.1f}));
}

TEST(DetectOps, RoiAlignMatchesReference) {
  std::mt19937 rng(5);
  for (int mode = 0; mode < 4; ++mode) {
    RoiAlignDims d;
    d.n = 2, d.c = 3, d.h = 13, d.w = 10, d.rois = 7, d.out_h = 3, d.out_w = 5;
    d.sampling_ratio = mode == 1 ? 0 : 2;  // 0: ceil(bin extent) samples, per roi
    d.spatial_scale = 0.25f;
    d.half_pixel = mode % 2 == 0;
    d.max = mode == 3;
    std::vector<float> x = random_floats(d.x_count(), 11 + uint32_t(mode));
    std::vector<float> rois;
    std::uniform_real_distribution<float> pos(-8.f, 50.f), ext(0.f, 40.f);
    for (uint32_t r = 0; r < d.rois; ++r) {
      float x1 = pos(rng), y1 = pos(rng);
      rois.insert(rois.end(), {x1, y1, x1 + ext(rng), y1 + ext(rng)});  // some outside, some tiny
    }
    std::vector<int32_t> bi = {0, 1, 1, 0, 1, 0, 1};
    std::vector<float> want(d.out_count());
    cpu::roi_align(x, rois, {bi.data(), cpu::WordType::I32, bi.size()}, want, d);
    Tensor y = poisoned(d.out_count());
    Batch b(ctx());
    roi_align(b, upload_f(x), upload_f(rois), upload_i(bi), y, d);
    b.submit();
    EXPECT_LT(max_err(down<float>(y, d.out_count()), want), 1e-5) << "mode " << mode;
  }
}

TEST(DetectOps, ScatterElementsMatchesReference) {
  for (int red = 0; red < 5; ++red)
    for (bool ints : {false, true}) {
      ScatterElementsDims d;
      d.rank = 3, d.shape = {3, 7, 5}, d.index_shape = {2, 9, 4}, d.axis = 1;
      d.reduction = ScatterReduction(red), d.ints = ints;
      std::mt19937 rng(uint32_t(red * 2 + ints));
      std::uniform_int_distribution<int> pick(-7, 6), val(-20, 20);
      std::vector<int32_t> idx(d.index_count());
      for (auto& v : idx) v = pick(rng);  // 9 updates per line into 7 places: duplicates
      std::vector<float> dataf(d.count()), updf(d.index_count());
      std::vector<int32_t> datai(d.count()), updi(d.index_count());
      for (size_t k = 0; k < dataf.size(); ++k) datai[k] = val(rng), dataf[k] = float(datai[k]) * 0.37f;
      for (size_t k = 0; k < updf.size(); ++k) updi[k] = val(rng), updf[k] = float(updi[k]) * 0.21f;
      auto dw = ints ? cpu::ConstWords{datai.data(), cpu::WordType::I32, datai.size()}
                     : cpu::ConstWords{dataf.data(), cpu::WordType::F32, dataf.size()};
      auto uw = ints ? cpu::ConstWords{updi.data(), cpu::WordType::I32, updi.size()}
                     : cpu::ConstWords{updf.data(), cpu::WordType::F32, updf.size()};
      std::vector<float> want(d.count());
      cpu::scatter_elements(dw, {idx.data(), cpu::WordType::I32, idx.size()}, uw,
                            {want.data(), ints ? cpu::WordType::I32 : cpu::WordType::F32, want.size()}, d);
      Tensor y = poisoned(d.count());
      Batch b(ctx());
      scatter_elements(b, ints ? upload_i(datai) : upload_f(dataf), upload_i(idx),
                       ints ? upload_i(updi) : upload_f(updf), y, d);
      b.submit();
      if (ints)
        EXPECT_EQ(down<int32_t>(y, d.count()),
                  [&] {
                    std::vector<int32_t> w(want.size());
                    std::memcpy(w.data(), want.data(), w.size() * 4);
                    return w;
                  }())
            << "reduction " << red;
      else
        EXPECT_LT(max_err(down<float>(y, d.count()), want), 1e-6) << "reduction " << red;
    }
}

TEST(DetectOps, ReduceProdAndIntegerReductionsMatchReference) {
  for (AxisReduceOp op : {AxisReduceOp::Prod, AxisReduceOp::Sum, AxisReduceOp::Max, AxisReduceOp::Min}) {
    for (AxisDims d : {AxisDims{3, 37, 5}, AxisDims{2, 300, 1}}) {  // the naive and the workgroup rung
      std::vector<float> x = random_floats(d.count(), 3, 0.9f, 1.1f);
      std::vector<float> want(uint64_t(d.outer) * d.inner);
      cpu::axis_reduce(op, x, want, d);
      Tensor y = poisoned(want.size());
      Batch b(ctx());
      axis_reduce(b, upload_f(x), y, d, op);
      b.submit();
      EXPECT_LT(max_err(down<float>(y, want.size()), want), 2e-5) << to_string(op) << " len " << d.len;
      // Integers (wrapping i32 on both sides).
      std::vector<int32_t> xi(d.count());
      std::mt19937 rng(9);
      for (auto& v : xi) v = int32_t(rng() % 7) - 3;
      std::vector<int32_t> wi(want.size());
      cpu::axis_reduce_ints(op, {xi.data(), cpu::WordType::I32, xi.size()}, {wi.data(), cpu::WordType::I32, wi.size()},
                            d);
      Tensor yi = poisoned(wi.size());
      Batch bi(ctx());
      axis_reduce_ints(bi, upload_i(xi), yi, d, op);
      bi.submit();
      EXPECT_EQ(down<int32_t>(yi, wi.size()), wi) << to_string(op) << " (integers) len " << d.len;
    }
  }
}
