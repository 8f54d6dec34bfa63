// What the image tools around a model need (wgc segment / detect / upscale and the Python
// package): images to input tensors and outputs back to images. The models' own work is
// cnn/model.h; detection's post-processing is cnn/detection.h.
#pragma once

#include "cnn/detection.h"
#include "cnn/graph.h"
#include "util/image.h"

#include <array>
#include <functional>
#include <span>
#include <vector>

namespace wgc::cnn {

// An image as a float32 [1, 3, height, width] input (RGB planes; gray copied to the three channels,
// alpha dropped): scaled to width x height with PIL's bilinear filter (cnn/imagenet.h) when its size
// differs, values in [0, 1], then (v - mean) / std per channel.
HostTensor image_tensor(const Image& img, int width, int height, const std::array<float, 3>& mean,
                        const std::array<float, 3>& std);

// The class of each pixel of segmentation logits [1, classes, h, w] (the largest logit; ties the
// first class).
std::vector<int32_t> class_map(const HostTensor& logits);
// The colour of class c (the PASCAL VOC palette: class 0 black, then the bits of c spread over R, G
// and B).
std::array<uint8_t, 3> class_colour(int c);
// img with each pixel blended with its class's colour (map is w x h, scaled to the image by nearest
// neighbour); alpha is the colour's weight; class 0 (background) is left as it is.
Image overlay_classes(const Image& img, std::span<const int32_t> map, int w, int h, float alpha = 0.5f);

// img with each detection's box outlined in its class's colour and its class number written above
// it (boxes in the image's pixels; those outside are clipped).
Image draw_detections(const Image& img, std::span<const Detection> dets);

// Super-resolution around a model that maps [1, c, h, w] in [0, 1] to [1, c, h * r, w * r]: c = 3
// runs on RGB; c = 1 on the luma of YCbCr (BT.601, as ESPCN), the chroma scaled bilinearly. The
// input at the image's own size; the model as `run` (one float tensor in, the first output out).
Image upscale(const Image& img, int model_channels, const std::function<HostTensor(const HostTensor&)>& run);

// --- the colour conversions upscale uses (BT.601 full range, values in [0, 1]) ---
void rgb_to_ycbcr(float r, float g, float b, float& y, float& cb, float& cr);
void ycbcr_to_rgb(float y, float cb, float cr, float& r, float& g, float& b);

}  // namespace wgc::cnn
