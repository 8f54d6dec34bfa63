#include "cnn/vision.h"

#include "cnn/imagenet.h"
#include "util/error.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace wgc::cnn {

namespace {

uint8_t to8(float v) { return uint8_t(std::clamp(std::lround(v * 255.f), 0l, 255l)); }

}  // namespace

HostTensor image_tensor(const Image& img, int width, int height, const std::array<float, 3>& mean,
                        const std::array<float, 3>& std) {
  check_image(img, "image_tensor");
  if (width <= 0 || height <= 0 || int64_t(width) * height > kMaxImagePixels)
    throw Error("wgc: image_tensor: a size of " + std::to_string(width) + " x " + std::to_string(height));
  Image scaled = img.width == width && img.height == height ? img : resize_bilinear(img, width, height);
  size_t n = size_t(width) * size_t(height);
  HostTensor t({1, 3, height, width}, std::vector<float>(3 * n));
  for (size_t p = 0; p < n; ++p)
    for (size_t c = 0; c < 3; ++c) {
      float v = scaled.data[p * size_t(scaled.channels) + (scaled.channels >= 3 ? c : 0)] / 255.f;
      t.f[c * n + p] = (v - mean[c]) / std[c];
    }
  return t;
}

std::vector<int32_t> class_map(const HostTensor& logits) {
  if (logits.integer || logits.shape.size() != 4 || logits.shape[0] != 1 || logits.shape[1] < 1)
    throw Error("wgc: segmentation: the model's output is " + shape_string(logits.shape) + ", not [1, classes, h, w]");
  size_t classes = size_t(logits.shape[1]), n = size_t(logits.shape[2] * logits.shape[3]);
  std::vector<int32_t> map(n, 0);
  for (size_t p = 0; p < n; ++p) {
    float best = logits.f[p];
    for (size_t c = 1; c < classes; ++c)
      if (logits.f[c * n + p] > best) best = logits.f[c * n + p], map[p] = int32_t(c);
  }
  return map;
}

std::array<uint8_t, 3> class_colour(int c) {
  std::array<uint8_t, 3> rgb{};
  for (int bit = 7; c > 0; --bit, c >>= 3)
    for (int k = 0; k < 3; ++k) rgb[size_t(k)] |= uint8_t(((c >> k) & 1) << bit);
  return rgb;
}

Image overlay_classes(const Image& img, std::span<const int32_t> map, int w, int h, float alpha) {
  check_image(img, "overlay_classes");
  if (w <= 0 || h <= 0 || map.size() != size_t(w) * size_t(h))
    throw Error("wgc: overlay_classes: a map of " + std::to_string(map.size()) + " values is not " + std::to_string(w) +
                " x " + std::to_string(h));
  Image out(img.width, img.height, 3);
  for (int y = 0; y < img.height; ++y)
    for (int x = 0; x < img.width; ++x) {
      int mx = std::min(w - 1, int(int64_t(x) * w / img.width)), my = std::min(h - 1, int(int64_t(y) * h / img.height));
      int c = map[size_t(my) * size_t(w) + size_t(mx)];
      auto col = class_colour(c);
      for (int k = 0; k < 3; ++k) {
        float v = img.at(x, y, img.channels >= 3 ? k : 0);
        out.at(x, y, k) = c == 0 ? uint8_t(v) : uint8_t(std::lround((1 - alpha) * v + alpha * col[size_t(k)]));
      }
    }
  return out;
}

namespace {

// 3 x 5 pixel digits, one row of three bits per line (the class numbers drawn above the boxes).
constexpr uint16_t kDigits[10] = {0x7B6F, 0x2C97, 0x73E7, 0x73CF, 0x5BC9, 0x79CF, 0x79EF, 0x7249, 0x7BEF, 0x7BCF};

void put(Image& img, int x, int y, const std::array<uint8_t, 3>& col) {
  if (x < 0 || y < 0 || x >= img.width || y >= img.height) return;
  for (int k = 0; k < 3; ++k) img.at(x, y, k) = col[size_t(k)];
}

void draw_number(Image& img, int x, int y, int value, const std::array<uint8_t, 3>& col, int scale) {
  std::string s = std::to_string(value);
  for (char ch : s) {
    uint16_t g = kDigits[ch - '0'];
    for (int r = 0; r < 5; ++r)
      for (int c = 0; c < 3; ++c)
        if (g >> (14 - (r * 3 + c)) & 1)
          for (int dy = 0; dy < scale; ++dy)
            for (int dx = 0; dx < scale; ++dx) put(img, x + c * scale + dx, y + r * scale + dy, col);
    x += 4 * scale;
  }
}

}  // namespace

