// Element-wise ops on float, integer (i32) and boolean (i32 0 / 1) tensors with broadcasting over
// up to three operands (src/kernels/elementwise): comparisons, logic, Where, Cast, integer
// arithmetic, PRelu and the float functions (Erf, GELU, Mish, Softplus, trigonometry, ...). The
// description (EwOp, EwParams, EwDims) and the CPU reference are in cpu/elementwise.h. One version:
// one output per invocation (the walk of ops/tensor_ops.h's strided kernels, three operands).
#pragma once

#include "cpu/elementwise.h"
#include "gpu/batch.h"

namespace wgc {

// out (d.count() elements) = op(a, b, c). Tensors of any 4-byte type (their bits are read as the
// op's types say); operands the op does not take may be empty. Every operand's walk is checked
// to stay inside it before anything is recorded.
void elementwise(Batch& batch, const Tensor& a, const Tensor& b, const Tensor& c, const Tensor& out, const EwParams& p,
                 const EwDims& d);

}  // namespace wgc
