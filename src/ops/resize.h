// Resize by taps (src/kernels/resize): up to two axes of a tensor resized at once from a table of
// (index, weight) pairs per output row and column that the host made from the ONNX attributes
// (cpu/resize.h: resize_taps, resize_table; also the CPU reference). One output per invocation.
#pragma once

#include "cpu/resize.h"
#include "gpu/batch.h"

namespace wgc {

void resize(Batch& batch, const Tensor& x, const Tensor& table, const Tensor& y, const ResizeDims& d);

}  // namespace wgc
