// Object detection on the host: intersection over union, greedy non-maximum suppression (the ONNX
// NonMaxSuppression op and torchvision's nms / batched_nms), and the box coding of SSD / R-CNN
// heads (torchvision's BoxCoder). Small, data-dependent work that stays on the CPU.
#pragma once

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
