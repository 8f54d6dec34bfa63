// Ops that move elements by computed positions or compute positions: Pad (and the zero insertion
// of ConvTranspose), Gather with run-time indices, GatherElements, ArgMax / ArgMin, TopK, CumSum.
// The descriptions and the CPU references of ops/index_ops.h. Element types: cpu/words.h (Pad,
// Gather and GatherElements move any type; indices are integers; ArgMax / TopK read floats and
// write integer positions).
#pragma once

#include "cpu/tensor_ops.h"
#include "cpu/words.h"

#include <cstdint>
#include <span>
#include <string>

namespace wgc {

enum class PadMode { Constant, Reflect, Edge, Wrap };

// y (out_shape, contiguous) from x (in_shape, contiguous): along each dim d, output position o
// reads input position (o - begin[d]) / stride[d] when that divides exactly and lies inside the
// input; otherwise Constant writes `value`, Reflect mirrors (without repeating the edge), Edge
// clamps, Wrap wraps (strides above 1: Constant only, ConvTranspose's zero insertion).
struct PadDims {
  uint32_t rank = 0;
  Dims in_shape{}, out_shape{};
  Strides begin{};
  Dims stride{};
  PadMode mode = PadMode::Constant;
  double value = 0;   // Constant's value (an integer tensor's too)
  bool ints = false;  // the elements are integers (the device writes value as an i32)
  uint64_t in_count() const;
  uint64_t out_count() const;
};
// Dims for ONNX Pad: pads as [begin..., end...] (may be negative: cropping). Extent-1 dims that
// stay 1 are dropped; throws when more than kMaxRank remain or an output extent is negative.
PadDims pad_dims(std::span<const int64_t> in_shape, std::span<const int64_t> pads, PadMode mode, double value);
void check(const PadDims& d);

// y[p][j][q] = x[p][index[j]][q] over x [pre][len][post], index [count] (negative values count
// from the end; values outside [-len, len) read the nearest end: the device cannot stop).
struct GatherDims {
  uint32_t pre = 1, len = 1, post = 1, count = 0;
  uint64_t out_count() const { return uint64_t(pre) * count * post; }
};

// y[i] = x[i with its coordinate along axis replaced by index[i]] over the index shape (rank <= 6;
// x_strides are x's strides, in elements; out-of-range indices as Gather).
struct GatherElementsDims {
  uint32_t rank = 0;
  Dims shape{};         // of the indices and the output
  Strides x_strides{};  // along each dim of x (x may be larger than the indices off the axis)
  uint32_t axis = 0, axis_len = 1;
  uint64_t count() const;
};

// ScatterElements: y = data, then for each position i of the indices (row-major) the element of y
// at i's coordinates with the one along axis replaced by index[i] (negative: from the end) becomes
// updates[i], or is combined with it (add, mul, max, min). Indices outside [-len, len) write nothing
// (constant ones are checked at plan time). For one output element the updates that reach it are
// applied in order of their position along the axis, on the device too (each output walks them),
// so duplicates give the same answer on both paths (the last one, for reduction none).
enum class ScatterReduction { None, Add, Mul, Max, Min };
struct ScatterElementsDims {
  uint32_t rank = 0;
  Dims shape{};        // data and the output
  Dims index_shape{};  // the indices and the updates (each extent at most shape's)
  uint32_t axis = 0;
  ScatterReduction reduction = ScatterReduction::None;
  bool ints = false;  // integer elements (the reductions in integer arithmetic)
  uint64_t count() const;
  uint64_t index_count() const;
};
void check(const ScatterElementsDims& d);

// Position of the largest / smallest value along the middle axis of [outer][len][inner]; ties
// give the first position (select_last: the last).
struct ArgReduceDims {
  AxisDims axis;
  bool max = true, select_last = false;
};

// The k largest (or smallest) values along the middle axis of [outer][len][inner], sorted, ties
// in order of position; values to [outer][k][inner], their positions likewise.
struct TopKDims {
  AxisDims axis;
  uint32_t k = 0;
  bool largest = true;
};

// Running sums along the middle axis of [outer][len][inner] (exclusive: without the element
// itself; reverse: from the end).
struct CumSumDims {
  AxisDims axis;
  bool exclusive = false, reverse = false;
};

namespace cpu {

void pad(const ConstWords& x, const Words& y, const PadDims& d);
void gather(const ConstWords& x, const ConstWords& index, const Words& y, const GatherDims& d);
void gather_elements(const ConstWords& x, const ConstWords& index, const Words& y, const GatherElementsDims& d);
void arg_reduce(std::span<const float> x, const Words& y, const ArgReduceDims& d);
void topk(std::span<const float> x, std::span<float> values, const Words& indices, const TopKDims& d);
void cumsum(const ConstWords& x, const Words& y, const CumSumDims& d);
void scatter_elements(const ConstWords& data, const ConstWords& index, const ConstWords& updates, const Words& y,
                      const ScatterElementsDims& d);
// axis_reduce (cpu/tensor_ops.h) over integer elements, in i64 (the mean truncated toward zero);
// y's type decides how the result is stored (an i32 slot wraps as the device does).
void axis_reduce_ints(AxisReduceOp op, const ConstWords& x, const Words& y, const AxisDims& d);

}  // namespace cpu
}  // namespace wgc
