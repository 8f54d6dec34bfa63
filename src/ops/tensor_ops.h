// The tensor ops an ONNX graph needs besides convolution and pooling, recorded into a Batch (f32).
// The dims types and the CPU references are in cpu/tensor_ops.h. Families and their versions:
//
//   strided_copy  (src/kernels/copy)  Naive: one element per invocation; Vec4: 16 bytes per
//                 invocation where the innermost dim is contiguous and everything is 4-aligned.
//                 Transpose (channel shuffle), Slice, Split, Concat's parts, Gather, Expand.
//   binary        (src/kernels/binary) Strided: one output per invocation with ONNX broadcasting;
//                 Vec4: four outputs per invocation (innermost extent a multiple of 4).
//   unary         activations as expression maps (ops/map.h; versions are MapVersion).
//   softmax       (src/kernels/softmax) Naive: one invocation per row; Workgroup: one workgroup
//                 per row with tree reductions (long rows).
//   axis_reduce   (src/kernels/axis_reduce) the same two rungs for sum / mean / max / min / prod.
//   batched_matmul (src/kernels/batched_matmul) Naive: ONNX MatMul with batch dims; a single
//                 product goes through the SGEMM ladder (ops/matmul.h) instead.
#pragma once

#include "cpu/tensor_ops.h"
#include "gpu/batch.h"
#include "ops/map.h"
#include "ops/op_version.h"

#include <string>
#include <string_view>
#include <vector>

namespace wgc {

// --- strided copy -----------------------------------------------------------------------------
enum class CopyVersion { Auto, Naive, Vec4 };
std::string_view to_string(CopyVersion v);              // "auto", "naive", "vec4"
CopyVersion parse_copy_version(std::string_view name);  // throws naming the op and the valid names
inline constexpr CopyVersion kCopyVersions[] = {CopyVersion::Naive, CopyVersion::Vec4};
bool supports(const Context& ctx, CopyVersion v, const CopyDims& d);
CopyVersion choose_copy(const Context& ctx, const CopyDims& d);
// dst must be f32 and hold every element the walk writes, src every element it reads (checked).
void strided_copy(Batch& batch, const Tensor& src, const Tensor& dst, const CopyDims& d,
                  CopyVersion v = CopyVersion::Auto);

// --- element-wise binary ops with broadcasting --------------------------------------------------
enum class BinaryVersion { Auto, Strided, Vec4 };
std::string_view to_string(BinaryVersion v);  // "auto", "strided", "vec4"
BinaryVersion parse_binary_version(std::string_view name);
inline constexpr BinaryVersion kBinaryVersions[] = {BinaryVersion::Strided, BinaryVersion::Vec4};
bool supports(const Context& ctx, BinaryVersion v, const BinaryDims& d);
BinaryVersion choose_binary(const Context& ctx, const BinaryDims& d);
// out (d.count() elements, contiguous) = a op b. out may be a itself (each element is read by the
// invocation that writes it), not b when b is broadcast.
void binary(Batch& batch, const Tensor& a, const Tensor& b, const Tensor& out, const BinaryDims& d, BinaryOp op,
            BinaryVersion v = BinaryVersion::Auto);

// --- activations ---------------------------------------------------------------------------------
// The WGSL expression in x that unary() maps (e.g. "clamp(x, 0.0, 6.0)").
std::string unary_expression(const UnaryParams& p);
// y = f(x) over all of x (y may be x).
void unary(Batch& batch, const Tensor& x, const Tensor& y, const UnaryParams& p, MapVersion v = MapVersion::Auto);

// --- softmax --------------------------------------------------------------------------------------
enum class SoftmaxVersion { Auto, Naive, Workgroup };
std::string_view to_string(SoftmaxVersion v);  // "auto", "naive", "workgroup"
SoftmaxVersion parse_softmax_version(std::string_view name);
inline constexpr SoftmaxVersion kSoftmaxVersions[] = {SoftmaxVersion::Naive, SoftmaxVersion::Workgroup};
bool supports(const Context& ctx, SoftmaxVersion v, const AxisDims& d);
SoftmaxVersion choose_softmax(const Context& ctx, const AxisDims& d);
void softmax(Batch& batch, const Tensor& x, const Tensor& y, const AxisDims& d, bool log = false,
             SoftmaxVersion v = SoftmaxVersion::Auto);

// --- reductions over one axis ---------------------------------------------------------------------
enum class AxisReduceVersion { Auto, Naive, Workgroup };
std::string_view to_string(AxisReduceVersion v);  // "auto", "naive", "workgroup"
AxisReduceVersion parse_axis_reduce_version(std::string_view name);
inline constexpr AxisReduceVersion kAxisReduceVersions[] = {AxisReduceVersion::Naive, AxisReduceVersion::Workgroup};
bool supports(const Context& ctx, AxisReduceVersion v, const AxisDims& d);
AxisReduceVersion choose_axis_reduce(const Context& ctx, const AxisDims& d);
// y [outer][inner] = op over the middle axis of x [outer][len][inner].
void axis_reduce(Batch& batch, const Tensor& x, const Tensor& y, const AxisDims& d, AxisReduceOp op,
                 AxisReduceVersion v = AxisReduceVersion::Auto);
// The same over i32 elements (shapes, masks: a model's integer tensors on the device), wrapping as
// i32 arithmetic does, the mean truncated; the naive rung (integer tensors are small).
void axis_reduce_ints(Batch& batch, const Tensor& x, const Tensor& y, const AxisDims& d, AxisReduceOp op);

// --- batched matmul -------------------------------------------------------------------------------
enum class BatchedMatmulVersion { Auto, Naive };
std::string_view to_string(BatchedMatmulVersion v);  // "auto", "naive"
BatchedMatmulVersion parse_batched_matmul_version(std::string_view name);
inline constexpr BatchedMatmulVersion kBatchedMatmulVersions[] = {BatchedMatmulVersion::Naive};
bool supports(const Context& ctx, BatchedMatmulVersion v, const BatchedMatmulDims& d);
BatchedMatmulVersion choose_batched_matmul(const Context& ctx, const BatchedMatmulDims& d);
void batched_matmul(Batch& batch, const Tensor& a, const Tensor& b, const Tensor& c, const BatchedMatmulDims& d,
                    BatchedMatmulVersion v = BatchedMatmulVersion::Auto);

}  // namespace wgc
