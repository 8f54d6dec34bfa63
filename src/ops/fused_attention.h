// Fused attention for the ONNX graphs (cnn/fuse.h's FusedAttention node; description and CPU
// reference: cpu/fused_attention.h): one kernel, src/kernels/attention/fused.wgsl, one workgroup
// per query row, scores never in memory. mask may be an empty Tensor when d.mask is false.
#pragma once

#include "cpu/fused_attention.h"
#include "gpu/batch.h"

namespace wgc {

void fused_attention(Batch& batch, const Tensor& q, const Tensor& kt, const Tensor& v, const Tensor& mask,
                     const Tensor& out, const FusedAttentionDims& d);

}  // namespace wgc
