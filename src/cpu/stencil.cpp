#include "cpu/stencil.h"

#include "util/error.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

namespace wgc::cpu {
namespace {

void check(std::span<const float> img, int w, int h, int c, const char* op) {
  if (w <= 0 || h <= 0 || c < 1 || c > 4)
    throw Error(std::string("wgc: ") + op + ": bad image shape " + std::to_string(w) + "x" + std::to_string(h) + "x" +
                std::to_string(c));
  if (img.size() != size_t(w) * size_t(h) * size_t(c))
    throw Error(std::string("wgc: ") + op + ": " + std::to_string(img.size()) + " values for a " + std::to_string(w) +
                "x" + std::to_string(h) + "x" + std::to_string(c) + " image");
}

}  // namespace

int gaussian_radius(float sigma) {
  if (!std::isfinite(sigma) || sigma < 0.f)
    throw Error("wgc: gaussian blur: sigma must be finite and >= 0, got " + std::to_string(sigma));
  double r = std::ceil(3.0 * double(sigma));
  if (r > kMaxBlurRadius) {  // r may be far beyond any integer type: printed as a double
    char buf[160];
    std::snprintf(buf, sizeof buf, "wgc: gaussian blur: sigma %g gives radius %g, above the limit %d", double(sigma), r,
                  int(kMaxBlurRadius));
    throw Error(buf);
  }
  return static_cast<int>(r);
}

std::vector<float> gaussian_weights(float sigma) {
  int r = gaussian_radius(sigma);
  std::vector<float> w(size_t(2 * r + 1));
  if (r == 0) {
    w[0] = 1.f;
    return w;
  }
  std::vector<double> d(w.size());
  double sum = 0, s2 = 2.0 * double(sigma) * double(sigma);
  for (int k = -r; k <= r; ++k) sum += d[size_t(k + r)] = std::exp(-double(k) * double(k) / s2);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(d[i] / sum);
  return w;
}

std::vector<float> sobel(std::span<const float> img, int w, int h, int channels) {
  check(img, w, h, channels, "sobel");
  const size_t c = size_t(channels), row = size_t(w) * c;
  std::vector<float> out(img.size());
  // One value of the output: xm, x0, xp are the element offsets of the left, centre, right pixels.
  auto one = [](const float* up, const float* mid, const float* dn, size_t xm, size_t x0, size_t xp) {
    float gx = (up[xp] + 2.f * mid[xp] + dn[xp]) - (up[xm] + 2.f * mid[xm] + dn[xm]);
    float gy = (dn[xm] + 2.f * dn[x0] + dn[xp]) - (up[xm] + 2.f * up[x0] + up[xp]);
    return std::sqrt(gx * gx + gy * gy);
  };
  for (int y = 0; y < h; ++y) {
    const float* up = img.data() + size_t(std::max(y - 1, 0)) * row;
    const float* mid = img.data() + size_t(y) * row;
    const float* dn = img.data() + size_t(std::min(y + 1, h - 1)) * row;
    float* o = out.data() + size_t(y) * row;
    for (int x : {0, w - 1}) {  // the clamped columns
      size_t xm = size_t(std::max(x - 1, 0)) * c, x0 = size_t(x) * c, xp = size_t(std::min(x + 1, w - 1)) * c;
      for (size_t k = 0; k < c; ++k) o[x0 + k] = one(up, mid, dn, xm + k, x0 + k, xp + k);
    }
    for (size_t i = c; i + c < row; ++i) o[i] = one(up, mid, dn, i - c, i, i + c);  // the rest (vectorizes)
  }
  return out;
}

std::vector<float> gaussian_blur(std::span<const float> img, int w, int h, int channels, float sigma) {
  check(img, w, h, channels, "gaussian_blur");
  const std::vector<float> wt = gaussian_weights(sigma);
  const int r = static_cast<int>(wt.size() / 2);
  const size_t c = size_t(channels), row = size_t(w) * c, taps = wt.size();
  std::vector<float> tmp(img.size()), out(img.size());
  // Horizontal: each row padded with clamped copies of its end pixels, then convolved.
  std::vector<float> pad((size_t(w) + 2 * size_t(r)) * c);
  for (int y = 0; y < h; ++y) {
    const float* s = img.data() + size_t(y) * row;
    for (int x = -r; x < w + r; ++x) {
      size_t sx = size_t(std::clamp(x, 0, w - 1)) * c, px = size_t(x + r) * c;
      for (size_t k = 0; k < c; ++k) pad[px + k] = s[sx + k];
    }
    // Tap by tap over the whole row (vectorizes; each output still sums its taps in order k = 0..).
    float* t = tmp.data() + size_t(y) * row;
    std::fill(t, t + row, 0.f);
    for (size_t k = 0; k < taps; ++k) {
      const float* p = pad.data() + k * c;
      const float wk = wt[k];
      for (size_t i = 0; i < row; ++i) t[i] += wk * p[i];
    }
  }
  // Vertical: whole rows at a time (the inner loop runs along the row).
  for (int y = 0; y < h; ++y) {
    float* o = out.data() + size_t(y) * row;
    std::fill(o, o + row, 0.f);
    for (size_t k = 0; k < taps; ++k) {
      const float* t = tmp.data() + size_t(std::clamp(y + int(k) - r, 0, h - 1)) * row;
      const float wk = wt[k];
      for (size_t i = 0; i < row; ++i) o[i] += wk * t[i];
    }
  }
  return out;
}

}  // namespace wgc::cpu
