// Views (Reshape and friends: no step), constants computed from shapes or known inputs at plan
// time (Shape, ConstantOfShape, Range, NonZero, EyeLike) and Cast.
// Planners of plan_ops.h; attribute defaults and opset differences follow the ONNX operator
// specification (opsets 7..18).
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

// NonZero: on the host when its input is known at plan time (the output's size depends on it).
NodePlan plan_non_zero(const Graph&, const Node&, const std::vector<In>& in) {
  const In& x = input(in, 0, "X");
  if (!x.constant) needs_input(0, "NonZero's input: the output's size depends on its values");
  const HostTensor& c = *x.constant;
  size_t r = std::max<size_t>(x.shape.size(), 1);
  auto st = contiguous_strides(x.shape);
  std::vector<std::vector<int64_t>> coords(r);
  for (int64_t k = 0; k < c.numel(); ++k) {
    bool nz = c.integer ? c.i[size_t(k)] != 0 : c.f[size_t(k)] != 0.f;
    if (!nz) continue;
    int64_t rest = k;
    for (size_t d = 0; d < x.shape.size(); ++d) coords[d].push_back(rest / st[d]), rest %= st[d];
    if (x.shape.empty()) coords[0].push_back(0);
  }
  std::vector<int64_t> flat;
  for (const auto& v : coords) flat.insert(flat.end(), v.begin(), v.end());
  return constant_out(ints({int64_t(r), int64_t(coords[0].size())}, std::move(flat)));
}

// EyeLike: a constant of the input's shape (known at plan time).
NodePlan plan_eye_like(const Graph&, const Node& n, const std::vector<In>& in) {
  const In& x = input(in, 0, "input");
  if (x.shape.size() != 2) bad("input " + shape_str(x.shape) + " is not a matrix");
  if (element_count(x.shape) > (1 << 26)) bad("EyeLike of " + shape_str(x.shape) + " is too large");
  int64_t k = n.attr_int("k", 0), rows = x.shape[0], cols = x.shape[1];
  int64_t type = n.attr_int("dtype", x.is_int() ? 7 : 1);
  bool integer = is_integer_type(int32_t(type));
  if (!integer && type != 1 && type != 11) unsupported("EyeLike of type " + std::string(onnx_type_name(int32_t(type))));
  std::vector<int64_t> v(static_cast<size_t>(rows * cols));
  for (int64_t i = 0; i < rows; ++i)
    if (i + k >= 0 && i + k < cols) v[size_t(i * cols + i + k)] = 1;
  if (integer) return constant_out(ints(x.shape, v));
  return constant_out(floats(x.shape, std::vector<float>(v.begin(), v.end())));
}

}  // namespace

void add_shape_planners(PlannerTable& t) {
  t.emplace("Cast", plan_cast);
  t.emplace("Constant", plan_constant);
  t.emplace("ConstantOfShape", plan_constant_of_shape);
  t.emplace("Dropout", plan_identity);
  t.emplace("EyeLike", plan_eye_like);
  t.emplace("Flatten", plan_flatten);
  t.emplace("Identity", plan_identity);
  t.emplace("NonZero", plan_non_zero);
  t.emplace("Range", plan_range);
  t.emplace("Reshape", plan_reshape);
  t.emplace("Shape", plan_shape);
  t.emplace("Size", plan_size);
  t.emplace("Squeeze", plan_squeeze);
  t.emplace("Unsqueeze", plan_unsqueeze);
}

}  // namespace wgc::cnn::detail
