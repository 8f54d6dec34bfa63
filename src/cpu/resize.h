// Resizing (ONNX Resize / Upsample): per resized axis, each output position reads a few input
// positions with weights ("taps"), computed once on the host from the ONNX attributes
// (resize_taps: every mode, coordinate transformation, nearest rounding, cubic coefficient,
// exclude_outside, antialias and tf_crop_and_resize's extrapolation); the kernel and its CPU
// reference (resize) then apply the taps of up to two axes, separably. The description and the
// CPU reference of ops/resize.h.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace wgc {

enum class ResizeMode { Nearest, Linear, Cubic };
enum class ResizeCoords { HalfPixel, PytorchHalfPixel, AlignCorners, Asymmetric, TfHalfPixelForNn, TfCropAndResize };
enum class NearestMode { RoundPreferFloor, RoundPreferCeil, Floor, Ceil };

// One axis: in -> out positions; scale is the ONNX scale (out / in when sizes were given, or the
// aspect-ratio-kept one; align_corners and tf_crop_and_resize divide by in * scale - 1, as ONNX's
// reference does); roi_start / roi_end only for TfCropAndResize.
struct ResizeAxis {
  uint32_t in = 1, out = 1;
  double scale = 1;
  ResizeMode mode = ResizeMode::Nearest;
  ResizeCoords coords = ResizeCoords::HalfPixel;
  NearestMode nearest = NearestMode::RoundPreferFloor;
  double cubic_a = -0.75;
  bool exclude_outside = false, antialias = false;
  double roi_start = 0, roi_end = 1;
};

// Per output position, `taps` (index, weight) pairs; index -1 marks a position outside the input
// under TfCropAndResize (the output there is the extrapolation value).
struct ResizeTaps {
  uint32_t out = 0, taps = 0;
  std::vector<int32_t> index;
  std::vector<float> weight;
};
ResizeTaps resize_taps(const ResizeAxis& a);

// x seen as [outer][in_h][mid][in_w][inner] (the resized axes h and w; one of them may be of
// extent 1 -> 1, a single resized axis), y as [outer][out_h][mid][out_w][inner].
struct ResizeDims {
  uint32_t outer = 1, in_h = 1, in_w = 1, out_h = 1, out_w = 1, mid = 1, inner = 1;
  uint32_t taps_h = 1, taps_w = 1;
  float extrapolation = 0;
  uint64_t in_count() const { return uint64_t(outer) * in_h * mid * in_w * inner; }
  uint64_t out_count() const { return uint64_t(outer) * out_h * mid * out_w * inner; }
  // The taps table's floats: out_h * taps_h (index, weight) pairs, then out_w * taps_w.
  uint64_t table_floats() const { return 2 * (uint64_t(out_h) * taps_h + uint64_t(out_w) * taps_w); }
};
// The table resize() reads (indices stored as floats: exact below 2^24, checked).
std::vector<float> resize_table(const ResizeTaps& h, const ResizeTaps& w);

namespace cpu {

void resize(std::span<const float> x, std::span<const float> table, std::span<float> y, const ResizeDims& d);

}  // namespace cpu
}  // namespace wgc
