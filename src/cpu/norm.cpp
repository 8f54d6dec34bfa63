#include "cpu/norm.h"

#include "util/error.h"

#include <cmath>
#include <vector>

namespace wgc {

uint64_t NormDims::params() const {
  uint64_t r = rows ? std::min<uint64_t>(rows, period) - 1 : 0;
  return r * row_stride + (len ? (len - 1) / div : 0) + 1;
}

void check(const NormDims& d) {
  if (d.period == 0) throw Error("wgc: norm: period is 0");
  if (d.div == 0) throw Error("wgc: norm: div is 0");
  if (d.rows && d.len == 0) throw Error("wgc: norm: rows of length 0");
  if (!(d.eps >= 0)) throw Error("wgc: norm: epsilon " + std::to_string(d.eps) + " is negative");
  if (d.count() > UINT32_MAX) throw Error("wgc: norm: " + std::to_string(d.count()) + " elements exceed 2^32");
}

namespace cpu {

namespace {

void row_moments(std::span<const float> x, const NormDims& d, uint32_t r, double& mean, double& inv_std) {
  const float* p = x.data() + size_t(r) * d.len;
  double s = 0;
  for (uint32_t l = 0; l < d.len; ++l) s += p[l];
  mean = s / d.len;
  double v = 0;
  for (uint32_t l = 0; l < d.len; ++l) v += (p[l] - mean) * (p[l] - mean);
  inv_std = 1 / std::sqrt(v / d.len + double(d.eps));
}

}  // namespace

void norm(std::span<const float> x, std::span<const float> scale, std::span<const float> bias, std::span<float> y,
          const NormDims& d) {
  check(d);
  if (x.size() < d.count() || y.size() < d.count() || scale.size() < d.params() || bias.size() < d.params())
    throw Error("wgc: norm: buffers smaller than the dims (" + std::to_string(d.rows) + " rows of " +
                std::to_string(d.len) + ", " + std::to_string(d.params()) + " parameters)");
  for (uint32_t r = 0; r < d.rows; ++r) {
    double mean, inv;
    row_moments(x, d, r, mean, inv);
    size_t base = size_t(r) * d.len;
    size_t k0 = size_t(r % d.period) * d.row_stride;
    for (uint32_t l = 0; l < d.len; ++l) {
      size_t k = k0 + l / d.div;
      y[base + l] = float((x[base + l] - mean) * inv * scale[k] + bias[k]);
    }
  }
}

void norm_stats(std::span<const float> x, std::span<float> stats, const NormDims& d) {
  check(d);
  if (x.size() < d.count() || stats.size() < 2 * uint64_t(d.rows))
    throw Error("wgc: norm stats: buffers smaller than the dims");
  for (uint32_t r = 0; r < d.rows; ++r) {
    double mean, inv;
    row_moments(x, d, r, mean, inv);
    stats[2 * size_t(r)] = float(mean);
    stats[2 * size_t(r) + 1] = float(inv);
  }
}

}  // namespace cpu
}  // namespace wgc
