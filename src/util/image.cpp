#include "util/image.h"

#include "util/error.h"

#include <cmath>
#include <string>

namespace wgc {
namespace {

uint8_t to_u8(float v) {
  if (!(v > 0.f)) return 0;  // also NaN
  if (v >= 1.f) return 255;
  return static_cast<uint8_t>(std::lround(v * 255.f));
}

void check_shape(int w, int h, int c, const char* where) {
  if (w <= 0 || h <= 0 || int64_t(w) * h > kMaxImagePixels)
    throw Error(std::string("wgc: ") + where + ": bad image size " + std::to_string(w) + "x" + std::to_string(h));
  if (c != 1 && c != 3 && c != 4)
    throw Error(std::string("wgc: ") + where + ": channels must be 1, 3 or 4, got " + std::to_string(c));
}

}  // namespace

void check_image(const Image& img, const char* where) {
  check_shape(img.width, img.height, img.channels, where);
  if (img.data.size() != size_t(img.pixels()) * size_t(img.channels))
    throw Error(std::string("wgc: ") + where + ": image data holds " + std::to_string(img.data.size()) +
                " bytes, expected " + std::to_string(size_t(img.pixels()) * size_t(img.channels)));
}

Image::Image(int w, int h, int c) : width(w), height(h), channels(c) {
  check_shape(w, h, c, "Image");
  data.assign(size_t(w) * size_t(h) * size_t(c), 0);
}

// --- float forms ---------------------------------------------------------------------------

std::vector<float> to_float(const Image& img) {
  check_image(img, "to_float");
  std::vector<float> v(img.data.size());
  for (size_t i = 0; i < v.size(); ++i) v[i] = float(img.data[i]) * (1.f / 255.f);
  return v;
}

std::vector<float> to_gray(const Image& img) {
  check_image(img, "to_gray");
  size_t n = size_t(img.pixels()), c = size_t(img.channels);
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    const uint8_t* p = &img.data[i * c];
    float g = c == 1 ? float(p[0]) : 0.299f * float(p[0]) + 0.587f * float(p[1]) + 0.114f * float(p[2]);
    v[i] = g * (1.f / 255.f);
  }
  return v;
}

std::vector<float> to_rgba_planes(const Image& img) {
  check_image(img, "to_rgba_planes");
  size_t n = size_t(img.pixels()), c = size_t(img.channels);
  std::vector<float> v(4 * n);
  for (size_t i = 0; i < n; ++i) {
    const uint8_t* p = &img.data[i * c];
    for (size_t k = 0; k < 3; ++k) v[k * n + i] = float(p[c == 1 ? 0 : k]) * (1.f / 255.f);
    v[3 * n + i] = c == 4 ? float(p[3]) * (1.f / 255.f) : 1.f;
  }
  return v;
}

Image from_float(std::span<const float> v, int width, int height, int channels) {
  Image img(width, height, channels);
  if (v.size() != img.data.size())
    throw Error("wgc: from_float: " + std::to_string(v.size()) + " values for a " + std::to_string(width) + "x" +
                std::to_string(height) + "x" + std::to_string(channels) + " image");
  for (size_t i = 0; i < v.size(); ++i) img.data[i] = to_u8(v[i]);
  return img;
}

Image from_rgba_planes(std::span<const float> planes, int width, int height, int channels) {
  Image img(width, height, channels);
  size_t n = size_t(img.pixels()), c = size_t(channels);
  if (planes.size() != 4 * n)
    throw Error("wgc: from_rgba_planes: " + std::to_string(planes.size()) + " values, expected 4 planes of " +
                std::to_string(n));
  for (size_t i = 0; i < n; ++i) {
    if (c == 1) {
      img.data[i] = to_u8(0.299f * planes[i] + 0.587f * planes[n + i] + 0.114f * planes[2 * n + i]);
      continue;
    }
    for (size_t k = 0; k < c; ++k) img.data[i * c + k] = to_u8(planes[k * n + i]);
  }
  return img;
}

std::vector<float> interleaved_to_planes(std::span<const float> v, int width, int height, int channels) {
  size_t n = size_t(width) * size_t(height), c = size_t(channels);
  if (width <= 0 || height <= 0 || channels <= 0 || v.size() != n * c)
    throw Error("wgc: interleaved_to_planes: " + std::to_string(v.size()) + " values for " + std::to_string(width) +
                "x" + std::to_string(height) + "x" + std::to_string(channels));
  std::vector<float> out(v.size());
  for (size_t i = 0; i < n; ++i)
    for (size_t k = 0; k < c; ++k) out[k * n + i] = v[i * c + k];
  return out;
}

std::vector<float> planes_to_interleaved(std::span<const float> planes, int width, int height, int channels) {
  size_t n = size_t(width) * size_t(height), c = size_t(channels);
  if (width <= 0 || height <= 0 || channels <= 0 || planes.size() != n * c)
    throw Error("wgc: planes_to_interleaved: " + std::to_string(planes.size()) + " values for " +
                std::to_string(width) + "x" + std::to_string(height) + "x" + std::to_string(channels));
  std::vector<float> out(planes.size());
  for (size_t i = 0; i < n; ++i)
    for (size_t k = 0; k < c; ++k) out[i * c + k] = planes[k * n + i];
  return out;
}

}  // namespace wgc
