// CPU references for the stencil ops (and the fallback the host-image overloads use below a size
// threshold). Images are float, h rows of w pixels of `channels` interleaved values; borders
// clamp to the edge.
#pragma once

#include <span>
#include <vector>

namespace wgc::cpu {

// The largest Gaussian radius accepted (sigma up to about 1365): beyond it gaussian_radius throws.
inline constexpr int kMaxBlurRadius = 4096;

// radius = ceil(3 sigma). sigma 0 gives radius 0 (the identity); negative, NaN or infinite sigma,
// or a radius above kMaxBlurRadius, throws wgc::Error.
int gaussian_radius(float sigma);
// 2 * radius + 1 weights exp(-k^2 / (2 sigma^2)) for k = -radius..radius, summing to 1.
std::vector<float> gaussian_weights(float sigma);

// Sobel edge magnitude sqrt(gx^2 + gy^2) per channel, with
// gx = [-1 0 1; -2 0 2; -1 0 1] and gy = [-1 -2 -1; 0 0 0; 1 2 1].
std::vector<float> sobel(std::span<const float> img, int w, int h, int channels);

// Separable Gaussian blur per channel: a horizontal pass, then a vertical pass.
std::vector<float> gaussian_blur(std::span<const float> img, int w, int h, int channels, float sigma);

}  // namespace wgc::cpu
