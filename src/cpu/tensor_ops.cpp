#include "cpu/tensor_ops.h"

#include "util/error.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace wgc {

namespace {

uint64_t product(const Dims& shape, uint32_t rank) {
  uint64_t n = 1;
  for (uint32_t d = 0; d < rank; ++d) n *= shape[d];
  return n;
}

std::string join(std::span<const int64_t> v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s.append(i ? "," : "").append(std::to_string(v[i]));
  return s.append("]");
}

// Calls f(src_index, dst_index) for every index of the walk, in row-major order.
template <class F>
void walk(uint32_t rank, const Dims& shape, const Strides& s1, int64_t o1, const Strides& s2, int64_t o2, F&& f) {
  uint64_t total = product(shape, rank);
  if (total == 0) return;
  std::array<uint32_t, kMaxRank> idx{};
  int64_t p1 = o1, p2 = o2;
  for (uint64_t n = 0; n < total; ++n) {
    f(p1, p2);
    for (int d = int(rank) - 1; d >= 0; --d) {
      if (++idx[d] < shape[d]) {
        p1 += s1[d];
        p2 += s2[d];
        break;
      }
      p1 -= s1[d] * (shape[d] - 1);
      p2 -= s2[d] * (shape[d] - 1);
      idx[d] = 0;
    }
  }
}

template <class T>
void copy_impl(std::span<const T> src, std::span<T> dst, const CopyDims& d) {
  walk(d.rank, d.shape, d.src_strides, d.src_offset, d.dst_strides, d.dst_offset, [&](int64_t s, int64_t t) {
    if (s < 0 || size_t(s) >= src.size() || t < 0 || size_t(t) >= dst.size())
      throw Error("wgc: strided copy " + d.str() + " reaches outside its buffers (" + std::to_string(src.size()) +
                  " and " + std::to_string(dst.size()) + " elements)");
    dst[size_t(t)] = src[size_t(s)];
  });
}

template <class T>
T apply(BinaryOp op, T a, T b) {
  switch (op) {
    case BinaryOp::Add: return a + b;
    case BinaryOp::Sub: return a - b;
    case BinaryOp::Mul: return a * b;
    case BinaryOp::Div:
      if constexpr (std::is_integral_v<T>) {
        if (b == 0) throw Error("wgc: integer division by zero");
      }
      return a / b;
    case BinaryOp::Max: return std::max(a, b);
    case BinaryOp::Min: return std::min(a, b);
    case BinaryOp::Pow: return T(std::pow(double(a), double(b)));
  }
  return a;
}

template <class T>
void binary_impl(BinaryOp op, std::span<const T> a, std::span<const T> b, std::span<T> out, const BinaryDims& d) {
  if (out.size() < d.count()) throw Error("wgc: binary " + std::string(to_string(op)) + ": output too small");
  size_t i = 0;
  walk(d.rank, d.shape, d.a_strides, 0, d.b_strides, 0, [&](int64_t s, int64_t t) {
    if (size_t(s) >= a.size() || size_t(t) >= b.size())
      throw Error("wgc: binary " + std::string(to_string(op)) + ": an operand is smaller than its strides say");
    out[i++] = apply(op, a[size_t(s)], b[size_t(t)]);
  });
}

}  // namespace

std::vector<int64_t> contiguous_strides(std::span<const int64_t> shape) {
  std::vector<int64_t> s(shape.size());
  int64_t acc = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    s[i] = acc;
    acc *= shape[i];
  }
  return s;
}

uint64_t CopyDims::count() const { return product(shape, rank); }

std::string CopyDims::str() const {
  // Appends only: GCC 12 warns falsely (-Wrestrict) on "," + std::to_string(x).
  auto list = [&](std::string& s, auto get) {
    for (uint32_t i = 0; i < rank; ++i) s.append(i ? "," : "").append(std::to_string(get(i)));
  };
  std::string s = "[";
  list(s, [&](uint32_t i) { return shape[i]; });
  s.append("] src +").append(std::to_string(src_offset)).append(" (");
  list(s, [&](uint32_t i) { return src_strides[i]; });
  s.append(") dst +").append(std::to_string(dst_offset)).append(" (");
  list(s, [&](uint32_t i) { return dst_strides[i]; });
  return s.append(")");
}

CopyDims copy_dims(std::span<const int64_t> shape, std::span<const int64_t> src_strides, int64_t src_offset,
                   std::span<const int64_t> dst_strides, int64_t dst_offset) {
  if (shape.size() != src_strides.size() || shape.size() != dst_strides.size())
    throw Error("wgc: strided copy: shape and strides differ in rank");
  // Drop extent-1 dimensions (they move nothing) so that higher ranks fit.
  CopyDims d;
  d.src_offset = src_offset;
  d.dst_offset = dst_offset;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0 || shape[i] > int64_t(UINT32_MAX)) throw Error("wgc: strided copy: bad extent in " + join(shape));
    if (shape[i] == 1) continue;
    if (d.rank == kMaxRank)
      throw Error("wgc: strided copy of " + join(shape) + ": more than " + std::to_string(kMaxRank) +
                  " dimensions of extent > 1");
    d.shape[d.rank] = uint32_t(shape[i]);
    d.src_strides[d.rank] = src_strides[i];
    d.dst_strides[d.rank] = dst_strides[i];
    ++d.rank;
  }
  return d;
}

