#include "cpu/detect.h"

#include "util/error.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace wgc::cpu {

float iou(const Box& a, const Box& b) {
  float area_a = (a.x2 - a.x1) * (a.y2 - a.y1), area_b = (b.x2 - b.x1) * (b.y2 - b.y1);
  float w = std::max(0.f, std::min(a.x2, b.x2) - std::max(a.x1, b.x1));
  float h = std::max(0.f, std::min(a.y2, b.y2) - std::max(a.y1, b.y1));
  float inter = w * h, uni = area_a + area_b - inter;
  return uni > 0 ? inter / uni : 0.f;
}

std::vector<uint32_t> nms(std::span<const Box> boxes, std::span<const float> scores, float iou_threshold,
                          size_t max_keep) {
  if (boxes.size() != scores.size())
    throw Error("wgc: nms: " + std::to_string(boxes.size()) + " boxes, " + std::to_string(scores.size()) + " scores");
  std::vector<uint32_t> order(boxes.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return scores[a] > scores[b]; });
  std::vector<uint32_t> keep;
  for (uint32_t i : order) {
    if (keep.size() >= max_keep) break;
    bool ok = true;
    for (uint32_t k : keep)
      if (iou(boxes[i], boxes[k]) > iou_threshold) {
        ok = false;
        break;
      }
    if (ok) keep.push_back(i);
  }
  return keep;
}

std::vector<std::array<int64_t, 3>> non_max_suppression(std::span<const float> boxes, std::span<const float> scores,
                                                        uint32_t batches, uint32_t classes, uint32_t n,
                                                        int64_t max_per_class, float iou_threshold,
                                                        float score_threshold, bool center_point_box) {
  if (boxes.size() < uint64_t(batches) * n * 4 || scores.size() < uint64_t(batches) * classes * n)
    throw Error("wgc: non_max_suppression: boxes or scores smaller than their dims");
  std::vector<std::array<int64_t, 3>> out;
  if (max_per_class <= 0) return out;
  std::vector<Box> bx(n);
  for (uint32_t b = 0; b < batches; ++b) {
    for (uint32_t i = 0; i < n; ++i) {
      const float* p = boxes.data() + (size_t(b) * n + i) * 4;
      if (center_point_box) {
        bx[i] = {p[0] - p[2] / 2, p[1] - p[3] / 2, p[0] + p[2] / 2, p[1] + p[3] / 2};
      } else {  // [y1, x1, y2, x2], corners in either order
        bx[i] = {std::min(p[1], p[3]), std::min(p[0], p[2]), std::max(p[1], p[3]), std::max(p[0], p[2])};
      }
    }
    for (uint32_t c = 0; c < classes; ++c) {
      const float* s = scores.data() + (size_t(b) * classes + c) * n;
      std::vector<Box> cand;
      std::vector<float> cs;
      std::vector<uint32_t> idx;
      for (uint32_t i = 0; i < n; ++i)
        if (s[i] > score_threshold) cand.push_back(bx[i]), cs.push_back(s[i]), idx.push_back(i);
      for (uint32_t k : nms(cand, cs, iou_threshold, size_t(max_per_class))) out.push_back({b, c, idx[k]});
    }
  }
  return out;
}

Box decode_box(const float* rel, const Box& anchor, const std::array<float, 4>& weights) {
  const double clip = std::log(1000.0 / 16);
  double w = double(anchor.x2) - anchor.x1, h = double(anchor.y2) - anchor.y1;
  double cx = anchor.x1 + 0.5 * w, cy = anchor.y1 + 0.5 * h;
  double dx = rel[0] / weights[0], dy = rel[1] / weights[1];
  double dw = std::min(double(rel[2]) / weights[2], clip), dh = std::min(double(rel[3]) / weights[3], clip);
  double pcx = dx * w + cx, pcy = dy * h + cy, pw = std::exp(dw) * w, ph = std::exp(dh) * h;
  return {float(pcx - 0.5 * pw), float(pcy - 0.5 * ph), float(pcx + 0.5 * pw), float(pcy + 0.5 * ph)};
}

}  // namespace wgc::cpu
