// Pooling of f32 NCHW tensors (ONNX MaxPool / AveragePool / GlobalAveragePool).
// x [n][c][h][w] -> y [n][c][out_h][out_w]; one invocation per output (pooling is memory-bound
// and its windows overlap little, so the caches serve the re-reads). Global average pooling:
// one workgroup per plane, a tree in workgroup memory.
#pragma once

#include "cpu/conv.h"  // Pool2dDims, PoolKind, check(Pool2dDims): shared with the CPU reference
#include "gpu/batch.h"
#include "ops/thresholds.h"

#include <cstdint>
#include <span>
#include <vector>

namespace wgc {

// Records y = pool(x). Throws for bad dims (check(Pool2dDims)) or tensors too small for them.
void pool2d(Batch& batch, const Tensor& x, const Tensor& y, const Pool2dDims& d, PoolKind kind);
// Records y[n][c] = mean of x[n][c][0 .. hw-1].
void global_average_pool(Batch& batch, const Tensor& x, const Tensor& y, uint32_t n, uint32_t c, uint32_t hw);

// Host memory: the CPU reference below thresholds::kPool2d (elements of x), else the GPU.
std::vector<float> pool2d(const Context& ctx, std::span<const float> x, const Pool2dDims& d, PoolKind kind,
                          Policy policy = {});

}  // namespace wgc
