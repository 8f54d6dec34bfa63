// Normalisation over rows (src/kernels/norm): LayerNormalization, InstanceNormalization,
// GroupNormalization. One workgroup per row (mean, then the variance about it, then the scaled
// output). NormDims and the CPU reference: cpu/norm.h.
#pragma once

#include "cpu/norm.h"
#include "gpu/batch.h"

namespace wgc {

// y [rows][len] from x with scale and bias (d.params() values each).
void norm(Batch& batch, const Tensor& x, const Tensor& scale, const Tensor& bias, const Tensor& y, const NormDims& d);
// stats [rows][2]: each row's mean and 1 / sqrt(var + eps).
void norm_stats(Batch& batch, const Tensor& x, const Tensor& stats, const NormDims& d);

}  // namespace wgc
