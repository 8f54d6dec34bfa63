// Object detection around a model that gives per-anchor box regressions and class logits (an SSD
// network without its post-processing: torchvision's SSD / SSDLite head, exported by
// scripts/export_dense_models.py): torchvision's post-processing on the host.
#pragma once

#include "cpu/detect.h"

#include <array>
#include <span>
#include <string>
#include <vector>

namespace wgc::cnn {

struct DetectionOptions {
  float score_thresh = 0.001f;  // torchvision SSD's defaults
  float nms_thresh = 0.55f;
  int topk_candidates = 300;  // per class, before NMS
  int detections_per_img = 300;
  std::array<float, 4> box_weights = {10, 10, 5, 5};
  float image_width = 320, image_height = 320;  // boxes are clipped to the image
};

struct Detection {
  cpu::Box box;
  float score = 0;
  int label = 0;  // class index (0 is the background and never reported)
};

// torchvision SSD.postprocess_detections for one image: bbox_regression [anchors][4], cls_logits
// [anchors][classes], anchors [anchors][4] (corners): softmax over the classes, per class the boxes
// scoring above score_thresh (the best topk_candidates), decoded and clipped, NMS per class, the best
// detections_per_img overall, best first. Throws wgc::Error when the sizes disagree.
std::vector<Detection> ssd_postprocess(std::span<const float> bbox_regression, std::span<const float> cls_logits,
                                       std::span<const float> anchors, uint32_t classes,
                                       const DetectionOptions& o = {});

}  // namespace wgc::cnn
