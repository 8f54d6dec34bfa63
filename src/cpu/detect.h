// Object detection on the host: intersection over union, greedy non-maximum suppression (the ONNX
// NonMaxSuppression op and torchvision's nms / batched_nms), and the box coding of SSD / R-CNN
// heads (torchvision's BoxCoder). Small, data-dependent work that stays on the CPU. Also the CPU
// reference of RoiAlign (ops/detect.h runs it on the device).
#pragma once

#include "cpu/words.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace wgc::cpu {

struct Box {
  float x1 = 0, y1 = 0, x2 = 0, y2 = 0;  // corners, x1 <= x2 and y1 <= y2
};

// |a ∩ b| / |a ∪ b| with areas (x2 - x1)(y2 - y1), as torchvision computes it (0 for empty boxes).
float iou(const Box& a, const Box& b);

// Greedy NMS: the indices of the boxes kept, best score first (equal scores by index), each box
// dropped when its IoU with a kept one exceeds iou_threshold; at most max_keep. Scores below
// nothing are filtered here (the caller does).
std::vector<uint32_t> nms(std::span<const Box> boxes, std::span<const float> scores, float iou_threshold,
                          size_t max_keep = SIZE_MAX);

// ONNX NonMaxSuppression: boxes [batches][n][4] (center_point_box 0: two opposite corners as
// [y1, x1, y2, x2] in any order; 1: [x_center, y_center, width, height]), scores
// [batches][classes][n]; per batch and class the boxes scoring above score_threshold, NMS, at most
// max_per_class; (batch, class, box) triples in that order.
std::vector<std::array<int64_t, 3>> non_max_suppression(std::span<const float> boxes, std::span<const float> scores,
                                                        uint32_t batches, uint32_t classes, uint32_t n,
                                                        int64_t max_per_class, float iou_threshold,
                                                        float score_threshold, bool center_point_box);

// torchvision BoxCoder.decode_single: rel = (dx, dy, dw, dh) of an anchor, divided by the weights,
// dw and dh clamped at log(1000 / 16), to corners.
Box decode_box(const float* rel, const Box& anchor, const std::array<float, 4>& weights);

}  // namespace wgc::cpu

namespace wgc {

// ONNX RoiAlign (torchvision's roi_align): y [rois][c][out_h][out_w] from x [n][c][h][w], each roi
// (x1, y1, x2, y2, scaled by spatial_scale) of image batch_index[r] cut into out_h x out_w bins,
// each bin the average (or max) of grid_h x grid_w bilinear samples at the centres of a regular
// grid (sampling_ratio per axis, or ceil(bin extent) when 0, at most kRoiAlignMaxGrid). half_pixel
// (opset 16's default; torchvision's aligned=True) shifts the roi by -0.5; output_half_pixel
// (opset 10's behaviour) does not and makes rois at least 1 x 1. A sample more than one pixel
// outside x contributes 0; Max takes the largest of a sample's four weighted corners, as ONNX's
// reference and ONNX Runtime do. Batch indices outside [0, n) read the nearest image (the device
// cannot stop).
struct RoiAlignDims {
  uint32_t n = 0, c = 0, h = 0, w = 0;
  uint32_t rois = 0, out_h = 1, out_w = 1;
  uint32_t sampling_ratio = 0;
  float spatial_scale = 1;
  bool half_pixel = true, max = false;
  uint64_t x_count() const { return uint64_t(n) * c * h * w; }
  uint64_t out_count() const { return uint64_t(rois) * c * out_h * out_w; }
};
inline constexpr uint32_t kRoiAlignMaxGrid = 64;  // samples per bin per axis (a guard against huge rois)
void check(const RoiAlignDims& d);

namespace cpu {
// rois: [rois][4] floats; batch_index: [rois] integers.
void roi_align(std::span<const float> x, std::span<const float> rois, const ConstWords& batch_index, std::span<float> y,
               const RoiAlignDims& d);
}  // namespace cpu
}  // namespace wgc
