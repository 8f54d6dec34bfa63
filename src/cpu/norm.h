// Normalisation over rows (LayerNormalization, InstanceNormalization, GroupNormalization): the
// description and the CPU reference (double accumulation) of ops/norm.h.
//
// x is [rows][len]; each row is normalised by its own mean and variance, then scaled and shifted
// by per-element parameters: y[r][l] = (x[r][l] - mean_r) / sqrt(var_r + eps) * scale[k] + bias[k]
// with k = (r % period) * row_stride + l / div. LayerNormalization: period 1, row_stride 0, div 1
// (scale over the normalised dims); InstanceNormalization over [N*C][H*W]: period C, row_stride 1,
// div len (one scale per channel); GroupNormalization over [N*G][C/G*H*W]: period G, and
// row_stride C/G, div H*W for one scale per channel (or row_stride 1, div len: one per group).
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace wgc {

struct NormDims {
  uint32_t rows = 0, len = 0;
  uint32_t period = 1, row_stride = 0, div = 1;
  float eps = 1e-5f;
  uint64_t count() const { return uint64_t(rows) * len; }
  // The number of scale / bias values the indexing reaches.
  uint64_t params() const;
};
// Throws wgc::Error naming the field when the dims are inconsistent (len 0 with rows, div 0...).
void check(const NormDims& d);

namespace cpu {

void norm(std::span<const float> x, std::span<const float> scale, std::span<const float> bias, std::span<float> y,
          const NormDims& d);
// stats[2 r] = mean of row r, stats[2 r + 1] = 1 / sqrt(var + eps) (LayerNormalization's extra
// outputs).
void norm_stats(std::span<const float> x, std::span<float> stats, const NormDims& d);

}  // namespace cpu
}  // namespace wgc
