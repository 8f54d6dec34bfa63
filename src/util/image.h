// Images in memory: 8-bit interleaved pixels (Image) and the float forms the stencil ops take
// (grayscale, interleaved channels, RGBA planes). Reading and writing files: io/image.h.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace wgc {

// The largest image, in pixels, that wgc makes or reads (a corrupt header must not allocate
// gigabytes).
inline constexpr int64_t kMaxImagePixels = int64_t(1) << 30;

// width x height pixels of `channels` bytes each (1: gray, 3: RGB, 4: RGBA), rows top to bottom,
// channels interleaved: data[(y * width + x) * channels + c].
struct Image {
  int width = 0, height = 0, channels = 0;
  std::vector<uint8_t> data;

  Image() = default;
  Image(int w, int h, int c);  // zero-filled; throws wgc::Error on a bad size or channel count
  int64_t pixels() const { return int64_t(width) * height; }
  uint8_t& at(int x, int y, int c) {
    return data[(size_t(y) * size_t(width) + size_t(x)) * size_t(channels) + size_t(c)];
  }
  uint8_t at(int x, int y, int c) const {
    return data[(size_t(y) * size_t(width) + size_t(x)) * size_t(channels) + size_t(c)];
  }
};

// Throws wgc::Error naming `where` unless img has a valid size, channel count (1, 3 or 4) and
// exactly width * height * channels bytes of data.
void check_image(const Image& img, const char* where);

// Conversions to and from floats in [0, 1]. to_float keeps the channel layout (interleaved);
// to_gray uses Rec. 601 luma (0.299 R + 0.587 G + 0.114 B; alpha ignored); to_rgba_planes gives
// four planes of width*height values each (R, G, B, A; gray is copied to R, G, B, absent alpha is 1).
std::vector<float> to_float(const Image& img);
std::vector<float> to_gray(const Image& img);
std::vector<float> to_rgba_planes(const Image& img);
// Back to 8 bits: clamps to [0, 1] and rounds to the nearest level (NaN becomes 0).
Image from_float(std::span<const float> v, int width, int height, int channels);
Image from_rgba_planes(std::span<const float> planes, int width, int height, int channels = 4);
// Interleaved <-> planar floats of the same channel count.
std::vector<float> interleaved_to_planes(std::span<const float> v, int width, int height, int channels);
std::vector<float> planes_to_interleaved(std::span<const float> planes, int width, int height, int channels);

}  // namespace wgc
