// One planner per ONNX op (see plan_ops.h). Attribute defaults and opset differences follow the
// ONNX operator specification (opsets 7..18).
#include "cnn/plan_ops.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

namespace wgc::cnn::detail {
namespace {

// --- views -------------------------------------------------------------------------------------

NodePlan plan_reshape(const Graph& g, const Node& n, const std::vector<In>& in) {
  const In& x = input(in, 0, "data");
  std::vector<int64_t> want = g.opset >= 5 ? const_ints(in, 1, "shape") : n.attr_ints("shape");
  bool allowzero = n.attr_int("allowzero", 0) != 0;
  Shape out(want.size());
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < want.size(); ++i) {
    int64_t v = want[i];
    if (v == 0 && !allowzero) {
      if (i >= x.shape.size())
        bad("shape entry " + std::to_string(i) + " is 0 but the input has rank " + std::to_string(x.shape.size()));
      v = x.shape[i];
    }
    if (v == -1) {
      if (infer >= 0) bad("shape " + shape_str(want) + " has more than one -1");
      infer = int(i);
      continue;
    }
    if (v < 0) bad("shape " + shape_str(want) + " has a negative entry");
    out[i] = v;
    known *= v;
  }
  if (infer >= 0) {
    if (known == 0 || element_count(x.shape) % known)
      bad("cannot reshape " + shape_str(x.shape) + " to " + shape_str(want));
    out[size_t(infer)] = element_count(x.shape) / known;
  }
  if (element_count(out) != element_count(x.shape))
    bad("cannot reshape " + shape_str(x.shape) + " to " + shape_str(want));
  return alias_of(0, out, x.is_int());
}

NodePlan plan_flatten(const Graph&, const Node& n, const std::vector<In>& in) {
  const In& x = input(in, 0, "input");
  int64_t axis = n.attr_int("axis", 1);
  if (axis < 0) axis += int64_t(x.shape.size());
  if (axis < 0 || axis > int64_t(x.shape.size())) bad("axis " + std::to_string(axis) + " is out of range");
  return alias_of(0, {prod(x.shape, 0, size_t(axis)), prod(x.shape, size_t(axis), x.shape.size())}, x.is_int());
}

std::vector<int64_t> axes_of(const Graph& g, const Node& n, const std::vector<In>& in, int64_t input_from_opset,
                             size_t k = 1) {
  if (g.opset >= input_from_opset)
    return in.size() > k && in[k].present ? const_ints(in, k, "axes") : std::vector<int64_t>{};
  return n.attr_ints("axes");
}

NodePlan plan_squeeze(const Graph& g, const Node& n, const std::vector<In>& in) {
  const In& x = input(in, 0, "data");
  std::vector<int64_t> axes = axes_of(g, n, in, 13);
  std::vector<bool> drop(x.shape.size(), false);
  if (axes.empty()) {
    for (size_t i = 0; i < x.shape.size(); ++i) drop[i] = x.shape[i] == 1;
  } else {
    for (int64_t a : axes) {
      int64_t i = norm_axis(a, x.shape.size());
      if (x.shape[size_t(i)] != 1) bad("cannot squeeze axis " + std::to_string(a) + " of " + shape_str(x.shape));
      drop[size_t(i)] = true;
    }
  }
  Shape out;
  for (size_t i = 0; i < x.shape.size(); ++i)
    if (!drop[i]) out.push_back(x.shape[i]);
  return alias_of(0, out, x.is_int());
}

NodePlan plan_unsqueeze(const Graph& g, const Node& n, const std::vector<In>& in) {
  const In& x = input(in, 0, "data");
  std::vector<int64_t> axes = axes_of(g, n, in, 13);
  size_t rank = x.shape.size() + axes.size();
  std::vector<bool> added(rank, false);
  for (int64_t a : axes) {
    int64_t i = norm_axis(a, rank);
    if (added[size_t(i)]) bad("axis " + std::to_string(a) + " is repeated");
    added[size_t(i)] = true;
  }
  Shape out;
  size_t k = 0;
  for (size_t i = 0; i < rank; ++i) out.push_back(added[i] ? 1 : x.shape[k++]);
  return alias_of(0, out, x.is_int());
}

NodePlan plan_identity(const Graph&, const Node& n, const std::vector<In>& in) {
  if (n.op == "Dropout" && n.outputs.size() > 1 && !n.outputs[1].empty())
    unsupported("the mask output of Dropout is not supported");
  if (n.op == "Dropout" && in.size() > 2 && in[2].present) {
    const HostTensor& t = const_input(in, 2, "training_mode");
    if ((t.integer ? t.i : std::vector<int64_t>(t.f.begin(), t.f.end())) != std::vector<int64_t>{0})
      unsupported("Dropout in training mode is not supported");
  }
  const In& x = input(in, 0, "input");
  return alias_of(0, x.shape, x.is_int());
}

// --- constants from shapes ----------------------------------------------------------------------

NodePlan plan_shape(const Graph&, const Node& n, const std::vector<In>& in) {
  const In& x = input(in, 0, "data");
  int64_t r = int64_t(x.shape.size());
  int64_t start = n.attr_int("start", 0), end = n.attr_int("end", r);
  if (start < 0) start += r;
  if (end < 0) end += r;
  start = std::clamp<int64_t>(start, 0, r);
  end = std::clamp<int64_t>(end, start, r);
  std::vector<int64_t> v(x.shape.begin() + start, x.shape.begin() + end);
  return constant_out(ints({int64_t(v.size())}, v));
}

NodePlan plan_size(const Graph&, const Node&, const std::vector<In>& in) {
  return constant_out(ints({}, {element_count(input(in, 0, "data").shape)}));
}

NodePlan plan_constant_of_shape(const Graph&, const Node& n, const std::vector<In>& in) {
  std::vector<int64_t> shape = const_ints(in, 0, "input");
  for (int64_t d : shape)
    if (d < 0) bad("negative dimension in " + shape_str(shape));
  if (element_count(shape) > (1ll << 28)) bad("ConstantOfShape of " + shape_str(shape) + " is too large");
  const Attribute* v = n.attr("value");
  if (v && (v->kind != Attribute::Kind::Tensor || v->t->numel() != 1)) bad("value must be a one-element tensor");
  if (v && v->t->integer)
    return constant_out(ints(shape, std::vector<int64_t>(size_t(element_count(shape)), v->t->i[0])));
  return constant_out(floats(shape, std::vector<float>(size_t(element_count(shape)), v ? v->t->f[0] : 0.f)));
}

NodePlan plan_constant(const Graph&, const Node& n, const std::vector<In>&) {
  if (const Attribute* a = n.attr("value"); a && a->kind == Attribute::Kind::Tensor) return constant_out(a->t);
  unsupported("this form of Constant (sparse or string values) is not supported");
}

NodePlan plan_cast(const Graph&, const Node& n, const std::vector<In>& in) {
  const In& x = input(in, 0, "input");
  int64_t to = n.attr_int("to", 0);
  // float16 / bfloat16 results would need their rounding (and hold their bits in tests): not taken.
  if (to == 10 || to == 16) unsupported("Cast to " + std::string(onnx_type_name(int32_t(to))));
  bool to_float = to == 1 || to == 11;
  bool to_int = (to >= 2 && to <= 7) || to == 9 || to == 12 || to == 13;
  if (!to_float && !to_int) unsupported("Cast to " + std::string(onnx_type_name(int32_t(to))) + " is not supported");
  if (!x.constant) {  // on the device: f32, or i32 for every integer type and bool
    if (to_float) return x.integer ? ew_node({EwOp::CastToFloat, true}, in, 1) : alias_of(0, x.shape);
    if (to == 9) return ew_node({EwOp::CastToBool, x.integer}, in, 1);
    return x.integer ? alias_of(0, x.shape, true) : ew_node({EwOp::CastToInt, false}, in, 1);
  }
  const HostTensor& c = *x.constant;
  if (to_float) {
    if (!c.integer) return constant_out(x.constant);
    std::vector<float> v(c.i.begin(), c.i.end());
    return constant_out(floats(c.shape, v));
  }
  std::vector<int64_t> v;
  if (c.integer) {
    v = c.i;
  } else {
    for (float f : c.f) v.push_back(std::isfinite(f) ? int64_t(f) : 0);
  }
  if (to == 9)
    for (auto& e : v) e = e != 0;
  return constant_out(ints(c.shape, v));
}

NodePlan plan_range(const Graph&, const Node&, const std::vector<In>& in) {
  const HostTensor& s = const_input(in, 0, "start");
  const HostTensor& l = const_input(in, 1, "limit");
  const HostTensor& d = const_input(in, 2, "delta");
  auto scalar = [](const HostTensor& t) { return t.integer ? double(t.i.at(0)) : double(t.f.at(0)); };
  if (s.numel() != 1 || l.numel() != 1 || d.numel() != 1) bad("start, limit and delta must be scalars");
  double a = scalar(s), b = scalar(l), step = scalar(d);
  if (step == 0) bad("delta is 0");
  double count = std::max(0.0, std::ceil((b - a) / step));
  if (count > double(1 << 24)) bad("Range of " + std::to_string(count) + " elements is too large");
  size_t k = size_t(count);
  if (s.integer) {
    std::vector<int64_t> v(k);
    for (size_t i = 0; i < k; ++i) v[i] = s.i[0] + int64_t(i) * d.i.at(0);
    return constant_out(ints({int64_t(k)}, v));
  }
  std::vector<float> v(k);
  for (size_t i = 0; i < k; ++i) v[i] = float(a + double(i) * step);
  return constant_out(floats({int64_t(k)}, v));
}

// --- data movement ------------------------------------------------------------------------------

NodePlan plan_transpose(const Graph&, const Node& n, const std::vector<In>& in) {
  const In& x = input(in, 0, "data");
  size_t r = x.shape.size();
  std::vector<int64_t> perm = n.attr_ints("perm");
  if (perm.empty())
    for (size_t i = 0; i < r; ++i) perm.push_back(int64_t(r - 1 - i));
  if (perm.size() != r) bad("perm has " + std::to_string(perm.size()) + " entries for rank " + std::to_string(r));
  std::vector<bool> seen(r, false);
  auto st = contiguous_strides(x.shape);
  Shape out;
  std::vector<int64_t> src;
  for (int64_t p : perm) {
    int64_t a = norm_axis(p, r, "perm entry");
    if (seen[size_t(a)]) bad("perm repeats axis " + std::to_string(a));
    seen[size_t(a)] = true;
    out.push_back(x.shape[size_t(a)]);
    src.push_back(st[size_t(a)]);
  }
  NodePlan p;
  p.outs.push_back(fresh(out, x.is_int()));
  p.steps.push_back(copy_step(Ref::in(0), Ref::out(0), copy_dims(out, src, 0, contiguous_strides(out), 0)));
  return p;
}

NodePlan plan_concat(const Graph&, const Node& n, const std::vector<In>& in) {
  if (in.empty()) bad("no inputs");
  const In& first = input(in, 0, "input");
  size_t r = first.shape.size();
  if (!n.has("axis")) bad("the axis attribute is required");
  int64_t axis = norm_axis(n.attr_int("axis", 0), r);
  Shape out = first.shape;
  out[size_t(axis)] = 0;
  bool integer = first.is_int();
  for (size_t k = 0; k < in.size(); ++k) {
    const In& x = input(in, k, "input");
    if (x.shape.size() != r || x.is_int() != integer) bad("inputs differ in rank or type");
    for (size_t d = 0; d < r; ++d)
      if (int64_t(d) != axis && x.shape[d] != first.shape[d])
        bad("input " + std::to_string(k) + " has shape " + shape_str(x.shape) + ", input 0 " + shape_str(first.shape));
    out[size_t(axis)] += x.shape[size_t(axis)];
  }
  NodePlan p;
  p.outs.push_back(fresh(out, integer));
  auto ost = contiguous_strides(out);
  int64_t at = 0;
  for (size_t k = 0; k < in.size(); ++k) {
    const Shape& s = in[k].shape;
    if (element_count(s) > 0)
      p.steps.push_back(
          copy_step(Ref::in(int(k)), Ref::out(0), copy_dims(s, contiguous_strides(s), 0, ost, at * ost[size_t(axis)])));
    at += s[size_t(axis)];
  }
  return p;
}

NodePlan plan_split(const Graph& g, const Node& n, const std::vector<In>& in) {
  const In& x = input(in, 0, "input");
  size_t r = x.shape.size();
  int64_t axis = norm_axis(n.attr_int("axis", 0), r);
  int64_t len = x.shape[size_t(axis)];
  std::vector<int64_t> parts;
  if (g.opset >= 13 && in.size() > 1 && in[1].present)
    parts = const_ints(in, 1, "split");
  else if (g.opset < 13)
    parts = n.attr_ints("split");
  size_t count = n.outputs.size();
  if (parts.empty()) {
    if (n.has("num_outputs")) count = size_t(n.attr_int("num_outputs", 1));
    if (count == 0) bad("no outputs");
    int64_t each = (len + int64_t(count) - 1) / int64_t(count);
    for (size_t k = 0; k < count; ++k) parts.push_back(std::clamp<int64_t>(len - each * int64_t(k), 0, each));
  }
  if (parts.size() != n.outputs.size())
    bad(std::to_string(parts.size()) + " split sizes for " + std::to_string(n.outputs.size()) + " outputs");
  if (std::accumulate(parts.begin(), parts.end(), int64_t(0)) != len)
    bad("split sizes do not add up to " + std::to_string(len));
  NodePlan p;
  auto st = contiguous_strides(x.shape);
  int64_t at = 0;
  for (size_t k = 0; k < parts.size(); ++k) {
    if (parts[k] < 0) bad("a negative split size");
    Shape s = x.shape;
    s[size_t(axis)] = parts[k];
    p.outs.push_back(fresh(s, x.is_int()));
    if (element_count(s) > 0)
      p.steps.push_back(
          copy_step(Ref::in(0), Ref::out(int(k)), copy_dims(s, st, at * st[size_t(axis)], contiguous_strides(s), 0)));
    at += parts[k];
  }
  return p;
}

NodePlan plan_slice(const Graph& g, const Node& n, const std::vector<In>& in) {
  const In& x = input(in, 0, "data");
  size_t r = x.shape.size();
  std::vector<int64_t> starts, ends, axes, steps;
  if (g.opset < 10) {
    starts = n.attr_ints("starts");
    ends = n.attr_ints("ends");
    axes = n.attr_ints("axes");
  } else {
    starts = const_ints(in, 1, "starts");
    ends = const_ints(in, 2, "ends");
    if (in.size() > 3 && in[3].present) axes = const_ints(in, 3, "axes");
    if (in.size() > 4 && in[4].present) steps = const_ints(in, 4, "steps");
  }
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(int64_t(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    bad("starts, ends, axes and steps differ in length");
  auto st = contiguous_strides(x.shape);
  Shape out = x.shape;
  std::vector<int64_t> src = st;
  int64_t offset = 0;
  std::vector<bool> seen(r, false);
  for (size_t i = 0; i < starts.size(); ++i) {
    size_t a = size_t(norm_axis(axes[i], r));
    if (seen[a]) bad("axis " + std::to_string(a) + " is sliced twice");
    seen[a] = true;
    int64_t dim = x.shape[a], step = steps[i];
    if (step == 0) bad("a step of 0");
    int64_t s = starts[i], e = ends[i];
    if (s < 0) s += dim;
    if (e < 0) e += dim;
    int64_t count;
    if (step > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      count = e > s ? (e - s + step - 1) / step : 0;
    } else {
      s = std::clamp<int64_t>(s, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      count = s > e ? (s - e + (-step) - 1) / (-step) : 0;
    }
    out[a] = count;
    if (count > 0) offset += s * st[a];
    src[a] = st[a] * step;
  }
  NodePlan p;
  p.outs.push_back(fresh(out, x.is_int()));
  if (element_count(out) > 0)
    p.steps.push_back(copy_step(Ref::in(0), Ref::out(0), copy_dims(out, src, offset, contiguous_strides(out), 0)));
  return p;
}

NodePlan plan_gather(const Graph&, const Node& n, const std::vector<In>& in) {
  const In& x = input(in, 0, "data");
  const In& ind = input(in, 1, "indices");
  if (!ind.is_int()) bad("indices must be an integer tensor");
  const Shape& ishape = ind.shape;
  size_t r = x.shape.size();
  if (r == 0) bad("data is a scalar");
  int64_t axis = norm_axis(n.attr_int("axis", 0), r);
  int64_t len = x.shape[size_t(axis)];
  Shape out(x.shape.begin(), x.shape.begin() + axis);
  out.insert(out.end(), ishape.begin(), ishape.end());
  out.insert(out.end(), x.shape.begin() + axis + 1, x.shape.end());
  int64_t pre = prod(x.shape, 0, size_t(axis)), post = prod(x.shape, size_t(axis) + 1, r);
  NodePlan p;
  p.outs.push_back(fresh(out, x.is_int()));
  if (element_count(out) == 0) return p;
  // Indices computed at run time (token ids into an embedding), or many of them: one gather kernel
  // (indices on the device; constant ones checked here).
  if (!ind.constant || (!x.constant && element_count(ishape) > 64)) {
    if (len == 0) bad("gathers from an empty axis");
    if (ind.constant)
      for (int64_t i : ind.constant->i)
        if (i < -len || i >= len)
          bad("index " + std::to_string(i) + " is out of range for a dimension of " + std::to_string(len));
    GatherDims d{u32(pre, "outer extent"), u32(len, "axis"), u32(post, "inner extent"),
                 u32(element_count(ishape), "indices")};
    p.steps.push_back({GatherStep{d}, {Ref::in(0), Ref::in(1)}, Ref::out(0), 0});
    return p;
  }
  std::vector<int64_t> idx = ind.constant->i;
  int64_t nidx = int64_t(idx.size());
  for (int64_t j = 0; j < nidx; ++j) {
    int64_t i = idx[size_t(j)];
    if (i < -len || i >= len)
      bad("index " + std::to_string(i) + " is out of range for a dimension of " + std::to_string(len));
    if (i < 0) i += len;
    std::vector<int64_t> shape = {pre, post};
    p.steps.push_back(copy_step(Ref::in(0), Ref::out(0),
                                copy_dims(shape, std::vector<int64_t>{len * post, 1}, i * post,
                                          std::vector<int64_t>{nidx * post, 1}, j * post)));
  }
  return p;
}

NodePlan plan_expand(const Graph&, const Node&, const std::vector<In>& in) {
  const In& x = input(in, 0, "input");
  std::vector<int64_t> shape = const_ints(in, 1, "shape");
  Shape out = broadcast_shape(x.shape, shape);
  if (element_count(out) > (1ll << 31)) bad("Expand to " + shape_str(out) + " is too large");
  std::vector<int64_t> src(out.size(), 0);
  auto st = contiguous_strides(x.shape);
  for (size_t i = 0; i < x.shape.size(); ++i)
    if (x.shape[i] != 1) src[out.size() - x.shape.size() + i] = st[i];
  NodePlan p;
  p.outs.push_back(fresh(out, x.is_int()));
  if (element_count(out) > 0)
    p.steps.push_back(copy_step(Ref::in(0), Ref::out(0), copy_dims(out, src, 0, contiguous_strides(out), 0)));
  return p;
}

// --- element-wise -------------------------------------------------------------------------------

const std::map<std::string_view, BinaryOp>& binary_ops() {
  static const std::map<std::string_view, BinaryOp> m = {
      {"Add", BinaryOp::Add}, {"Sub", BinaryOp::Sub}, {"Mul", BinaryOp::Mul}, {"Div", BinaryOp::Div},
      {"Pow", BinaryOp::Pow}, {"Max", BinaryOp::Max}, {"Min", BinaryOp::Min}, {"Sum", BinaryOp::Add}};
  return m;
}

NodePlan plan_binary(const Graph& g, const Node& n, const std::vector<In>& in) {
  BinaryOp op = binary_ops().at(n.op);
  if (in.empty()) bad("no inputs");
  bool integer = input(in, 0, "A").is_int();
  for (size_t k = 0; k < in.size(); ++k)
    if (input(in, k, "operand").is_int() != integer) unsupported("operands of mixed integer and float types");
  if (in.size() == 1) return alias_of(0, in[0].shape, integer);
  if ((n.op == "Add" || n.op == "Sub" || n.op == "Mul" || n.op == "Div" || n.op == "Pow") && in.size() != 2)
    bad("takes 2 inputs, got " + std::to_string(in.size()));
  if (op == BinaryOp::Pow && integer) unsupported("Pow of integers is not supported");
  bool runtime = std::any_of(in.begin(), in.end(), [](const In& x) { return !x.constant; });
  if (integer && runtime) {  // integer arithmetic on the device (masks, indices): a chain of i32 steps
    static const std::map<BinaryOp, EwOp> ew = {{BinaryOp::Add, EwOp::Add}, {BinaryOp::Sub, EwOp::Sub},
                                                {BinaryOp::Mul, EwOp::Mul}, {BinaryOp::Div, EwOp::Div},
                                                {BinaryOp::Max, EwOp::Max}, {BinaryOp::Min, EwOp::Min}};
    NodePlan p;
    Shape acc = in[0].shape;
    Ref racc = Ref::in(0);
    for (size_t k = 1; k < in.size(); ++k) {
      Shape next = broadcast_shape(acc, in[k].shape);
      bool last = k + 1 == in.size();
      Ref dst = last ? Ref::out(0) : Ref::temp(int(p.temps.size()));
      if (!last) p.temps.push_back(uint64_t(element_count(next))), p.int_temps.resize(p.temps.size(), true);
      if (element_count(next) > 0)
        p.steps.push_back(ew_step({ew.at(op), true}, {acc, in[k].shape}, {racc, Ref::in(int(k))}, dst));
      acc = next;
      racc = dst;
    }
    p.outs.push_back(fresh(acc, true));
    return p;
  }
  // Opset 6 and older: broadcasting only with broadcast=1, B aligned at `axis` of A (numpy's
  // alignment at the end when axis is absent): B's shape padded with trailing 1s says the same.
  std::vector<Shape> shapes;
  for (const auto& x : in) shapes.push_back(x.shape);
  if (g.opset < 7 && in.size() == 2 && n.attr_int("broadcast", 0) != 0 && n.has("axis")) {
    int64_t axis = norm_axis(n.attr_int("axis", 0), in[0].shape.size());
    if (size_t(axis) + shapes[1].size() > shapes[0].size()) bad("B does not fit A at axis " + std::to_string(axis));
    shapes[1].resize(shapes[0].size() - size_t(axis), 1);
  }
  // Variadic Max / Min / Sum: a chain through scratch buffers.
  NodePlan p;
  Shape acc = shapes[0];
  Ref racc = Ref::in(0);
  for (size_t k = 1; k < in.size(); ++k) {
    Shape next = broadcast_shape(acc, shapes[k]);
    bool last = k + 1 == in.size();
    Ref dst = last ? Ref::out(0) : Ref::temp(int(p.temps.size()));
    if (!last) p.temps.push_back(uint64_t(element_count(next)));
    p.steps.push_back(binary_step(op, acc, shapes[k], racc, Ref::in(int(k)), dst));
    acc = next;
    racc = dst;
  }
  p.outs.push_back(fresh(acc, integer));
  return p;
}

UnaryParams unary_params(const Graph& g, const Node& n, const std::vector<In>& in) {
  const std::string& op = n.op;
  if (op == "Relu") return {UnaryOp::Relu};
  if (op == "Sigmoid") return {UnaryOp::Sigmoid};
  if (op == "HardSigmoid") return {UnaryOp::HardSigmoid, n.attr_float("alpha", 0.2f), n.attr_float("beta", 0.5f)};
  if (op == "HardSwish") return {UnaryOp::HardSwish};
  if (op == "LeakyRelu") return {UnaryOp::LeakyRelu, n.attr_float("alpha", 0.01f)};
  if (op == "Elu") return {UnaryOp::Elu, n.attr_float("alpha", 1.f)};
  if (op == "Tanh") return {UnaryOp::Tanh};
  if (op == "Exp") return {UnaryOp::Exp};
  if (op == "Log") return {UnaryOp::Log};
  if (op == "Neg") return {UnaryOp::Neg};
  if (op == "Abs") return {UnaryOp::Abs};
  if (op == "Sqrt") return {UnaryOp::Sqrt};
  // Clip
  float lo = -INFINITY, hi = INFINITY;
  if (g.opset < 11) {
    lo = n.attr_float("min", lo);
    hi = n.attr_float("max", hi);
  } else {
    for (size_t k : {size_t(1), size_t(2)}) {
      if (in.size() <= k || !in[k].present) continue;
      const HostTensor& c = const_input(in, k, k == 1 ? "min" : "max");
      if (c.integer || c.f.size() != 1) unsupported("Clip bounds must be float scalars");
      (k == 1 ? lo : hi) = c.f[0];
    }
  }
  return {UnaryOp::Clip, lo, hi};
}

NodePlan plan_unary(const Graph& g, const Node& n, const std::vector<In>& in) {
  if (input(in, 0, "X").is_int() && (n.op == "Neg" || n.op == "Abs"))
    return ew_node({n.op == "Neg" ? EwOp::Neg : EwOp::Abs, true}, in, 1);
  if (input(in, 0, "X").is_int() && n.op == "Clip") {  // integer Clip: Max with min, then Min with max
    NodePlan p;
    const Shape& xs = in[0].shape;
    p.outs.push_back(fresh(xs, true));
    std::vector<size_t> bounds;
    for (size_t k : {size_t(1), size_t(2)})
      if (in.size() > k && in[k].present) {
        if (!in[k].is_int() || element_count(in[k].shape) != 1) bad("Clip bounds must be scalars of X's type");
        bounds.push_back(k);
      }
    if (bounds.empty() || element_count(xs) == 0) {
      if (element_count(xs))
        p.steps.push_back(
            copy_step(Ref::in(0), Ref::out(0), copy_dims(xs, contiguous_strides(xs), 0, contiguous_strides(xs), 0)));
      return p;
    }
    Ref src = Ref::in(0);
    for (size_t j = 0; j < bounds.size(); ++j) {
      bool last = j + 1 == bounds.size();
      Ref dst = last ? Ref::out(0) : Ref::temp(0);
      if (!last) p.temps.push_back(uint64_t(element_count(xs))), p.int_temps.push_back(true);
      p.steps.push_back(ew_step({bounds[j] == 1 ? EwOp::Max : EwOp::Min, true}, {xs, in[bounds[j]].shape},
                                {src, Ref::in(int(bounds[j]))}, dst));
      src = dst;
    }
    return p;
  }
  const In& x = float_input(in, 0, "X");
  NodePlan p;
  p.outs.push_back(fresh(x.shape));
  bool runtime_bounds = false;
  for (size_t k : {size_t(1), size_t(2)})
    runtime_bounds |= n.op == "Clip" && g.opset >= 11 && in.size() > k && in[k].present && !in[k].constant;
  if (runtime_bounds) {  // Clip with bounds computed at run time: Max, then Min, with the scalars
    Ref src = Ref::in(0);
    bool both = in.size() > 2 && in[1].present && in[2].present;
    for (size_t k : {size_t(1), size_t(2)}) {
      if (in.size() <= k || !in[k].present) continue;
      if (element_count(in[k].shape) != 1) bad("Clip bounds must be scalars");
      bool last = k == 2 || !both;
      Ref dst = last ? Ref::out(0) : Ref::temp(0);
      if (!last) p.temps.push_back(uint64_t(element_count(x.shape)));
      p.steps.push_back(
          binary_step(k == 1 ? BinaryOp::Max : BinaryOp::Min, x.shape, in[k].shape, src, Ref::in(int(k)), dst));
      src = dst;
    }
    return p;
  }
  UnaryParams up = unary_params(g, n, in);
  uint64_t count = uint64_t(element_count(x.shape));
  if (count) p.steps.push_back({UnaryStep{up, count}, {Ref::in(0)}, Ref::out(0), double(count)});
  return p;
}

NodePlan plan_softmax(const Graph& g, const Node& n, const std::vector<In>& in) {
  const In& x = float_input(in, 0, "input");
  size_t r = x.shape.size();
  int64_t axis = norm_axis(n.attr_int("axis", g.opset >= 13 ? -1 : 1), std::max<size_t>(r, 1));
  AxisDims d;
  if (g.opset >= 13) {
    d = {u32(prod(x.shape, 0, size_t(axis)), "outer"), u32(r ? x.shape[size_t(axis)] : 1, "axis"),
         u32(prod(x.shape, size_t(axis) + 1, r), "inner")};
  } else {
    d = {u32(prod(x.shape, 0, size_t(axis)), "outer"), u32(prod(x.shape, size_t(axis), r), "axis"), 1};
  }
  NodePlan p;
  p.outs.push_back(fresh(x.shape));
  if (d.count() > 0)
    p.steps.push_back({SoftmaxStep{d, n.op == "LogSoftmax"}, {Ref::in(0)}, Ref::out(0), 5.0 * double(d.count())});
  return p;
}

// --- reductions and pooling ------------------------------------------------------------------------

}  // namespace

NodePlan plan_reduce_op(const Graph& g, const Node& n, const std::vector<In>& in, AxisReduceOp op, int64_t input_from) {
  const In& x = float_input(in, 0, "data");
  std::vector<int64_t> axes = axes_of(g, n, in, input_from);
  size_t r = x.shape.size();
  bool keep = n.attr_int("keepdims", 1) != 0;
  if (axes.empty() && n.attr_int("noop_with_empty_axes", 0)) return alias_of(0, x.shape);
  std::vector<bool> red(r, axes.empty());
  for (int64_t a : axes) red[size_t(norm_axis(a, r))] = true;
  Shape out;
  std::vector<int64_t> perm;
  for (size_t i = 0; i < r; ++i) {
    if (red[i]) {
      if (keep) out.push_back(1);
    } else {
      out.push_back(x.shape[i]);
      perm.push_back(int64_t(i));
    }
  }
  int64_t outer = 1, len = 1;
  for (size_t i = 0; i < r; ++i) (red[i] ? len : outer) *= x.shape[i];
  if (len == 0) unsupported("reducing over an empty axis");
  NodePlan p;
  p.outs.push_back(fresh(out));
  if (outer == 0) return p;
  // Reduced axes in one block [first, last]: x is [outer-before][len][inner] as it is.
  size_t first = r, last = 0;
  for (size_t i = 0; i < r; ++i)
    if (red[i]) first = std::min(first, i), last = std::max(last, i);
  bool block =
      first == r || std::all_of(red.begin() + long(first), red.begin() + long(last) + 1, [](bool b) { return b; });
  if (block) {
    AxisDims d{u32(prod(x.shape, 0, first), "outer"), u32(len, "reduced extent"),
               u32(first == r ? 1 : prod(x.shape, last + 1, r), "inner")};
    p.steps.push_back({ReduceStep{d, op}, {Ref::in(0)}, Ref::out(0), double(element_count(x.shape))});
    return p;
  }
  // Otherwise the kept axes first (a transposed copy), then one reduction over the rest.
  for (size_t i = 0; i < r; ++i)
    if (red[i]) perm.push_back(int64_t(i));
  auto st = contiguous_strides(x.shape);
  Shape tshape;
  std::vector<int64_t> src;
  for (int64_t a : perm) tshape.push_back(x.shape[size_t(a)]), src.push_back(st[size_t(a)]);
  p.temps.push_back(uint64_t(element_count(x.shape)));
  p.steps.push_back(copy_step(Ref::in(0), Ref::temp(0), copy_dims(tshape, src, 0, contiguous_strides(tshape), 0)));
  p.steps.push_back({ReduceStep{AxisDims{u32(outer, "outer"), u32(len, "reduced extent"), 1}, op},
                     {Ref::temp(0)},
                     Ref::out(0),
                     double(element_count(x.shape))});
  return p;
}

namespace {

NodePlan plan_reduce(const Graph& g, const Node& n, const std::vector<In>& in) {
  AxisReduceOp op = n.op == "ReduceMean"  ? AxisReduceOp::Mean
                    : n.op == "ReduceSum" ? AxisReduceOp::Sum
                    : n.op == "ReduceMax" ? AxisReduceOp::Max
                                          : AxisReduceOp::Min;
  return plan_reduce_op(g, n, in, op, n.op == "ReduceSum" ? 13 : 18);
}

NodePlan plan_global_pool(const Graph&, const Node& n, const std::vector<In>& in) {
  const In& x = float_input(in, 0, "X");
  if (x.shape.size() < 3) bad("input " + shape_str(x.shape) + " is not [N, C, spatial...]");
  Shape out = {x.shape[0], x.shape[1]};
  out.resize(x.shape.size(), 1);
  uint32_t nn = u32(x.shape[0], "N"), c = u32(x.shape[1], "C"), hw = u32(prod(x.shape, 2, x.shape.size()), "pixels");
  if (hw == 0) bad("empty spatial extent");
  NodePlan p;
  p.outs.push_back(fresh(out));
  if (uint64_t(nn) * c == 0) return p;
  double work = double(element_count(x.shape));
  if (n.op == "GlobalAveragePool")
    p.steps.push_back({GlobalPoolStep{nn, c, hw}, {Ref::in(0)}, Ref::out(0), work});
  else
    p.steps.push_back({ReduceStep{AxisDims{nn * c, hw, 1}, AxisReduceOp::Max}, {Ref::in(0)}, Ref::out(0), work});
  return p;
}

// Spatial attributes shared by Conv and pooling, for 1-D or 2-D windows.
struct Window {
  uint32_t kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1, pt = 0, pl = 0, pb = 0, pr = 0;
};

Window window(const Node& n, const Shape& x, const std::vector<int64_t>& kernel) {
  size_t sp = x.size() - 2;
  if (sp != 1 && sp != 2) unsupported(std::to_string(sp) + "-D windows are not supported (1-D and 2-D are)");
  if (kernel.size() != sp) bad("kernel_shape " + shape_str(kernel) + " does not match input " + shape_str(x));
  auto strides = n.attr_ints("strides", std::vector<int64_t>(sp, 1));
  auto dil = n.attr_ints("dilations", std::vector<int64_t>(sp, 1));
  auto pads = n.attr_ints("pads", std::vector<int64_t>(2 * sp, 0));
  if (strides.size() != sp || dil.size() != sp || pads.size() != 2 * sp)
    bad("strides, dilations or pads do not match " + std::to_string(sp) + " spatial dims");
  for (auto v : strides)
    if (v <= 0) bad("a stride of " + std::to_string(v));
  for (auto v : dil)
    if (v <= 0) bad("a dilation of " + std::to_string(v));
  for (auto v : pads)
    if (v < 0) unsupported("negative pads");
  std::string ap = n.attr_string("auto_pad", "NOTSET");
  if (ap == "VALID") {
    std::fill(pads.begin(), pads.end(), 0);
  } else if (ap == "SAME_UPPER" || ap == "SAME_LOWER") {
    for (size_t i = 0; i < sp; ++i) {
      int64_t in = x[2 + i], out = (in + strides[i] - 1) / strides[i];
      int64_t total = std::max<int64_t>(0, (out - 1) * strides[i] + (kernel[i] - 1) * dil[i] + 1 - in);
      pads[i] = ap == "SAME_UPPER" ? total / 2 : total - total / 2;
      pads[i + sp] = total - pads[i];
    }
  } else if (ap != "NOTSET") {
    bad("auto_pad '" + ap + "' is not valid");
  }
  Window w;
  if (sp == 2) {
    w = {u32(kernel[0], "kernel"), u32(kernel[1], "kernel"), u32(strides[0], "stride"), u32(strides[1], "stride"),
         u32(dil[0], "dilation"),  u32(dil[1], "dilation"),  u32(pads[0], "pad"),       u32(pads[1], "pad"),
         u32(pads[2], "pad"),      u32(pads[3], "pad")};
  } else {
    w = {1, u32(kernel[0], "kernel"), 1, u32(strides[0], "stride"), 1, u32(dil[0], "dilation"),
         0, u32(pads[0], "pad"),      0, u32(pads[1], "pad")};
  }
  return w;
}

Shape spatial_out(const Shape& x, int64_t c, uint32_t oh, uint32_t ow) {
  Shape out = {x[0], c};
  if (x.size() == 4) out.push_back(oh);
  out.push_back(ow);
  return out;
}

NodePlan plan_conv(const Graph&, const Node& n, const std::vector<In>& in) {
  const In& x = float_input(in, 0, "X");
  const In& wi = float_input(in, 1, "W");
  const Shape& wshape = wi.shape;
  if (x.shape.size() != 3 && x.shape.size() != 4)
    unsupported("Conv of a rank-" + std::to_string(x.shape.size()) + " input (1-D and 2-D are supported)");
  if (wshape.size() != x.shape.size())
    bad("weights " + shape_str(wshape) + " do not match input " + shape_str(x.shape));
  std::vector<int64_t> kernel(wshape.begin() + 2, wshape.end());
  if (n.has("kernel_shape") && n.attr_ints("kernel_shape") != kernel)
    bad("kernel_shape " + shape_str(n.attr_ints("kernel_shape")) + " differs from the weights " + shape_str(wshape));
  Window win = window(n, x.shape, kernel);
  int64_t groups = n.attr_int("group", 1);
  if (groups <= 0) bad("group " + std::to_string(groups));
  Conv2dDims d;
  d.n = u32(x.shape[0], "N");
  d.c_in = u32(x.shape[1], "C");
  d.h = x.shape.size() == 4 ? u32(x.shape[2], "H") : 1;
  d.w = u32(x.shape.back(), "W");
  d.c_out = u32(wshape[0], "M");
  d.kh = win.kh, d.kw = win.kw, d.stride_h = win.sh, d.stride_w = win.sw, d.dil_h = win.dh, d.dil_w = win.dw;
  d.groups = u32(groups, "group");
  d.pad_top = win.pt, d.pad_left = win.pl, d.pad_bottom = win.pb, d.pad_right = win.pr;
  if (d.c_in % d.groups || d.c_out % d.groups || int64_t(d.c_in / d.groups) != wshape[1])
    bad("weights " + shape_str(wshape) + " do not fit " + std::to_string(d.c_in) + " input channels in " +
        std::to_string(groups) + " groups");
  try {
    check(d);
  } catch (const Error& e) {
    bad(e.what());
  }
  bool has_bias = in.size() > 2 && in[2].present;
  if (has_bias && element_count(float_input(in, 2, "B").shape) != int64_t(d.c_out))
    bad("bias has " + std::to_string(element_count(in[2].shape)) + " values for " + std::to_string(d.c_out) +
        " channels");
  Shape out = spatial_out(x.shape, d.c_out, d.out_h(), d.out_w());
  ConvEpilogue ep = n.fused;
  ep.bias = has_bias;
  NodePlan p;
  p.outs.push_back(fresh(out));
  if (d.y_elements() == 0) return p;
  // The step reads x, then the weights and bias given at run time, then the residual.
  auto conv_step = [&](const ConvEpilogue& e, Ref dst) {
    NodeStep s{
        ConvStep{d, e, in[1].constant, has_bias ? in[2].constant : nullptr}, {Ref::in(0)}, std::move(dst), d.flops()};
    auto& cs = std::get<ConvStep>(s.op);
    if (!cs.weights) cs.w_in = int(s.in.size()), s.in.push_back(Ref::in(1));
    if (has_bias && !cs.bias) cs.b_in = int(s.in.size()), s.in.push_back(Ref::in(2));
    if (e.residual) cs.res_in = int(s.in.size()), s.in.push_back(Ref::in(3));
    return s;
  };
  bool residual_fits = !ep.residual || (in.size() > 3 && in[3].present && in[3].shape == out && !in[3].is_int());
  if (residual_fits) {
    p.steps.push_back(conv_step(ep, Ref::out(0)));
    return p;
  }
  // A residual that broadcasts: the Add (and the activation after it) as steps of their own.
  const In& res = input(in, 3, "residual");
  Shape sum = broadcast_shape(out, res.shape);
  if (sum != out) bad("the residual Add changes the shape " + shape_str(out) + " to " + shape_str(sum));
  ConvEpilogue plain = ep;
  plain.residual = false;
  plain.act = Activation::None;
  p.temps.push_back(uint64_t(element_count(out)));
  p.steps.push_back(conv_step(plain, Ref::temp(0)));
  bool act = ep.act != Activation::None;
  if (act) p.temps.push_back(uint64_t(element_count(out)));
  p.steps.push_back(
      binary_step(BinaryOp::Add, out, res.shape, Ref::temp(0), Ref::in(3), act ? Ref::temp(1) : Ref::out(0)));
  if (act) {
    UnaryParams up = ep.act == Activation::Relu    ? UnaryParams{UnaryOp::Relu}
                     : ep.act == Activation::Relu6 ? UnaryParams{UnaryOp::Clip, 0.f, 6.f}
                                                   : UnaryParams{UnaryOp::Clip, ep.clip_min, ep.clip_max};
    p.steps.push_back(
        {UnaryStep{up, uint64_t(element_count(out))}, {Ref::temp(1)}, Ref::out(0), double(element_count(out))});
  }
  return p;
}

NodePlan plan_pool(const Graph& g, const Node& n, const std::vector<In>& in) {
  const In& x = float_input(in, 0, "X");
  if (x.shape.size() != 3 && x.shape.size() != 4)
    unsupported(n.op + " of a rank-" + std::to_string(x.shape.size()) + " input (1-D and 2-D are supported)");
  if (n.outputs.size() > 1 && !n.outputs[1].empty()) unsupported("the Indices output of MaxPool is not supported");
  if (n.attr_int("storage_order", 0) != 0) unsupported("storage_order 1");
  bool ceil_mode = g.opset >= 10 && n.attr_int("ceil_mode", 0) != 0;
  Window win = window(n, x.shape, n.attr_ints("kernel_shape"));
  Pool2dDims d;
  d.n = u32(x.shape[0], "N");
  d.c = u32(x.shape[1], "C");
  d.h = x.shape.size() == 4 ? u32(x.shape[2], "H") : 1;
  d.w = u32(x.shape.back(), "W");
  d.kh = win.kh, d.kw = win.kw, d.stride_h = win.sh, d.stride_w = win.sw, d.dil_h = win.dh, d.dil_w = win.dw;
  d.pad_top = win.pt, d.pad_left = win.pl, d.pad_bottom = win.pb, d.pad_right = win.pr;
  d.ceil_mode = ceil_mode;
  d.count_include_pad = n.attr_int("count_include_pad", 0) != 0;
  if (n.op == "AveragePool" && (d.dil_h != 1 || d.dil_w != 1)) unsupported("dilated AveragePool");
  try {
    check(d);
  } catch (const Error& e) {
    bad(e.what());
  }
  Shape out = spatial_out(x.shape, d.c, d.out_h(), d.out_w());
  NodePlan p;
  p.outs.push_back(fresh(out));
  if (d.y_elements())
    p.steps.push_back({PoolStep{d, n.op == "MaxPool" ? PoolKind::Max : PoolKind::Average},
                       {Ref::in(0)},
                       Ref::out(0),
                       double(d.y_elements()) * d.kh * d.kw});
  return p;
}

NodePlan plan_batchnorm(const Graph&, const Node& n, const std::vector<In>& in) {
  const In& x = float_input(in, 0, "X");
  bool extra_outputs = std::any_of(n.outputs.begin() + 1, n.outputs.end(), [](const auto& o) { return !o.empty(); });
  if (n.attr_int("training_mode", 0) != 0 || (extra_outputs && n.attr_int("is_test", 0) == 0))
    unsupported("BatchNormalization in training mode");
  if (n.attr_int("spatial", 1) == 0) unsupported("BatchNormalization with spatial = 0");
  if (x.shape.size() < 2) bad("input " + shape_str(x.shape) + " has no channel dimension");
  int64_t c = x.shape[1];
  std::vector<const HostTensor*> prm;
  for (size_t k = 1; k <= 4; ++k) {
    const HostTensor& t = const_input(in, k, "scale, B, mean or var");
    if (t.integer || t.numel() != c)
      bad("parameter " + std::to_string(k) + " has " + std::to_string(t.numel()) + " values for " + std::to_string(c) +
          " channels");
    prm.push_back(&t);
  }
  float eps = n.attr_float("epsilon", 1e-5f);
  std::vector<float> scale(static_cast<size_t>(c)), shift(static_cast<size_t>(c));
  for (size_t i = 0; i < size_t(c); ++i) {
    double s = double(prm[0]->f[i]) / std::sqrt(double(prm[3]->f[i]) + eps);
    scale[i] = float(s);
    shift[i] = float(double(prm[1]->f[i]) - double(prm[2]->f[i]) * s);
  }
  Shape cs(x.shape.size() - 1, 1);
  cs[0] = c;
  NodePlan p;
  p.outs.push_back(fresh(x.shape));
  p.temps.push_back(uint64_t(element_count(x.shape)));
  p.steps.push_back(binary_step(BinaryOp::Mul, x.shape, cs, Ref::in(0), Ref::cst(floats(cs, scale)), Ref::temp(0)));
  p.steps.push_back(binary_step(BinaryOp::Add, x.shape, cs, Ref::temp(0), Ref::cst(floats(cs, shift)), Ref::out(0)));
  return p;
}

// --- matrix products -----------------------------------------------------------------------------

NodePlan plan_gemm(const Graph&, const Node& n, const std::vector<In>& in) {
  const In& a = float_input(in, 0, "A");
  const In& b = float_input(in, 1, "B");
  if (a.shape.size() != 2 || b.shape.size() != 2)
    bad("A " + shape_str(a.shape) + " and B " + shape_str(b.shape) + " must be matrices");
  bool ta = n.attr_int("transA", 0) != 0, tb = n.attr_int("transB", 0) != 0;
  float alpha = n.attr_float("alpha", 1.f), beta = n.attr_float("beta", 1.f);
  int64_t m = ta ? a.shape[1] : a.shape[0], k = ta ? a.shape[0] : a.shape[1];
  int64_t kb = tb ? b.shape[1] : b.shape[0], nn = tb ? b.shape[0] : b.shape[1];
  if (k != kb) bad("inner dimensions differ: A " + shape_str(a.shape) + ", B " + shape_str(b.shape));
  if (k == 0) unsupported("a product over an empty inner dimension");
  Shape out = {m, nn};
  NodePlan p;
  p.outs.push_back(fresh(out));
  bool has_c = in.size() > 2 && in[2].present && beta != 0.f;
  Ref ra = Ref::in(0), rb = Ref::in(1);
  if (ta) {  // A^T into a scratch buffer
    int t = int(p.temps.size());
    p.temps.push_back(uint64_t(m * k));
    p.steps.push_back(
        copy_step(Ref::in(0), Ref::temp(t),
                  copy_dims(std::vector<int64_t>{m, k}, std::vector<int64_t>{1, m}, 0, std::vector<int64_t>{k, 1}, 0)));
    ra = Ref::temp(t);
  }
  if (alpha != 1.f && b.constant) {  // alpha folded into constant weights
    std::vector<float> v = b.constant->f;
    for (auto& e : v) e *= alpha;
    rb = Ref::cst(floats(b.shape, v));
    alpha = 1.f;
  }
  if (m * nn == 0) return p;
  // The classifier's form, y = x W^T + c with W and c constants and c one value per column: a 1x1
  // convolution of m "images" of k channels with the bias fused, one kernel (split K fills the GPU
  // at batch 1, where the SGEMM's tiles leave it idle, and the bias needs no pass of its own).
  if (!ta && tb && alpha == 1.f && has_c && in[2].constant && !in[2].is_int() && element_count(in[2].shape) == nn &&
      (in[2].shape.size() == 1 || (in[2].shape.size() == 2 && in[2].shape[0] == 1))) {
    HostTensorPtr w = rb.kind == Ref::Const ? rb.c : b.constant;
    if (w) {
      std::vector<float> bias = in[2].constant->f;
      for (auto& e : bias) e *= beta;
      Conv2dDims d;
      d.n = u32(m, "M"), d.c_in = u32(k, "K"), d.h = d.w = 1, d.c_out = u32(nn, "N");
      ConvEpilogue ep;
      ep.bias = true;
      p.steps.push_back({ConvStep{d, ep, w, floats({nn}, std::move(bias))}, {ra}, Ref::out(0), d.flops()});
      return p;
    }
  }
  bool scale = alpha != 1.f;
  auto next_dst = [&](bool last) {
    if (last) return Ref::out(0);
    p.temps.push_back(uint64_t(m * nn));
    return Ref::temp(int(p.temps.size()) - 1);
  };
  Ref prod_ref = next_dst(!scale && !has_c);
  MatmulDims md{u32(m, "M"), u32(nn, "N"), u32(k, "K"), tb};
  p.steps.push_back({MatmulStep{md}, {ra, rb}, prod_ref, md.flops()});
  if (scale) {
    Ref dst = next_dst(!has_c);
    p.steps.push_back(binary_step(BinaryOp::Mul, out, {}, prod_ref, Ref::cst(floats({}, {alpha})), dst));
    prod_ref = dst;
  }
  if (has_c) {
    const In& c = float_input(in, 2, "C");
    Ref rc = Ref::in(2);
    if (beta != 1.f && c.constant) {
      std::vector<float> v = c.constant->f;
      for (auto& e : v) e *= beta;
      rc = Ref::cst(floats(c.shape, v));
    } else if (beta != 1.f) {  // beta C into a scratch buffer
      int t = int(p.temps.size());
      p.temps.push_back(uint64_t(element_count(c.shape)));
      p.steps.push_back(
          binary_step(BinaryOp::Mul, c.shape, {}, Ref::in(2), Ref::cst(floats({}, {beta})), Ref::temp(t)));
      rc = Ref::temp(t);
    }
    if (broadcast_shape(out, c.shape) != out)
      bad("C " + shape_str(c.shape) + " does not broadcast to " + shape_str(out));
    p.steps.push_back(binary_step(BinaryOp::Add, out, c.shape, prod_ref, rc, Ref::out(0)));
  }
  return p;
}

NodePlan plan_matmul(const Graph&, const Node&, const std::vector<In>& in) {
  const In& a = float_input(in, 0, "A");
  const In& b = float_input(in, 1, "B");
  if (a.shape.empty() || b.shape.empty()) bad("MatMul of a scalar");
  Shape as = a.shape, bs = b.shape;
  bool a1 = as.size() == 1, b1 = bs.size() == 1;
  if (a1) as.insert(as.begin(), 1);
  if (b1) bs.push_back(1);
  int64_t m = as[as.size() - 2], k = as.back(), kb = bs[bs.size() - 2], nn = bs.back();
  if (k != kb) bad("inner dimensions differ: " + shape_str(a.shape) + " x " + shape_str(b.shape));
  if (k == 0) unsupported("a product over an empty inner dimension");
  Shape abatch(as.begin(), as.end() - 2), bbatch(bs.begin(), bs.end() - 2);
  Shape batch = broadcast_shape(abatch, bbatch);
  Shape out = batch;
  if (!a1) out.push_back(m);
  if (!b1) out.push_back(nn);
  NodePlan p;
  p.outs.push_back(fresh(out));
  if (element_count(out) == 0) return p;
  // B one matrix: A's batch dims fold into M and the SGEMM ladder runs it.
  if (bbatch.empty() || element_count(bbatch) == 1) {
    if (element_count(abatch) == element_count(batch)) {
      MatmulDims md{u32(element_count(batch) * m, "M"), u32(nn, "N"), u32(k, "K"), false};
      p.steps.push_back({MatmulStep{md}, {Ref::in(0), Ref::in(1)}, Ref::out(0), md.flops()});
      return p;
    }
  }
  if (batch.size() > 4) unsupported("MatMul with more than 4 batch dimensions");
  BatchedMatmulDims d;
  d.m = u32(m, "M"), d.n = u32(nn, "N"), d.k = u32(k, "K");
  d.rank = uint32_t(batch.size());
  auto strides = [&](const Shape& s, int64_t mat, Strides& st) {
    Shape full(batch.size() - s.size(), 1);
    full.insert(full.end(), s.begin(), s.end());
    auto c = contiguous_strides(full);
    for (size_t i = 0; i < full.size(); ++i) st[i] = full[i] == 1 ? 0 : c[i] * mat;
  };
  for (size_t i = 0; i < batch.size(); ++i) d.batch[i] = u32(batch[i], "batch");
  strides(abatch, m * k, d.a_strides);
  strides(bbatch, k * nn, d.b_strides);
  p.steps.push_back({BatchedMatmulStep{d}, {Ref::in(0), Ref::in(1)}, Ref::out(0), d.flops()});
  return p;
}

const std::map<std::string_view, Planner>& planners() {
  static const std::map<std::string_view, Planner> m = {
      {"Abs", plan_unary},
      {"Add", plan_binary},
      {"AveragePool", plan_pool},
      {"BatchNormalization", plan_batchnorm},
      {"Cast", plan_cast},
      {"Clip", plan_unary},
      {"Concat", plan_concat},
      {"Constant", plan_constant},
      {"ConstantOfShape", plan_constant_of_shape},
      {"Conv", plan_conv},
      {"Div", plan_binary},
      {"Dropout", plan_identity},
      {"Elu", plan_unary},
      {"Exp", plan_unary},
      {"Expand", plan_expand},
      {"Flatten", plan_flatten},
      {"Gather", plan_gather},
      {"Gemm", plan_gemm},
      {"GlobalAveragePool", plan_global_pool},
      {"GlobalMaxPool", plan_global_pool},
      {"HardSigmoid", plan_unary},
      {"HardSwish", plan_unary},
      {"Identity", plan_identity},
      {"LeakyRelu", plan_unary},
      {"Log", plan_unary},
      {"LogSoftmax", plan_softmax},
      {"MatMul", plan_matmul},
      {"Max", plan_binary},
      {"MaxPool", plan_pool},
      {"Min", plan_binary},
      {"Mul", plan_binary},
      {"Neg", plan_unary},
      {"Pow", plan_binary},
      {"Range", plan_range},
      {"ReduceMax", plan_reduce},
      {"ReduceMean", plan_reduce},
      {"ReduceMin", plan_reduce},
      {"ReduceSum", plan_reduce},
      {"Relu", plan_unary},
      {"Reshape", plan_reshape},
      {"Shape", plan_shape},
      {"Sigmoid", plan_unary},
      {"Size", plan_size},
      {"Slice", plan_slice},
      {"Softmax", plan_softmax},
      {"Split", plan_split},
      {"Sqrt", plan_unary},
      {"Squeeze", plan_squeeze},
      {"Sub", plan_binary},
      {"Sum", plan_binary},
      {"Tanh", plan_unary},
      {"Transpose", plan_transpose},
      {"Unsqueeze", plan_unsqueeze},
  };
  return m;
}

}  // namespace

Planner find_planner(std::string_view op) {
  auto it = planners().find(op);
  if (it != planners().end()) return it->second;
  auto dt = dense_planners().find(op);
  return dt == dense_planners().end() ? nullptr : dt->second;
}

std::string supported_ops() {
  std::map<std::string_view, Planner> all = planners();
  all.insert(dense_planners().begin(), dense_planners().end());
  std::string s;
  for (const auto& [name, p] : all) s.append(s.empty() ? "" : ", ").append(name);
  return s;
}

}  // namespace wgc::cnn::detail