std::string_view to_string(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add: return "add";
    case BinaryOp::Sub: return "sub";
    case BinaryOp::Mul: return "mul";
    case BinaryOp::Div: return "div";
    case BinaryOp::Max: return "max";
    case BinaryOp::Min: return "min";
    case BinaryOp::Pow: return "pow";
  }
  return "?";
}

uint64_t BinaryDims::count() const { return product(shape, rank); }

std::vector<int64_t> broadcast_shape(std::span<const int64_t> a, std::span<const int64_t> b) {
  size_t r = std::max(a.size(), b.size());
  std::vector<int64_t> out(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t x = i + a.size() >= r ? a[i + a.size() - r] : 1;
    int64_t y = i + b.size() >= r ? b[i + b.size() - r] : 1;
    if (x != y && x != 1 && y != 1)
      throw Error("wgc: shapes " + join(a) + " and " + join(b) + " do not broadcast (dimension " + std::to_string(i) +
                  ": " + std::to_string(x) + " vs " + std::to_string(y) + ")");
    out[i] = x == 1 ? y : x;
  }
  return out;
}

BinaryDims broadcast(std::span<const int64_t> a, std::span<const int64_t> b) {
  std::vector<int64_t> out = broadcast_shape(a, b);
  size_t r = out.size();
  std::vector<int64_t> sa(r, 0), sb(r, 0);
  auto fill = [&](std::span<const int64_t> s, std::vector<int64_t>& st) {
    std::vector<int64_t> c = contiguous_strides(s);
    for (size_t i = 0; i < s.size(); ++i)
      if (s[i] != 1) st[r - s.size() + i] = c[i];
  };
  fill(a, sa);
  fill(b, sb);
  BinaryDims d;
  // Merge away extent-1 dims of the output (they move nothing), and adjacent dims that walk
  // both operands contiguously, so that deep shapes fit kMaxRank.
  for (size_t i = 0; i < r; ++i) {
    if (out[i] == 1) continue;
    if (d.rank > 0) {
      uint32_t p = d.rank - 1;
      if (d.a_strides[p] == sa[i] * out[i] && d.b_strides[p] == sb[i] * out[i] &&
          uint64_t(d.shape[p]) * uint64_t(out[i]) <= UINT32_MAX) {
        d.shape[p] *= uint32_t(out[i]);
        d.a_strides[p] = sa[i];
        d.b_strides[p] = sb[i];
        continue;
      }
    }
    if (d.rank == kMaxRank)
      throw Error("wgc: broadcasting " + join(a) + " with " + join(b) + " needs more than " + std::to_string(kMaxRank) +
                  " dimensions");
    if (out[i] > int64_t(UINT32_MAX)) throw Error("wgc: broadcast extent too large in " + join(out));
    d.shape[d.rank] = uint32_t(out[i]);
    d.a_strides[d.rank] = sa[i];
    d.b_strides[d.rank] = sb[i];
    ++d.rank;
  }
  return d;
}

std::string_view to_string(UnaryOp op) {
  switch (op) {
    case UnaryOp::Relu: return "relu";
    case UnaryOp::Clip: return "clip";
    case UnaryOp::Sigmoid: return "sigmoid";
    case UnaryOp::HardSigmoid: return "hard-sigmoid";
    case UnaryOp::HardSwish: return "hard-swish";
    case UnaryOp::LeakyRelu: return "leaky-relu";
    case UnaryOp::Elu: return "elu";
    case UnaryOp::Tanh: return "tanh";
    case UnaryOp::Exp: return "exp";
    case UnaryOp::Log: return "log";
    case UnaryOp::Neg: return "neg";
    case UnaryOp::Abs: return "abs";
    case UnaryOp::Sqrt: return "sqrt";
  }
  return "?";
}

std::string_view to_string(AxisReduceOp op) {
  switch (op) {
    case AxisReduceOp::Sum: return "sum";
    case AxisReduceOp::Mean: return "mean";
    case AxisReduceOp::Max: return "max";
    case AxisReduceOp::Min: return "min";
    case AxisReduceOp::Prod: return "prod";
  }
  return "?";
}

uint64_t BatchedMatmulDims::batches() const { return product(batch, rank); }

