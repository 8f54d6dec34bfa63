// The tensor ops an ONNX graph needs besides convolution and pooling (f32, row-major), on the CPU:
// the references the GPU versions (ops/tensor_ops.h) are checked against, and the CPU path of a
// model (cnn/model.h). The shape types live here (no GPU) and are shared with ops/tensor_ops.h.
//
// Every op is described by a walk over an output shape of at most kMaxRank dimensions with one
// stride per operand (0 where an operand is broadcast), so one description covers Transpose,
// Slice, Split, Concat, Gather and Expand (a strided copy) and ONNX broadcasting (binary ops).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace wgc {

// The most dimensions a strided walk takes (the kernels carry this many in their parameters).
inline constexpr uint32_t kMaxRank = 6;

using Dims = std::array<uint32_t, kMaxRank>;
using Strides = std::array<int64_t, kMaxRank>;

// Row-major strides of `shape` (in elements).
std::vector<int64_t> contiguous_strides(std::span<const int64_t> shape);

// dst[dst_offset + sum_d i_d * dst_strides[d]] = src[src_offset + sum_d i_d * src_strides[d]]
// for every index i of shape (rank dims). Strides may be negative (Slice with a negative step).
struct CopyDims {
  uint32_t rank = 0;
  Dims shape{};
  Strides src_strides{}, dst_strides{};
  int64_t src_offset = 0, dst_offset = 0;
  uint64_t count() const;
  std::string str() const;  // "[2,3,4] src +0 (12,4,1) dst +0 (12,1,3)" (errors, benchmarks)
};

// A copy of all of a tensor of `shape` into dst viewed with dst_strides at dst_offset (Concat's
// parts), or from src seen with src_strides (Transpose, Slice).
CopyDims copy_dims(std::span<const int64_t> shape, std::span<const int64_t> src_strides, int64_t src_offset,
                   std::span<const int64_t> dst_strides, int64_t dst_offset);

enum class BinaryOp { Add, Sub, Mul, Div, Max, Min, Pow };
std::string_view to_string(BinaryOp op);  // "add", "sub", ...

// out[i] = a[i . a_strides] op b[i . b_strides] over the output shape (ONNX multidirectional
// broadcasting: strides 0 where an operand has extent 1 or lacks the dimension).
struct BinaryDims {
  uint32_t rank = 0;
  Dims shape{};
  Strides a_strides{}, b_strides{};
  uint64_t count() const;
};
// The output shape and strides for a op b; throws wgc::Error naming both shapes when they do not
// broadcast, or when the output has more than kMaxRank dims after merging.
BinaryDims broadcast(std::span<const int64_t> a, std::span<const int64_t> b);
std::vector<int64_t> broadcast_shape(std::span<const int64_t> a, std::span<const int64_t> b);

// Activations and other one-input maps; alpha / beta are the ONNX attributes where the op has them
// (Clip: min, max; HardSigmoid: alpha, beta; LeakyRelu, Elu: alpha).
enum class UnaryOp { Relu, Clip, Sigmoid, HardSigmoid, HardSwish, LeakyRelu, Elu, Tanh, Exp, Log, Neg, Abs, Sqrt };
std::string_view to_string(UnaryOp op);  // "relu", "clip", ...
struct UnaryParams {
  UnaryOp op = UnaryOp::Relu;
  float alpha = 0, beta = 0;
};

// Softmax and reductions over one axis of a tensor seen as [outer][len][inner].
struct AxisDims {
  uint32_t outer = 1, len = 1, inner = 1;
  uint64_t count() const { return uint64_t(outer) * len * inner; }
};
enum class AxisReduceOp { Sum, Mean, Max, Min, Prod };
std::string_view to_string(AxisReduceOp op);

// C[b][M,N] = A[b][M,K] x B[b][K,N] with the batch index b walked over batch (rank dims) and
// operand offsets from per-dimension strides (0 where an operand is broadcast), as ONNX MatMul.
struct BatchedMatmulDims {
  uint32_t m = 0, n = 0, k = 0;
  uint32_t rank = 0;  // batch dims, at most kMaxRank - 2
  Dims batch{};
  Strides a_strides{}, b_strides{};  // in elements, per batch dim
  uint64_t batches() const;
  double flops() const { return 2.0 * double(batches()) * m * n * k; }
};

namespace cpu {

void strided_copy(std::span<const float> src, std::span<float> dst, const CopyDims& d);
void strided_copy(std::span<const int64_t> src, std::span<int64_t> dst, const CopyDims& d);

void binary(BinaryOp op, std::span<const float> a, std::span<const float> b, std::span<float> out, const BinaryDims& d);
// Integer arithmetic for shape computations (Div truncates toward zero, as ONNX does for ints).
void binary(BinaryOp op, std::span<const int64_t> a, std::span<const int64_t> b, std::span<int64_t> out,
            const BinaryDims& d);
float binary(BinaryOp op, float a, float b);

float unary(const UnaryParams& p, float x);
void unary(const UnaryParams& p, std::span<const float> x, std::span<float> y);

// y = softmax (or log-softmax) of x along the middle axis, accumulated in double.
void softmax(std::span<const float> x, std::span<float> y, const AxisDims& d, bool log = false);

// y[o][i] = op over l of x[o][l][i] (accumulated in double).
void axis_reduce(AxisReduceOp op, std::span<const float> x, std::span<float> y, const AxisDims& d);

// ONNX MatMul with broadcast batch dims, accumulated in double.
void batched_matmul(std::span<const float> a, std::span<const float> b, std::span<float> c, const BatchedMatmulDims& d);

}  // namespace cpu
}  // namespace wgc
