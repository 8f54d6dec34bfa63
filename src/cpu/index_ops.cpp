#include "cpu/index_ops.h"

#include "util/error.h"

#include <algorithm>
#include <vector>

namespace wgc {

namespace {

uint64_t product(const Dims& s, uint32_t rank) {
  uint64_t n = 1;
  for (uint32_t d = 0; d < rank; ++d) n *= s[d];
  return n;
}

// The input position of output position o along one dim, or -1 for the constant.
int64_t pad_source(int64_t o, int64_t begin, uint32_t stride, int64_t in, PadMode mode) {
  int64_t c = o - begin;
  if (stride > 1) {
    if (c < 0 || c % stride) return -1;
    c /= stride;
  }
  if (c >= 0 && c < in) return c;
  switch (mode) {
    case PadMode::Constant: return -1;
    case PadMode::Edge: return std::clamp<int64_t>(c, 0, in - 1);
    case PadMode::Wrap: return ((c % in) + in) % in;
    case PadMode::Reflect: {
      if (in == 1) return 0;
      int64_t period = 2 * (in - 1);
      int64_t m = ((c % period) + period) % period;
      return m < in ? m : period - m;
    }
  }
  return -1;
}

int64_t wrap_index(int64_t i, uint32_t len) {
  if (i < 0) i += len;
  return std::clamp<int64_t>(i, 0, int64_t(len) - 1);
}

}  // namespace

uint64_t PadDims::in_count() const { return product(in_shape, rank); }
uint64_t PadDims::out_count() const { return product(out_shape, rank); }

void check(const PadDims& d) {
  if (d.rank > kMaxRank) throw Error("wgc: pad: rank " + std::to_string(d.rank) + " > " + std::to_string(kMaxRank));
  for (uint32_t i = 0; i < d.rank; ++i) {
    if (d.stride[i] == 0) throw Error("wgc: pad: a stride of 0");
    if (d.in_shape[i] == 0 && d.out_shape[i] != 0 && d.mode != PadMode::Constant)
      throw Error("wgc: pad: an empty input dim cannot be reflected, extended or wrapped");
    if (d.stride[i] > 1 && d.mode != PadMode::Constant) throw Error("wgc: pad: strides need the constant mode");
  }
  if (d.out_count() > UINT32_MAX) throw Error("wgc: pad: " + std::to_string(d.out_count()) + " outputs exceed 2^32");
}

PadDims pad_dims(std::span<const int64_t> in_shape, std::span<const int64_t> pads, PadMode mode, double value) {
  size_t r = in_shape.size();
  if (pads.size() != 2 * r)
    throw Error("wgc: pad: " + std::to_string(pads.size()) + " pads for rank " + std::to_string(r));
  PadDims d;
  d.mode = mode;
  d.value = value;
  for (size_t i = 0; i < r; ++i) {
    int64_t out = in_shape[i] + pads[i] + pads[i + r];
    if (out < 0) throw Error("wgc: pad: dim " + std::to_string(i) + " would have extent " + std::to_string(out));
    if (in_shape[i] == 1 && out == 1 && pads[i] == 0) continue;
    if (d.rank == kMaxRank) throw Error("wgc: pad: more than " + std::to_string(kMaxRank) + " dims to pad");
    if (in_shape[i] > INT32_MAX || out > INT32_MAX) throw Error("wgc: pad: an extent over 2^31");
    d.in_shape[d.rank] = uint32_t(in_shape[i]);
    d.out_shape[d.rank] = uint32_t(out);
    d.begin[d.rank] = pads[i];
    d.stride[d.rank] = 1;
    ++d.rank;
  }
  check(d);
  return d;
}

uint64_t GatherElementsDims::count() const { return product(shape, rank); }
uint64_t ScatterElementsDims::count() const { return product(shape, rank); }
uint64_t ScatterElementsDims::index_count() const { return product(index_shape, rank); }

void check(const ScatterElementsDims& d) {
  if (d.rank == 0 || d.rank > kMaxRank || d.axis >= d.rank)
    throw Error("wgc: scatter elements: rank " + std::to_string(d.rank) + ", axis " + std::to_string(d.axis));
  for (uint32_t i = 0; i < d.rank; ++i)
    if (i != d.axis && d.index_shape[i] > d.shape[i])
      throw Error("wgc: scatter elements: the indices' extent " + std::to_string(d.index_shape[i]) + " along dim " +
                  std::to_string(i) + " exceeds the data's " + std::to_string(d.shape[i]));
  if (d.count() >= (uint64_t(1) << 32) || d.index_count() >= (uint64_t(1) << 32))
    throw Error("wgc: scatter elements: more than 2^32 elements");
}

namespace cpu {

void pad(const ConstWords& x, const Words& y, const PadDims& d) {
  check(d);
  uint64_t total = d.out_count();
  if (y.n < total || x.n < d.in_count()) throw Error("wgc: pad: buffers smaller than the dims");
  std::vector<int64_t> in_strides(d.rank);
  int64_t acc = 1;
  for (uint32_t i = d.rank; i-- > 0;) {
    in_strides[i] = acc;
    acc *= d.in_shape[i];
  }
  std::array<uint32_t, kMaxRank> idx{};
  for (uint64_t n = 0; n < total; ++n) {
    int64_t src = 0;
    bool constant = false;
    for (uint32_t i = 0; i < d.rank && !constant; ++i) {
      int64_t c = pad_source(idx[i], d.begin[i], d.stride[i], d.in_shape[i], d.mode);
      if (c < 0)
        constant = true;
      else
        src += c * in_strides[i];
    }
    if (constant) {
      if (y.is_float())
        y.set_f(n, float(d.value));
      else
        y.set_i(n, int64_t(d.value));
    } else {
      y.copy(n, x, uint64_t(src));
    }
    for (uint32_t i = d.rank; i-- > 0;) {
      if (++idx[i] < d.out_shape[i]) break;
      idx[i] = 0;
    }
  }
}

void gather(const ConstWords& x, const ConstWords& index, const Words& y, const GatherDims& d) {
  if (index.n < d.count || y.n < d.out_count() || x.n < uint64_t(d.pre) * d.len * d.post)
    throw Error("wgc: gather: buffers smaller than the dims");
  if (d.len == 0 && d.out_count()) throw Error("wgc: gather: from an empty axis");
  uint64_t o = 0;
  for (uint32_t p = 0; p < d.pre; ++p)
    for (uint32_t j = 0; j < d.count; ++j) {
      uint64_t row = (uint64_t(p) * d.len + uint64_t(wrap_index(index.i(j), d.len))) * d.post;
      for (uint32_t q = 0; q < d.post; ++q) y.copy(o++, x, row + q);
    }
}

void gather_elements(const ConstWords& x, const ConstWords& index, const Words& y, const GatherElementsDims& d) {
  uint64_t total = d.count();
  if (index.n < total || y.n < total) throw Error("wgc: gather elements: buffers smaller than the dims");
  if (d.axis >= d.rank && total) throw Error("wgc: gather elements: axis out of range");
  std::array<uint32_t, kMaxRank> idx{};
  for (uint64_t n = 0; n < total; ++n) {
    int64_t src = 0;
    for (uint32_t i = 0; i < d.rank; ++i)
      src += (i == d.axis ? wrap_index(index.i(n), d.axis_len) : int64_t(idx[i])) * d.x_strides[i];
    if (src < 0 || uint64_t(src) >= x.n) throw Error("wgc: gather elements: reads outside the data");
    y.copy(n, x, uint64_t(src));
    for (uint32_t i = d.rank; i-- > 0;) {
      if (++idx[i] < d.shape[i]) break;
      idx[i] = 0;
    }
  }
}

void arg_reduce(std::span<const float> x, const Words& y, const ArgReduceDims& d) {
  const AxisDims& a = d.axis;
  if (x.size() < a.count() || y.n < uint64_t(a.outer) * a.inner) throw Error("wgc: arg reduce: buffers too small");
  if (a.len == 0) throw Error("wgc: arg reduce: an empty axis");
  for (uint32_t o = 0; o < a.outer; ++o)
    for (uint32_t i = 0; i < a.inner; ++i) {
      size_t base = size_t(o) * a.len * a.inner + i;
      uint32_t best = 0;
      float bv = x[base];
      for (uint32_t l = 1; l < a.len; ++l) {
        float v = x[base + size_t(l) * a.inner];
        bool better = d.max ? (d.select_last ? v >= bv : v > bv) : (d.select_last ? v <= bv : v < bv);
        if (better) best = l, bv = v;
      }
      y.set_i(uint64_t(o) * a.inner + i, best);
    }
}

void topk(std::span<const float> x, std::span<float> values, const Words& indices, const TopKDims& d) {
  const AxisDims& a = d.axis;
  uint64_t outs = uint64_t(a.outer) * d.k * a.inner;
  if (d.k > a.len) throw Error("wgc: topk: k " + std::to_string(d.k) + " > " + std::to_string(a.len));
  if (x.size() < a.count() || values.size() < outs || indices.n < outs) throw Error("wgc: topk: buffers too small");
  std::vector<uint32_t> order(a.len);
  for (uint32_t o = 0; o < a.outer; ++o)
    for (uint32_t i = 0; i < a.inner; ++i) {
      size_t base = size_t(o) * a.len * a.inner + i;
      auto v = [&](uint32_t l) { return x[base + size_t(l) * a.inner]; };
      for (uint32_t l = 0; l < a.len; ++l) order[l] = l;
      std::stable_sort(order.begin(), order.end(),
                       [&](uint32_t p, uint32_t q) { return d.largest ? v(p) > v(q) : v(p) < v(q); });
      for (uint32_t j = 0; j < d.k; ++j) {
        size_t at = (size_t(o) * d.k + j) * a.inner + i;
        values[at] = v(order[j]);
        indices.set_i(at, order[j]);
      }
    }
}

void cumsum(const ConstWords& x, const Words& y, const CumSumDims& d) {
  const AxisDims& a = d.axis;
  if (x.n < a.count() || y.n < a.count()) throw Error("wgc: cumsum: buffers too small");
  for (uint32_t o = 0; o < a.outer; ++o)
    for (uint32_t i = 0; i < a.inner; ++i) {
      size_t base = size_t(o) * a.len * a.inner + i;
      double fs = 0;
      int64_t is = 0;
      for (uint32_t s = 0; s < a.len; ++s) {
        uint32_t l = d.reverse ? a.len - 1 - s : s;
        size_t at = base + size_t(l) * a.inner;
        if (d.exclusive) {
          x.is_float() ? y.set_f(at, float(fs)) : y.set_i(at, is);
        }
        if (x.is_float())
          fs += double(x.f(at));
        else
          is = int64_t(uint64_t(is) + uint64_t(x.i(at)));  // wrapping, as the kernel's i32
        if (!d.exclusive) {
          x.is_float() ? y.set_f(at, float(fs)) : y.set_i(at, is);
        }
      }
    }
}

void scatter_elements(const ConstWords& data, const ConstWords& index, const ConstWords& updates, const Words& y,
                      const ScatterElementsDims& d) {
  check(d);
  uint64_t total = d.count(), m = d.index_count();
  if (data.n < total || y.n < total || index.n < m || updates.n < m)
    throw Error("wgc: scatter elements: buffers smaller than the dims");
  for (uint64_t k = 0; k < total; ++k) y.copy(k, data, k);
  Dims strides{};
  uint64_t acc = 1;
  for (uint32_t i = d.rank; i-- > 0;) strides[i] = uint32_t(acc), acc *= d.shape[i];
  std::array<uint32_t, kMaxRank> idx{};
  int64_t len = d.shape[d.axis];
  for (uint64_t n = 0; n < m; ++n) {
    int64_t j = index.i(n);
    if (j < 0) j += len;
    if (j >= 0 && j < len) {
      uint64_t dst = 0;
      for (uint32_t i = 0; i < d.rank; ++i) dst += uint64_t(i == d.axis ? uint64_t(j) : idx[i]) * strides[i];
      if (d.reduction == ScatterReduction::None) {
        y.copy(dst, updates, n);
      } else if (d.ints) {
        int64_t a = y.in().i(dst), b = updates.i(n);
        int64_t r = d.reduction == ScatterReduction::Add   ? int64_t(uint64_t(a) + uint64_t(b))
                    : d.reduction == ScatterReduction::Mul ? int64_t(uint64_t(a) * uint64_t(b))
                    : d.reduction == ScatterReduction::Max ? std::max(a, b)
                                                           : std::min(a, b);
        y.set_i(dst, r);
      } else {
        float a = y.in().f(dst), b = updates.f(n);
        float r = d.reduction == ScatterReduction::Add   ? a + b
                  : d.reduction == ScatterReduction::Mul ? a * b
                  : d.reduction == ScatterReduction::Max ? std::max(a, b)
                                                         : std::min(a, b);
        y.set_f(dst, r);
      }
    }
    for (uint32_t i = d.rank; i-- > 0;) {
      if (++idx[i] < d.index_shape[i]) break;
      idx[i] = 0;
    }
  }
}

void axis_reduce_ints(AxisReduceOp op, const ConstWords& x, const Words& y, const AxisDims& d) {
  if (x.n < d.count() || y.n < uint64_t(d.outer) * d.inner) throw Error("wgc: reduce: buffers smaller than the dims");
  if (d.len == 0) throw Error("wgc: reduce: an empty axis");
  for (uint32_t o = 0; o < d.outer; ++o)
    for (uint32_t i = 0; i < d.inner; ++i) {
      uint64_t base = uint64_t(o) * d.len * d.inner + i;
      int64_t acc = x.i(base);
      for (uint32_t l = 1; l < d.len; ++l) {
        int64_t v = x.i(base + uint64_t(l) * d.inner);
        switch (op) {
          case AxisReduceOp::Max: acc = std::max(acc, v); break;
          case AxisReduceOp::Min: acc = std::min(acc, v); break;
          case AxisReduceOp::Prod: acc = int64_t(uint64_t(acc) * uint64_t(v)); break;  // wrapping
          default: acc = int64_t(uint64_t(acc) + uint64_t(v)); break;
        }
      }
      if (op == AxisReduceOp::Mean) acc /= int64_t(d.len);
      y.set_i(uint64_t(o) * d.inner + i, acc);
    }
}

}  // namespace cpu
}  // namespace wgc
