// Element-wise ops on float, integer and boolean tensors with ONNX broadcasting over up to three
// operands: comparisons and logic (masks), Where, Cast, integer arithmetic (indices), PRelu, and
// the float functions that are not one WGSL expression (Erf, GELU, Mish, Softplus, ...). The
// description and the CPU reference (the judge of ops/elementwise.h and the CPU path of a model).
//
// Types: operands are float32 or integers (int32 on the device, int64 on the host: cpu/words.h);
// booleans are integers 0 / 1. EwParams::ints says which the operands are (Where: its x and y).
#pragma once

#include "cpu/tensor_ops.h"
#include "cpu/words.h"

#include <span>
#include <string_view>

namespace wgc {

enum class EwOp : uint8_t {
  // two operands (a, b)
  PRelu,           // a >= 0 ? a : b * a                       float
  Equal,           // a == b -> bool                           float or int
  Less,            // a < b -> bool
  Greater,         // a > b -> bool
  LessOrEqual,     // a <= b -> bool
  GreaterOrEqual,  // a >= b -> bool
  And,             // bools
  Or,
  Xor,
  Add,  // integer arithmetic (the float forms are BinaryOp), wrapping as i32 on the device
  Sub,
  Mul,
  Div,   // toward zero; x / 0 = x (WGSL's rule)
  Mod,   // the sign of the divisor (Python's %) for ints; float: fmod
  FMod,  // the sign of the dividend (C's fmod), ints or floats
  Max,
  Min,
  // one operand (a)
  Not,          // bool
  Neg,          // int
  Abs,          // int
  CastToFloat,  // from int
  CastToInt,    // from float: toward zero
  CastToBool,   // != 0, from float or int
  IsNaN,        // float -> bool
  IsInf,        // float -> bool; alpha: detect +inf (!= 0), beta: detect -inf
  Sign,         // float or int
  // float functions of a (alpha, beta: the ONNX attributes where the op has them)
  Erf,
  Gelu,      // x Phi(x) with erf
  GeluTanh,  // the tanh approximation
  Softplus,
  Softsign,
  Mish,
  Reciprocal,
  Floor,
  Ceil,
  Round,  // half to even
  Sin,
  Cos,
  Tan,
  Asin,
  Acos,
  Atan,
  Sinh,
  Cosh,
  Asinh,
  Acosh,
  Atanh,
  Selu,             // alpha, gamma (beta)
  Celu,             // alpha
  ThresholdedRelu,  // alpha
  Shrink,           // lambd (alpha), bias (beta)
  // three operands
  Where,  // a (bool) ? b : c; any element type for b and c
};
std::string_view to_string(EwOp op);  // "equal", "where", ...
int ew_arity(EwOp op);                // operands: 1, 2 or 3
bool ew_float_only(EwOp op);          // takes float operands only (PRelu and the functions)
bool ew_int_only(EwOp op);            // takes integer operands only (logic, Not, Neg, Abs, CastToFloat)
// Whether the output is an integer (bool) tensor for operands of this type (ints).
bool ew_int_output(EwOp op, bool ints);

struct EwParams {
  EwOp op = EwOp::Equal;
  bool ints = false;  // the operands are integers (Where: b and c)
  float alpha = 0, beta = 0;
};

// out[i] = op(a[i . s[0]], b[i . s[1]], c[i . s[2]]) over the output shape (strides 0 where an
// operand is broadcast; operands an op does not take have strides 0).
struct EwDims {
  uint32_t rank = 0;
  Dims shape{};
  std::array<Strides, 3> strides{};
  uint64_t count() const;
};
// The broadcast of 1 to 3 operand shapes (throws wgc::Error naming them when they do not
// broadcast, or when the merged output needs more than kMaxRank dims).
EwDims ew_broadcast(std::span<const std::vector<int64_t>> shapes);
std::vector<int64_t> ew_broadcast_shape(std::span<const std::vector<int64_t>> shapes);

namespace cpu {

// The float functions above, in double where it matters (the reference of the kernels).
double ew_function(const EwParams& p, double x);

// in: ew_arity(op) operands, each holding every element its strides reach (checked).
void elementwise(const EwParams& p, const EwDims& d, std::span<const ConstWords> in, const Words& out);

}  // namespace cpu
}  // namespace wgc