Image draw_detections(const Image& img, std::span<const Detection> dets) {
  check_image(img, "draw_detections");
  Image out(img.width, img.height, 3);
  for (int y = 0; y < img.height; ++y)
    for (int x = 0; x < img.width; ++x)
      for (int k = 0; k < 3; ++k) out.at(x, y, k) = img.at(x, y, img.channels >= 3 ? k : 0);
  int thick = std::max(1, std::min(img.width, img.height) / 200);
  for (const auto& d : dets) {
    auto col = class_colour(d.label);
    int x1 = int(std::floor(d.box.x1)), y1 = int(std::floor(d.box.y1));
    int x2 = int(std::ceil(d.box.x2)), y2 = int(std::ceil(d.box.y2));
    x1 = std::clamp(x1, 0, img.width - 1), x2 = std::clamp(x2, 0, img.width - 1);
    y1 = std::clamp(y1, 0, img.height - 1), y2 = std::clamp(y2, 0, img.height - 1);
    for (int t = 0; t < thick; ++t) {
      for (int x = x1; x <= x2; ++x) put(out, x, y1 + t, col), put(out, x, y2 - t, col);
      for (int y = y1; y <= y2; ++y) put(out, x1 + t, y, col), put(out, x2 - t, y, col);
    }
    int scale = std::max(1, thick);
    draw_number(out, x1 + thick, std::max(0, y1 - 6 * scale), d.label, col, scale);
  }
  return out;
}

void rgb_to_ycbcr(float r, float g, float b, float& y, float& cb, float& cr) {
  y = 0.299f * r + 0.587f * g + 0.114f * b;
  cb = 0.5f - 0.168736f * r - 0.331264f * g + 0.5f * b;
  cr = 0.5f + 0.5f * r - 0.418688f * g - 0.081312f * b;
}

void ycbcr_to_rgb(float y, float cb, float cr, float& r, float& g, float& b) {
  r = y + 1.402f * (cr - 0.5f);
  g = y - 0.344136f * (cb - 0.5f) - 0.714136f * (cr - 0.5f);
  b = y + 1.772f * (cb - 0.5f);
}

Image upscale(const Image& img, int model_channels, const std::function<HostTensor(const HostTensor&)>& run) {
  check_image(img, "upscale");
  if (model_channels != 1 && model_channels != 3)
    throw Error("wgc: upscale: the model takes " + std::to_string(model_channels) + " channels (1: luma, 3: RGB)");
  const int w = img.width, h = img.height;
  const size_t n = size_t(w) * size_t(h);
  std::vector<float> rgb(3 * n), ycc(3 * n);
  for (size_t p = 0; p < n; ++p)
    for (int c = 0; c < 3; ++c)
      rgb[size_t(c) * n + p] = img.data[p * size_t(img.channels) + size_t(img.channels >= 3 ? c : 0)] / 255.f;
  HostTensor x({1, model_channels, h, w}, {});
  if (model_channels == 3) {
    x.f = rgb;
  } else {
    x.f.resize(n);
    for (size_t p = 0; p < n; ++p) {
      rgb_to_ycbcr(rgb[p], rgb[n + p], rgb[2 * n + p], ycc[p], ycc[n + p], ycc[2 * n + p]);
      x.f[p] = ycc[p];
    }
  }
  HostTensor y = run(x);
  if (y.integer || y.shape.size() != 4 || y.shape[0] != 1 || y.shape[1] != model_channels || y.shape[2] % h ||
      y.shape[3] % w || y.shape[2] / h != y.shape[3] / w || y.shape[2] < h)
    throw Error("wgc: upscale: the model maps [1, " + std::to_string(model_channels) + ", " + std::to_string(h) + ", " +
                std::to_string(w) + "] to " + shape_string(y.shape) + ", not to a whole multiple of the image");
  const int W = int(y.shape[3]), H = int(y.shape[2]);
  const size_t m = size_t(W) * size_t(H);
  Image out(W, H, 3);
  if (model_channels == 3) {
    for (size_t p = 0; p < m; ++p)
      for (int c = 0; c < 3; ++c) out.data[p * 3 + size_t(c)] = uint8_t(to8(y.f[size_t(c) * m + p]));
    return out;
  }
  // The chroma at the new size by PIL's bilinear filter (through 8 bits, as the image was).
  Image chroma(w, h, 3);
  for (size_t p = 0; p < n; ++p) {
    chroma.data[p * 3 + 1] = to8(ycc[n + p]);
    chroma.data[p * 3 + 2] = to8(ycc[2 * n + p]);
  }
  Image big = resize_bilinear(chroma, W, H);
  for (size_t p = 0; p < m; ++p) {
    float r, g, b;
    ycbcr_to_rgb(y.f[p], big.data[p * 3 + 1] / 255.f, big.data[p * 3 + 2] / 255.f, r, g, b);
    out.data[p * 3] = to8(r);
    out.data[p * 3 + 1] = to8(g);
    out.data[p * 3 + 2] = to8(b);
  }
  return out;
}

}  // namespace wgc::cnn
