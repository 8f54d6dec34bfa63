// ImageNet classification around a model: torchvision's preprocessing and the 1000 class names.
#pragma once

#include "cnn/graph.h"
#include "io/image.h"

#include <string>
#include <string_view>
#include <vector>

namespace wgc::cnn {

struct Preprocess {
  int resize = 256;  // the shorter side is scaled to this (bilinear with antialiasing, as PIL does)
  int crop = 224;    // then the centre crop x crop
  float mean[3] = {0.485f, 0.456f, 0.406f};
  float std[3] = {0.229f, 0.224f, 0.225f};
};

// torchvision's Resize(256) + CenterCrop(224) + ToTensor + Normalize on a PIL image: float32
// [1, 3, crop, crop], RGB planes (gray is copied to the three channels, alpha dropped). The resize
// follows PIL's bilinear filter (support widened by the scale when shrinking; rounded to 8 bits
// after each pass), so the pixels match torchvision's up to rounding. Throws for an empty image.
HostTensor imagenet_input(const Image& img, const Preprocess& p = {});

// Scales an 8-bit image to width x height the way PIL's Image.resize(BILINEAR) does.
Image resize_bilinear(const Image& img, int width, int height);

// The 1000 ILSVRC-2012 class names in the usual order ("tench, Tinca tinca", ...), or empty when
// this build has no list (scripts/setup.sh installs it from npm).
const std::vector<std::string>& imagenet_classes();

struct Prediction {
  int index = 0;
  float score = 0;    // softmax probability
  std::string label;  // the class name, or "class N"
};
// The k best classes of one row of logits (softmax over the row).
std::vector<Prediction> top_k(std::span<const float> logits, int k);

}  // namespace wgc::cnn
