// Ops that move elements by computed positions or compute positions (descriptions and CPU
// references: cpu/index_ops.h), one kernel family each:
//   pad             (src/kernels/pad)         Pad's four modes, ConvTranspose's zero insertion
//   gather          (src/kernels/gather)      Gather with run-time indices, GatherElements
//   arg_reduce      (src/kernels/arg_reduce)  ArgMax / ArgMin, one invocation per row
//   topk            (src/kernels/topk)        ranks counted per element: sorted values or positions
//   cumsum          (src/kernels/cumsum)      one invocation per line
//   scatter_elements (src/kernels/gather)     each output walks the updates that can reach it
//   roi_align       (src/kernels/roi_align)   one invocation per output, its bin's samples
// Element types: 4-byte words (f32, or i32 for integers and booleans); positions and indices are
// i32. Shapes are checked against the tensors before anything is recorded.
#pragma once

#include "cpu/detect.h"
#include "cpu/index_ops.h"
#include "gpu/batch.h"

namespace wgc {

void pad(Batch& batch, const Tensor& x, const Tensor& y, const PadDims& d);
void gather(Batch& batch, const Tensor& x, const Tensor& index, const Tensor& y, const GatherDims& d);
void gather_elements(Batch& batch, const Tensor& x, const Tensor& index, const Tensor& y, const GatherElementsDims& d);
void arg_reduce(Batch& batch, const Tensor& x, const Tensor& y, const ArgReduceDims& d);
// indices false: the k values; true: their positions (i32). Two calls give both.
void topk(Batch& batch, const Tensor& x, const Tensor& y, const TopKDims& d, bool indices);
// ints: the elements are i32 (else f32).
void cumsum(Batch& batch, const Tensor& x, const Tensor& y, const CumSumDims& d, bool ints);
void scatter_elements(Batch& batch, const Tensor& data, const Tensor& index, const Tensor& updates, const Tensor& y,
                      const ScatterElementsDims& d);
// x f32 [n][c][h][w], rois f32 [rois][4], batch_index i32 [rois] (cpu/detect.h).
void roi_align(Batch& batch, const Tensor& x, const Tensor& rois, const Tensor& batch_index, const Tensor& y,
               const RoiAlignDims& d);

}  // namespace wgc