namespace cpu {

void strided_copy(std::span<const float> src, std::span<float> dst, const CopyDims& d) { copy_impl(src, dst, d); }
void strided_copy(std::span<const int64_t> src, std::span<int64_t> dst, const CopyDims& d) { copy_impl(src, dst, d); }

void binary(BinaryOp op, std::span<const float> a, std::span<const float> b, std::span<float> out,
            const BinaryDims& d) {
  binary_impl(op, a, b, out, d);
}
void binary(BinaryOp op, std::span<const int64_t> a, std::span<const int64_t> b, std::span<int64_t> out,
            const BinaryDims& d) {
  binary_impl(op, a, b, out, d);
}
float binary(BinaryOp op, float a, float b) { return apply(op, a, b); }

float unary(const UnaryParams& p, float x) {
  switch (p.op) {
    case UnaryOp::Relu: return x > 0 ? x : 0.f;
    case UnaryOp::Clip: return std::min(std::max(x, p.alpha), p.beta);
    case UnaryOp::Sigmoid: return float(1.0 / (1.0 + std::exp(-double(x))));
    case UnaryOp::HardSigmoid: return std::clamp(p.alpha * x + p.beta, 0.f, 1.f);
    case UnaryOp::HardSwish: return x * std::clamp(x / 6.f + 0.5f, 0.f, 1.f);
    case UnaryOp::LeakyRelu: return x >= 0 ? x : p.alpha * x;
    case UnaryOp::Elu: return x >= 0 ? x : float(p.alpha * std::expm1(double(x)));
    case UnaryOp::Tanh: return std::tanh(x);
    case UnaryOp::Exp: return std::exp(x);
    case UnaryOp::Log: return std::log(x);
    case UnaryOp::Neg: return -x;
    case UnaryOp::Abs: return std::fabs(x);
    case UnaryOp::Sqrt: return std::sqrt(x);
  }
  return x;
}

void unary(const UnaryParams& p, std::span<const float> x, std::span<float> y) {
  if (y.size() < x.size()) throw Error("wgc: unary " + std::string(to_string(p.op)) + ": output too small");
  for (size_t i = 0; i < x.size(); ++i) y[i] = unary(p, x[i]);
}

void softmax(std::span<const float> x, std::span<float> y, const AxisDims& d, bool log) {
  if (x.size() < d.count() || y.size() < d.count()) throw Error("wgc: softmax: buffers smaller than the dims");
  for (uint32_t o = 0; o < d.outer; ++o)
    for (uint32_t i = 0; i < d.inner; ++i) {
      size_t base = size_t(o) * d.len * d.inner + i;
      double mx = -std::numeric_limits<double>::infinity();
      for (uint32_t l = 0; l < d.len; ++l) mx = std::max(mx, double(x[base + size_t(l) * d.inner]));
      double sum = 0;
      for (uint32_t l = 0; l < d.len; ++l) sum += std::exp(double(x[base + size_t(l) * d.inner]) - mx);
      for (uint32_t l = 0; l < d.len; ++l) {
        double v = double(x[base + size_t(l) * d.inner]) - mx;
        y[base + size_t(l) * d.inner] = float(log ? v - std::log(sum) : std::exp(v) / sum);
      }
    }
}

void axis_reduce(AxisReduceOp op, std::span<const float> x, std::span<float> y, const AxisDims& d) {
  if (x.size() < d.count() || y.size() < uint64_t(d.outer) * d.inner)
    throw Error("wgc: reduce: buffers smaller than the dims");
  for (uint32_t o = 0; o < d.outer; ++o)
    for (uint32_t i = 0; i < d.inner; ++i) {
      size_t base = size_t(o) * d.len * d.inner + i;
      double acc = op == AxisReduceOp::Max    ? -std::numeric_limits<double>::infinity()
                   : op == AxisReduceOp::Min  ? std::numeric_limits<double>::infinity()
                   : op == AxisReduceOp::Prod ? 1.0
                                              : 0.0;
      for (uint32_t l = 0; l < d.len; ++l) {
        double v = x[base + size_t(l) * d.inner];
        acc = op == AxisReduceOp::Max    ? std::max(acc, v)
              : op == AxisReduceOp::Min  ? std::min(acc, v)
              : op == AxisReduceOp::Prod ? acc * v
                                         : acc + v;
      }
      if (op == AxisReduceOp::Mean) acc /= d.len;
      y[size_t(o) * d.inner + i] = float(acc);
    }
}

void batched_matmul(std::span<const float> a, std::span<const float> b, std::span<float> c,
                    const BatchedMatmulDims& d) {
  uint64_t nb = d.batches();
  if (c.size() < nb * d.m * d.n) throw Error("wgc: batched matmul: output too small");
  size_t i = 0;
  walk(d.rank, d.batch, d.a_strides, 0, d.b_strides, 0, [&](int64_t ao, int64_t bo) {
    if (size_t(ao) + size_t(d.m) * d.k > a.size() || size_t(bo) + size_t(d.k) * d.n > b.size())
      throw Error("wgc: batched matmul: an operand is smaller than its strides say");
    float* cp = c.data() + i * d.m * d.n;
    for (uint32_t m = 0; m < d.m; ++m)
      for (uint32_t n = 0; n < d.n; ++n) {
        double acc = 0;
        for (uint32_t k = 0; k < d.k; ++k)
          acc += double(a[size_t(ao) + size_t(m) * d.k + k]) * double(b[size_t(bo) + size_t(k) * d.n + n]);
        cp[size_t(m) * d.n + n] = float(acc);
      }
    ++i;
  });
}

}  // namespace cpu
}  // namespace wgc
