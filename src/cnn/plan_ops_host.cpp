// Ops computed on the host from their input's values (needed as values: where the graph computes
// the input at run time it runs in stages, cnn/model.h): Unique (its output's size depends on the
// values), Det (small matrices; LU with partial pivoting in double).
#include "cnn/plan_ops.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

namespace wgc::cnn::detail {
namespace {

// Unique (opset 11): the distinct elements of X (flattened), or its distinct slices along axis;
// sorted (ascending, slices lexicographically) or in order of first occurrence; with the index of
// each one's first occurrence, each element's (slice's) position in Y, and the counts.
NodePlan plan_unique(const Graph&, const Node& n, const std::vector<In>& in) {
  const HostTensor& x = const_input(in, 0, "X");
  Shape xs = x.shape;
  bool flat = !n.has("axis");
  int64_t axis = 0;
  if (flat)
    xs = {x.numel()};
  else
    axis = norm_axis(n.attr_int("axis", 0), xs.size());
  bool sorted = n.attr_int("sorted", 1) != 0;
  int64_t outer = prod(xs, 0, size_t(axis)), len = xs[size_t(axis)], inner = prod(xs, size_t(axis) + 1, xs.size());
  auto value = [&](int64_t k) { return x.integer ? double(x.i[size_t(k)]) : double(x.f[size_t(k)]); };
  auto slice = [&](int64_t l) {
    std::vector<double> s;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) s.push_back(value((o * len + l) * inner + i));
    return s;
  };
  std::vector<std::vector<double>> slices;
  for (int64_t l = 0; l < len; ++l) slices.push_back(slice(l));
  std::vector<int64_t> first;  // first occurrence of each distinct slice, in order of occurrence
  std::map<std::vector<double>, int64_t> seen;
  std::vector<int64_t> which(static_cast<size_t>(len));
  for (int64_t l = 0; l < len; ++l) {
    auto [it, fresh_slice] = seen.emplace(slices[size_t(l)], int64_t(first.size()));
    if (fresh_slice) first.push_back(l);
    which[size_t(l)] = it->second;
  }
  std::vector<int64_t> order(first.size());  // output position -> distinct slice
  std::iota(order.begin(), order.end(), 0);
  if (sorted)
    std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return slices[size_t(first[size_t(a)])] < slices[size_t(first[size_t(b)])];
    });
  std::vector<int64_t> pos(order.size());
  for (size_t k = 0; k < order.size(); ++k) pos[size_t(order[k])] = int64_t(k);
  int64_t u = int64_t(order.size());
  Shape ys = xs;
  ys[size_t(axis)] = u;
  std::vector<double> y(size_t(element_count(ys)));
  std::vector<int64_t> idx, inverse, counts(size_t(u), 0);
  for (int64_t k = 0; k < u; ++k) {
    int64_t l = first[size_t(order[size_t(k)])];
    idx.push_back(l);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) y[size_t((o * u + k) * inner + i)] = value((o * len + l) * inner + i);
  }
  for (int64_t l = 0; l < len; ++l) {
    inverse.push_back(pos[size_t(which[size_t(l)])]);
    ++counts[size_t(inverse.back())];
  }
  NodePlan p;
  if (x.integer)
    p.outs.push_back(constant_out(ints(ys, std::vector<int64_t>(y.begin(), y.end()))).outs[0]);
  else
    p.outs.push_back(constant_out(floats(ys, std::vector<float>(y.begin(), y.end()))).outs[0]);
  p.outs.push_back(constant_out(ints({u}, idx)).outs[0]);
  p.outs.push_back(constant_out(ints({len}, inverse)).outs[0]);
  p.outs.push_back(constant_out(ints({u}, counts)).outs[0]);
  return p;
}

// Det: [..., M, M] -> [...].
NodePlan plan_det(const Graph&, const Node&, const std::vector<In>& in) {
  const HostTensor& x = const_input(in, 0, "X");
  if (x.integer) bad("Det of an integer tensor");
  const Shape& s = x.shape;
  if (s.size() < 2 || s[s.size() - 1] != s[s.size() - 2]) bad("X " + shape_str(s) + " is not [..., M, M]");
  int64_t m = s.back(), mats = prod(s, 0, s.size() - 2);
  if (m > 4096) unsupported("Det of matrices larger than 4096 x 4096");
  std::vector<float> out;
  for (int64_t b = 0; b < mats; ++b) {
    std::vector<double> a(x.f.begin() + b * m * m, x.f.begin() + (b + 1) * m * m);
    double det = 1;
    for (int64_t c = 0; c < m && det != 0; ++c) {
      int64_t piv = c;
      for (int64_t r = c + 1; r < m; ++r)
        if (std::fabs(a[size_t(r * m + c)]) > std::fabs(a[size_t(piv * m + c)])) piv = r;
      if (a[size_t(piv * m + c)] == 0) {
        det = 0;
        break;
      }
      if (piv != c) {
        for (int64_t k = 0; k < m; ++k) std::swap(a[size_t(c * m + k)], a[size_t(piv * m + k)]);
        det = -det;
      }
      det *= a[size_t(c * m + c)];
      for (int64_t r = c + 1; r < m; ++r) {
        double f = a[size_t(r * m + c)] / a[size_t(c * m + c)];
        for (int64_t k = c; k < m; ++k) a[size_t(r * m + k)] -= f * a[size_t(c * m + k)];
      }
    }
    out.push_back(float(det));
  }
  return constant_out(floats(Shape(s.begin(), s.end() - 2), std::move(out)));
}

}  // namespace

void add_host_planners(PlannerTable& t) {
  t.emplace("Unique", plan_unique);
  t.emplace("Det", plan_det);
}

}  // namespace wgc::cnn::detail
