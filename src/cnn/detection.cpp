#include "cnn/detection.h"

#include "util/error.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace wgc::cnn {

std::vector<Detection> ssd_postprocess(std::span<const float> bbox_regression, std::span<const float> cls_logits,
                                       std::span<const float> anchors, uint32_t classes, const DetectionOptions& o) {
  size_t n = anchors.size() / 4;
  if (anchors.size() % 4 || bbox_regression.size() != n * 4 || classes < 2 || cls_logits.size() != n * classes)
    throw Error("wgc: detection: " + std::to_string(n) + " anchors, " + std::to_string(bbox_regression.size()) +
                " box values and " + std::to_string(cls_logits.size()) + " logits do not fit " +
                std::to_string(classes) + " classes");
  std::vector<float> prob(n * classes);
  for (size_t a = 0; a < n; ++a) {  // softmax over the classes, in double
    const float* l = cls_logits.data() + a * classes;
    double mx = *std::max_element(l, l + classes), sum = 0;
    for (uint32_t c = 0; c < classes; ++c) sum += std::exp(double(l[c]) - mx);
    for (uint32_t c = 0; c < classes; ++c) prob[a * classes + c] = float(std::exp(double(l[c]) - mx) / sum);
  }
  std::vector<cpu::Box> boxes(n);
  for (size_t a = 0; a < n; ++a) {
    const float* an = anchors.data() + a * 4;
    cpu::Box b = cpu::decode_box(bbox_regression.data() + a * 4, {an[0], an[1], an[2], an[3]}, o.box_weights);
    b.x1 = std::clamp(b.x1, 0.f, o.image_width), b.x2 = std::clamp(b.x2, 0.f, o.image_width);
    b.y1 = std::clamp(b.y1, 0.f, o.image_height), b.y2 = std::clamp(b.y2, 0.f, o.image_height);
    boxes[a] = b;
  }
  std::vector<Detection> cand;
  for (uint32_t c = 1; c < classes; ++c) {
    std::vector<uint32_t> idx;
    for (uint32_t a = 0; a < n; ++a)
      if (prob[a * classes + c] > o.score_thresh) idx.push_back(a);
    std::stable_sort(idx.begin(), idx.end(),
                     [&](uint32_t p, uint32_t q) { return prob[p * classes + c] > prob[q * classes + c]; });
    if (idx.size() > size_t(std::max(o.topk_candidates, 0))) idx.resize(size_t(std::max(o.topk_candidates, 0)));
    std::vector<cpu::Box> cb;
    std::vector<float> cs;
    for (uint32_t a : idx) cb.push_back(boxes[a]), cs.push_back(prob[a * classes + c]);
    for (uint32_t k : cpu::nms(cb, cs, o.nms_thresh)) cand.push_back({cb[k], cs[k], int(c)});
  }
  std::stable_sort(cand.begin(), cand.end(), [](const Detection& a, const Detection& b) { return a.score > b.score; });
  if (cand.size() > size_t(std::max(o.detections_per_img, 0))) cand.resize(size_t(std::max(o.detections_per_img, 0)));
  return cand;
}

}  // namespace wgc::cnn
