#include "cpu/elementwise.h"

#include "util/error.h"

#include <algorithm>
#include <cmath>

namespace wgc {

namespace {

std::string join(std::span<const int64_t> v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s.append(i ? "," : "").append(std::to_string(v[i]));
  return s.append("]");
}

}  // namespace

std::string_view to_string(EwOp op) {
  switch (op) {
    case EwOp::PRelu: return "prelu";
    case EwOp::Equal: return "equal";
    case EwOp::Less: return "less";
    case EwOp::Greater: return "greater";
    case EwOp::LessOrEqual: return "less-or-equal";
    case EwOp::GreaterOrEqual: return "greater-or-equal";
    case EwOp::And: return "and";
    case EwOp::Or: return "or";
    case EwOp::Xor: return "xor";
    case EwOp::Add: return "add";
    case EwOp::Sub: return "sub";
    case EwOp::Mul: return "mul";
    case EwOp::Div: return "div";
    case EwOp::Mod: return "mod";
    case EwOp::FMod: return "fmod";
    case EwOp::Max: return "max";
    case EwOp::Min: return "min";
    case EwOp::Not: return "not";
    case EwOp::Neg: return "neg";
    case EwOp::Abs: return "abs";
    case EwOp::CastToFloat: return "cast-to-float";
    case EwOp::CastToInt: return "cast-to-int";
    case EwOp::CastToBool: return "cast-to-bool";
    case EwOp::IsNaN: return "isnan";
    case EwOp::IsInf: return "isinf";
    case EwOp::Sign: return "sign";
    case EwOp::Erf: return "erf";
    case EwOp::Gelu: return "gelu";
    case EwOp::GeluTanh: return "gelu-tanh";
    case EwOp::Softplus: return "softplus";
    case EwOp::Softsign: return "softsign";
    case EwOp::Mish: return "mish";
    case EwOp::Reciprocal: return "reciprocal";
    case EwOp::Floor: return "floor";
    case EwOp::Ceil: return "ceil";
    case EwOp::Round: return "round";
    case EwOp::Sin: return "sin";
    case EwOp::Cos: return "cos";
    case EwOp::Tan: return "tan";
    case EwOp::Asin: return "asin";
    case EwOp::Acos: return "acos";
    case EwOp::Atan: return "atan";
    case EwOp::Sinh: return "sinh";
    case EwOp::Cosh: return "cosh";
    case EwOp::Asinh: return "asinh";
    case EwOp::Acosh: return "acosh";
    case EwOp::Atanh: return "atanh";
    case EwOp::Selu: return "selu";
    case EwOp::Celu: return "celu";
    case EwOp::ThresholdedRelu: return "thresholded-relu";
    case EwOp::Shrink: return "shrink";
    case EwOp::Where: return "where";
  }
  return "?";
}

int ew_arity(EwOp op) {
  if (op == EwOp::Where) return 3;
  return op <= EwOp::Min ? 2 : 1;
}

bool ew_float_only(EwOp op) {
  return op == EwOp::PRelu || op == EwOp::IsNaN || op == EwOp::IsInf || (op >= EwOp::Erf && op != EwOp::Where);
}

bool ew_int_only(EwOp op) {
  switch (op) {
    case EwOp::And:
    case EwOp::Or:
    case EwOp::Xor:
    case EwOp::Not:
    case EwOp::CastToFloat: return true;
    default: return false;
  }
}

bool ew_int_output(EwOp op, bool ints) {
  switch (op) {
    case EwOp::CastToFloat: return false;
    case EwOp::Equal:
    case EwOp::Less:
    case EwOp::Greater:
    case EwOp::LessOrEqual:
    case EwOp::GreaterOrEqual:
    case EwOp::And:
    case EwOp::Or:
    case EwOp::Xor:
    case EwOp::Not:
    case EwOp::CastToInt:
    case EwOp::CastToBool:
    case EwOp::IsNaN:
    case EwOp::IsInf: return true;
    default: return ints;
  }
}

uint64_t EwDims::count() const {
  uint64_t n = 1;
  for (uint32_t d = 0; d < rank; ++d) n *= shape[d];
  return n;
}

std::vector<int64_t> ew_broadcast_shape(std::span<const std::vector<int64_t>> shapes) {
  if (shapes.empty()) return {};
  std::vector<int64_t> out = shapes[0];
  for (size_t k = 1; k < shapes.size(); ++k) out = broadcast_shape(out, shapes[k]);
  return out;
}

EwDims ew_broadcast(std::span<const std::vector<int64_t>> shapes) {
  if (shapes.empty() || shapes.size() > 3) throw Error("wgc: elementwise: 1 to 3 operands");
  std::vector<int64_t> out = ew_broadcast_shape(shapes);
  size_t r = out.size();
  std::vector<std::vector<int64_t>> st(3, std::vector<int64_t>(r, 0));
  for (size_t k = 0; k < shapes.size(); ++k) {
    const auto& s = shapes[k];
    std::vector<int64_t> c = contiguous_strides(s);
    for (size_t i = 0; i < s.size(); ++i)
      if (s[i] != 1) st[k][r - s.size() + i] = c[i];
  }
  EwDims d;
  // Extent-1 output dims dropped; adjacent dims that walk every operand contiguously merged.
  for (size_t i = 0; i < r; ++i) {
    if (out[i] == 1) continue;
    if (d.rank > 0) {
      uint32_t p = d.rank - 1;
      bool merge = uint64_t(d.shape[p]) * uint64_t(out[i]) <= UINT32_MAX;
      for (size_t k = 0; k < 3 && merge; ++k) merge = d.strides[k][p] == st[k][i] * out[i];
      if (merge) {
        d.shape[p] *= uint32_t(out[i]);
        for (size_t k = 0; k < 3; ++k) d.strides[k][p] = st[k][i];
        continue;
      }
    }
    if (d.rank == kMaxRank) {
      std::string all;
      for (const auto& s : shapes) all += (all.empty() ? "" : " with ") + join(s);
      throw Error("wgc: broadcasting " + all + " needs more than " + std::to_string(kMaxRank) + " dimensions");
    }
    if (out[i] > int64_t(UINT32_MAX)) throw Error("wgc: broadcast extent too large in " + join(out));
    d.shape[d.rank] = uint32_t(out[i]);
    for (size_t k = 0; k < 3; ++k) d.strides[k][d.rank] = st[k][i];
    ++d.rank;
  }
  return d;
}

namespace cpu {

double ew_function(const EwParams& p, double x) {
  constexpr double kPi = 3.14159265358979323846;
  switch (p.op) {
    case EwOp::Erf: return std::erf(x);
    case EwOp::Gelu: return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
    case EwOp::GeluTanh: return 0.5 * x * (1 + std::tanh(std::sqrt(2 / kPi) * (x + 0.044715 * x * x * x)));
    case EwOp::Softplus: return x > 30 ? x : std::log1p(std::exp(x));
    case EwOp::Softsign: return x / (1 + std::fabs(x));
    case EwOp::Mish: return x * std::tanh(x > 30 ? x : std::log1p(std::exp(x)));
    case EwOp::Reciprocal: return 1 / x;
    case EwOp::Floor: return std::floor(x);
    case EwOp::Ceil: return std::ceil(x);
    case EwOp::Round: return std::nearbyint(x);  // the default rounding mode: half to even
    case EwOp::Sin: return std::sin(x);
    case EwOp::Cos: return std::cos(x);
    case EwOp::Tan: return std::tan(x);
    case EwOp::Asin: return std::asin(x);
    case EwOp::Acos: return std::acos(x);
    case EwOp::Atan: return std::atan(x);
    case EwOp::Sinh: return std::sinh(x);
    case EwOp::Cosh: return std::cosh(x);
    case EwOp::Asinh: return std::asinh(x);
    case EwOp::Acosh: return std::acosh(x);
    case EwOp::Atanh: return std::atanh(x);
    case EwOp::Selu: return x > 0 ? p.beta * x : p.beta * p.alpha * std::expm1(x);
    case EwOp::Celu: return std::max(0.0, x) + std::min(0.0, p.alpha * std::expm1(x / p.alpha));
    case EwOp::ThresholdedRelu: return x > p.alpha ? x : 0;
    case EwOp::Shrink: return x < -p.alpha ? x + p.beta : x > p.alpha ? x - p.beta : 0;
    default: throw Error("wgc: elementwise: " + std::string(to_string(p.op)) + " is not a float function");
  }
}

namespace {

// Wrapping arithmetic (two's complement, as the kernels' i32; no signed overflow on the host).
int64_t wrap_add(int64_t a, int64_t b) { return int64_t(uint64_t(a) + uint64_t(b)); }
int64_t wrap_sub(int64_t a, int64_t b) { return int64_t(uint64_t(a) - uint64_t(b)); }
int64_t wrap_mul(int64_t a, int64_t b) { return int64_t(uint64_t(a) * uint64_t(b)); }

int64_t int_op(EwOp op, int64_t a, int64_t b, bool wrap32) {
  switch (op) {
    case EwOp::Add: return wrap_add(a, b);
    case EwOp::Sub: return wrap_sub(a, b);
    case EwOp::Mul: return wrap32 ? wrap_mul(narrow_int(a), narrow_int(b)) : wrap_mul(a, b);
    case EwOp::Div: {
      int64_t lo = wrap32 ? INT32_MIN : INT64_MIN;
      if (b == 0 || (a == lo && b == -1)) return a;
      return a / b;
    }
    case EwOp::Mod:
    case EwOp::FMod: {
      int64_t lo = wrap32 ? INT32_MIN : INT64_MIN;
      if (b == 0 || (a == lo && b == -1)) return 0;
      int64_t r = a % b;
      if (op == EwOp::Mod && r != 0 && ((r < 0) != (b < 0))) r += b;
      return r;
    }
    case EwOp::Max: return std::max(a, b);
    case EwOp::Min: return std::min(a, b);
    default: return 0;
  }
}

// Integers compared as int64 (values beyond 2^53 differ as doubles), floats as doubles.
template <typename T>
bool compare(EwOp op, T a, T b) {
  switch (op) {
    case EwOp::Equal: return a == b;
    case EwOp::Less: return a < b;
    case EwOp::Greater: return a > b;
    case EwOp::LessOrEqual: return a <= b;
    case EwOp::GreaterOrEqual: return a >= b;
    default: return false;
  }
}

}  // namespace

void elementwise(const EwParams& p, const EwDims& d, std::span<const ConstWords> in, const Words& out) {
  int arity = ew_arity(p.op);
  std::string name = "wgc: elementwise " + std::string(to_string(p.op));
  if (int(in.size()) < arity) throw Error(name + ": " + std::to_string(arity) + " operands needed");
  uint64_t total = d.count();
  if (out.n < total)
    throw Error(name + ": the output holds " + std::to_string(out.n) + " elements, needs " + std::to_string(total));
  // Every operand's reach first (the walk below reads without checks).
  for (int k = 0; k < arity; ++k) {
    int64_t hi = 0;
    for (uint32_t i = 0; i < d.rank; ++i) {
      if (d.strides[size_t(k)][i] < 0) throw Error(name + ": negative stride");
      hi += d.strides[size_t(k)][i] * int64_t(d.shape[i] ? d.shape[i] - 1 : 0);
    }
    if (total && uint64_t(hi) >= in[size_t(k)].n)
      throw Error(name + ": operand " + std::to_string(k) + " holds " + std::to_string(in[size_t(k)].n) +
                  " elements, the walk reaches " + std::to_string(hi));
  }
  bool wrap32 = out.type == WordType::I32 || (arity > 0 && in[0].type == WordType::I32);
  std::array<uint32_t, kMaxRank> idx{};
  std::array<int64_t, 3> off{};
  const ConstWords& a = in[0];
  for (uint64_t n = 0; n < total; ++n) {
    const uint64_t ia = uint64_t(off[0]), ib = uint64_t(off[1]), ic = uint64_t(off[2]);
    switch (p.op) {
      case EwOp::PRelu: {
        float x = a.f(ia);
        out.set_f(n, x >= 0 ? x : in[1].f(ib) * x);
        break;
      }
      case EwOp::Equal:
      case EwOp::Less:
      case EwOp::Greater:
      case EwOp::LessOrEqual:
      case EwOp::GreaterOrEqual:
        out.set_i(n, p.ints ? compare(p.op, a.i(ia), in[1].i(ib)) : compare(p.op, a.d(ia), in[1].d(ib)));
        break;
      case EwOp::And: out.set_i(n, a.i(ia) != 0 && in[1].i(ib) != 0); break;
      case EwOp::Or: out.set_i(n, a.i(ia) != 0 || in[1].i(ib) != 0); break;
      case EwOp::Xor: out.set_i(n, (a.i(ia) != 0) != (in[1].i(ib) != 0)); break;
      case EwOp::Add:
      case EwOp::Sub:
      case EwOp::Mul:
      case EwOp::Div:
      case EwOp::Mod:
      case EwOp::FMod:
      case EwOp::Max:
      case EwOp::Min:
        if (p.ints) {
          out.set_i(n, int_op(p.op, a.i(ia), in[1].i(ib), wrap32));
        } else {
          double x = a.d(ia), y = in[1].d(ib);
          double r = p.op == EwOp::Add   ? x + y
                     : p.op == EwOp::Sub ? x - y
                     : p.op == EwOp::Mul ? x * y
                     : p.op == EwOp::Div ? x / y
                     : p.op == EwOp::Max ? std::max(x, y)
                     : p.op == EwOp::Min ? std::min(x, y)
                                         : std::fmod(x, y);
          out.set_f(n, float(r));
        }
        break;
      case EwOp::Not: out.set_i(n, a.i(ia) == 0); break;
      case EwOp::Neg: out.set_i(n, wrap_sub(0, a.i(ia))); break;
      case EwOp::Abs: out.set_i(n, a.i(ia) < 0 ? wrap_sub(0, a.i(ia)) : a.i(ia)); break;
      case EwOp::CastToFloat: out.set_f(n, float(a.i(ia))); break;
      case EwOp::CastToInt: out.set_i(n, float_to_int(double(a.f(ia)))); break;
      case EwOp::CastToBool: out.set_i(n, p.ints ? a.i(ia) != 0 : a.f(ia) != 0.f); break;
      case EwOp::IsNaN: out.set_i(n, std::isnan(a.f(ia))); break;
      case EwOp::IsInf: {
        float x = a.f(ia);
        out.set_i(n, std::isinf(x) && ((x > 0 && p.alpha != 0) || (x < 0 && p.beta != 0)));
        break;
      }
      case EwOp::Sign:
        if (p.ints) {
          int64_t x = a.i(ia);
          out.set_i(n, (x > 0) - (x < 0));
        } else {
          float x = a.f(ia);
          out.set_f(n, std::isnan(x) ? x : float((x > 0) - (x < 0)));
        }
        break;
      case EwOp::Where: out.copy(n, a.i(ia) != 0 ? in[1] : in[2], a.i(ia) != 0 ? ib : ic); break;
      default: out.set_f(n, float(ew_function(p, double(a.f(ia))))); break;
    }
    for (int dd = int(d.rank) - 1; dd >= 0; --dd) {
      if (++idx[size_t(dd)] < d.shape[size_t(dd)]) {
        for (size_t k = 0; k < 3; ++k) off[k] += d.strides[k][size_t(dd)];
        break;
      }
      for (size_t k = 0; k < 3; ++k) off[k] -= d.strides[k][size_t(dd)] * int64_t(d.shape[size_t(dd)] - 1);
      idx[size_t(dd)] = 0;
    }
  }
}

}  // namespace cpu
}  // namespace wgc
