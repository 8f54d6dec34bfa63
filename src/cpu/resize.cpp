#include "cpu/resize.h"

#include "util/error.h"

#include <algorithm>
#include <cmath>

namespace wgc {

namespace {

// The input coordinate of output position x (ONNX coordinate_transformation_mode).
// The resized length is in * scale (not rounded) where ONNX's formulas divide by it.
double source_coordinate(const ResizeAxis& a, double x) {
  const double in = a.in, s = a.scale, len = in * s;
  switch (a.coords) {
    case ResizeCoords::HalfPixel: return (x + 0.5) / s - 0.5;
    case ResizeCoords::PytorchHalfPixel: return a.out > 1 ? (x + 0.5) / s - 0.5 : 0.0;
    case ResizeCoords::AlignCorners: return a.out == 1 ? 0.0 : x * (in - 1) / (len - 1);
    case ResizeCoords::Asymmetric: return x / s;
    case ResizeCoords::TfHalfPixelForNn: return (x + 0.5) / s;
    case ResizeCoords::TfCropAndResize:
      return a.out > 1 ? a.roi_start * (in - 1) + x * (a.roi_end - a.roi_start) * (in - 1) / (len - 1)
                       : 0.5 * (a.roi_start + a.roi_end) * (in - 1);
  }
  return 0;
}

double cubic_kernel(double x, double A) {
  x = std::fabs(x);
  if (x <= 1) return ((A + 2) * x - (A + 3)) * x * x + 1;
  if (x < 2) return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
  return 0;
}

}  // namespace

ResizeTaps resize_taps(const ResizeAxis& a) {
  if (a.in == 0 || a.out == 0) throw Error("wgc: resize: an empty axis");
  if (!(a.scale > 0) || !std::isfinite(a.scale)) throw Error("wgc: resize: scale " + std::to_string(a.scale));
  // The taps around the input position: offsets start .. start + n - 1 from the left neighbour
  // i_left (the position at or left of x, strictly left when x is a whole number: ONNX's
  // reference takes the ratio in (0, 1]). Antialiasing a downscale widens the kernel by 1 / scale.
  double aa = a.antialias ? std::min(a.scale, 1.0) : 1.0;
  int start = 0, n = 1;
  if (a.mode == ResizeMode::Linear) {
    start = int(std::floor(-1 / aa) + 1);
    n = 2 - 2 * start;
  } else if (a.mode == ResizeMode::Cubic) {
    start = int(std::floor(-2 / aa) + 1);
    n = 2 - 2 * start;
  }
  if (n > 1024) throw Error("wgc: resize: an antialiased downscale by " + std::to_string(a.scale) + " is too wide");
  ResizeTaps t;
  t.out = a.out;
  t.taps = uint32_t(n);
  t.index.resize(size_t(a.out) * size_t(n));
  t.weight.resize(size_t(a.out) * size_t(n));
  const int64_t in = a.in;
  std::vector<double> w(static_cast<size_t>(n));
  for (uint32_t o = 0; o < a.out; ++o) {
    int32_t* idx = &t.index[size_t(o) * size_t(n)];
    float* wt = &t.weight[size_t(o) * size_t(n)];
    double x = source_coordinate(a, double(o));
    if (a.coords == ResizeCoords::TfCropAndResize && (x < 0 || x > double(in - 1))) {
      std::fill(idx, idx + n, -1);
      std::fill(wt, wt + n, 0.f);
      continue;
    }
    double fl = std::floor(x);
    int64_t left = int64_t(fl);
    double r = x - fl;
    if (r == 0) {
      r = 1;
      --left;
    }
    if (a.mode == ResizeMode::Nearest) {
      bool right = false;
      if (r == 1) {
        right = true;
      } else {
        switch (a.nearest) {
          case NearestMode::RoundPreferFloor: right = r > 0.5; break;
          case NearestMode::RoundPreferCeil: right = r >= 0.5; break;
          case NearestMode::Floor: right = false; break;
          case NearestMode::Ceil: right = true; break;
        }
      }
      idx[0] = int32_t(std::clamp<int64_t>(left + (right ? 1 : 0), 0, in - 1));
      wt[0] = 1.f;
      continue;
    }
    double sum = 0;
    for (int k = 0; k < n; ++k) {
      double arg = (double(start + k) - r) * aa;
      w[size_t(k)] =
          a.mode == ResizeMode::Linear ? std::clamp(1 - std::fabs(arg), 0.0, 1.0) : cubic_kernel(arg, a.cubic_a);
      int64_t p = left + start + k;
      if (a.exclude_outside && (p < 0 || p >= in)) w[size_t(k)] = 0;
      sum += w[size_t(k)];
    }
    bool normalise = a.exclude_outside || aa < 1;
    for (int k = 0; k < n; ++k) {
      idx[k] = int32_t(std::clamp<int64_t>(left + start + k, 0, in - 1));
      wt[k] = float(normalise && sum != 0 ? w[size_t(k)] / sum : w[size_t(k)]);
    }
  }
  return t;
}

std::vector<float> resize_table(const ResizeTaps& h, const ResizeTaps& w) {
  std::vector<float> t;
  t.reserve(2 * (h.index.size() + w.index.size()));
  for (const ResizeTaps* a : {&h, &w})
    for (size_t k = 0; k < a->index.size(); ++k) {
      if (a->index[k] >= (1 << 24)) throw Error("wgc: resize: an axis longer than 2^24");
      t.push_back(float(a->index[k]));
      t.push_back(a->weight[k]);
    }
  return t;
}

namespace cpu {

void resize(std::span<const float> x, std::span<const float> table, std::span<float> y, const ResizeDims& d) {
  if (x.size() < d.in_count() || y.size() < d.out_count() || table.size() < d.table_floats())
    throw Error("wgc: resize: buffers smaller than the dims");
  const float* th = table.data();
  const float* tw = table.data() + 2 * size_t(d.out_h) * d.taps_h;
  size_t o = 0;
  for (uint32_t a = 0; a < d.outer; ++a)
    for (uint32_t oy = 0; oy < d.out_h; ++oy)
      for (uint32_t m = 0; m < d.mid; ++m)
        for (uint32_t ox = 0; ox < d.out_w; ++ox)
          for (uint32_t i = 0; i < d.inner; ++i) {
            double acc = 0;
            bool outside = false;
            for (uint32_t ty = 0; ty < d.taps_h && !outside; ++ty) {
              const float* py = th + 2 * (size_t(oy) * d.taps_h + ty);
              if (py[0] < 0) {
                outside = true;
                break;
              }
              size_t iy = size_t(py[0]);
              if (iy >= d.in_h) throw Error("wgc: resize: a tap reads row " + std::to_string(iy));
              for (uint32_t tx = 0; tx < d.taps_w; ++tx) {
                const float* px = tw + 2 * (size_t(ox) * d.taps_w + tx);
                if (px[0] < 0) {
                  outside = true;
                  break;
                }
                size_t ix = size_t(px[0]);
                if (ix >= d.in_w) throw Error("wgc: resize: a tap reads column " + std::to_string(ix));
                size_t src = (((size_t(a) * d.in_h + iy) * d.mid + m) * d.in_w + ix) * d.inner + i;
                acc += double(py[1]) * double(px[1]) * double(x[src]);
              }
            }
            y[o++] = outside ? d.extrapolation : float(acc);
          }
}

}  // namespace cpu
}  // namespace wgc
