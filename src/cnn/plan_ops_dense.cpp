// Planners of the ONNX ops beyond classifiers (plan_ops.h): comparisons, logic and Where on
// integer / boolean tensors, float functions, normalisations, Resize / Upsample, Pad, Tile,
// DepthToSpace / SpaceToDepth, ArgMax / ArgMin, TopK, GatherElements, CumSum, Einsum, Trilu, Mean.
// Attribute defaults and opset differences follow the ONNX operator specification (opsets 7..18).
#include "cnn/plan_ops.h"
#include "cpu/detect.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>

namespace wgc::cnn::detail {
namespace {

// --- element-wise ---------------------------------------------------------------------------------

const std::map<std::string_view, EwOp>& ew_ops() {
  static const std::map<std::string_view, EwOp> m = {
      {"Equal", EwOp::Equal},
      {"Less", EwOp::Less},
      {"Greater", EwOp::Greater},
      {"LessOrEqual", EwOp::LessOrEqual},
      {"GreaterOrEqual", EwOp::GreaterOrEqual},
      {"And", EwOp::And},
      {"Or", EwOp::Or},
      {"Xor", EwOp::Xor},
      {"Not", EwOp::Not},
      {"IsNaN", EwOp::IsNaN},
      {"IsInf", EwOp::IsInf},
      {"Sign", EwOp::Sign},
      {"Erf", EwOp::Erf},
      {"Softplus", EwOp::Softplus},
      {"Softsign", EwOp::Softsign},
      {"Mish", EwOp::Mish},
      {"Reciprocal", EwOp::Reciprocal},
      {"Floor", EwOp::Floor},
      {"Ceil", EwOp::Ceil},
      {"Round", EwOp::Round},
      {"Sin", EwOp::Sin},
      {"Cos", EwOp::Cos},
      {"Tan", EwOp::Tan},
      {"Asin", EwOp::Asin},
      {"Acos", EwOp::Acos},
      {"Atan", EwOp::Atan},
      {"Sinh", EwOp::Sinh},
      {"Cosh", EwOp::Cosh},
      {"Asinh", EwOp::Asinh},
      {"Acosh", EwOp::Acosh},
      {"Atanh", EwOp::Atanh},
      {"Selu", EwOp::Selu},
      {"Celu", EwOp::Celu},
      {"ThresholdedRelu", EwOp::ThresholdedRelu},
      {"Shrink", EwOp::Shrink},
      {"Where", EwOp::Where},
      {"Gelu", EwOp::Gelu},  // opset 20's, and what cnn/fuse.h makes of the exporters' erf GELU
      {"PRelu", EwOp::PRelu},
      {"Mod", EwOp::Mod},
  };
  return m;
}

NodePlan plan_elementwise(const Graph& g, const Node& n, const std::vector<In>& in) {
  EwParams p{ew_ops().at(n.op)};
  int arity = ew_arity(p.op);
  for (int k = 0; k < arity; ++k) input(in, size_t(k), "operand");
  if (int(n.input_count()) != arity)
    bad("takes " + std::to_string(arity) + " inputs, got " + std::to_string(n.input_count()));
  // The operands' type: Where's are its x and y (the condition is a bool tensor).
  size_t first = p.op == EwOp::Where ? 1 : 0;
  p.ints = in[first].is_int();
  for (size_t k = first; k < size_t(arity); ++k)
    if (in[k].is_int() != p.ints) unsupported("operands of mixed integer and float types");
  if (p.op == EwOp::Where && !in[0].is_int()) bad("the condition must be a bool tensor");
  if (p.ints && ew_float_only(p.op)) unsupported(n.op + " of integer tensors (float32 only)");
  if (!p.ints && ew_int_only(p.op)) bad(n.op + " takes bool tensors");
  switch (p.op) {
    case EwOp::IsInf:
      p.alpha = float(n.attr_int("detect_positive", 1));
      p.beta = float(n.attr_int("detect_negative", 1));
      break;
    case EwOp::Selu:
      p.alpha = n.attr_float("alpha", 1.67326319217681884765625f);
      p.beta = n.attr_float("gamma", 1.05070102214813232421875f);
      break;
    case EwOp::Celu: p.alpha = n.attr_float("alpha", 1.f); break;
    case EwOp::ThresholdedRelu: p.alpha = n.attr_float("alpha", 1.f); break;
    case EwOp::Shrink:
      p.alpha = n.attr_float("lambd", 0.5f);
      p.beta = n.attr_float("bias", 0.f);
      break;
    case EwOp::Gelu:
      if (n.attr_string("approximate", "none") == "tanh") p.op = EwOp::GeluTanh;
      break;
    case EwOp::Mod:
      if (n.attr_int("fmod", 0) != 0) {
        p.op = EwOp::FMod;
      } else if (!p.ints) {
        bad("Mod of floats needs fmod = 1");
      }
      break;
    default: break;
  }
  if (p.op == EwOp::PRelu && g.opset < 7) {
    // PRelu-6: a slope of [C] applies along axis 1.
    std::vector<In> in2 = in;
    if (in2[1].shape.size() == 1 && in2[0].shape.size() > 2 && in2[1].shape[0] == in2[0].shape[1])
      in2[1].shape.resize(in2[0].shape.size() - 1, 1);
    return ew_node(p, in2, 2);
  }
  if (p.op == EwOp::PRelu && broadcast_shape(in[0].shape, in[1].shape) != in[0].shape)
    bad("the slope " + shape_str(in[1].shape) + " does not broadcast to X " + shape_str(in[0].shape));
  return ew_node(p, in, size_t(arity));
}

// Variadic Mean: the sum, then divided by the count.
NodePlan plan_mean(const Graph&, const Node&, const std::vector<In>& in) {
  if (in.empty()) bad("no inputs");
  for (size_t k = 0; k < in.size(); ++k) float_input(in, k, "data");
  NodePlan p;
  Shape acc = in[0].shape;
  Ref racc = Ref::in(0);
  for (size_t k = 1; k < in.size(); ++k) {
    Shape next = broadcast_shape(acc, in[k].shape);
    p.temps.push_back(uint64_t(element_count(next)));
    Ref dst = Ref::temp(int(p.temps.size()) - 1);
    p.steps.push_back(binary_step(BinaryOp::Add, acc, in[k].shape, racc, Ref::in(int(k)), dst));
    acc = next;
    racc = dst;
  }
  p.outs.push_back(fresh(acc));
  if (element_count(acc) == 0) return p;
  p.steps.push_back(
      binary_step(BinaryOp::Mul, acc, {}, racc, Ref::cst(floats({}, {1.f / float(in.size())})), Ref::out(0)));
  return p;
}

// Trilu: Where with a constant mask (the kept triangle), the zeros of x's type elsewhere.
NodePlan plan_trilu(const Graph&, const Node& n, const std::vector<In>& in) {
  const In& x = input(in, 0, "input");
  if (x.shape.size() < 2) bad("input " + shape_str(x.shape) + " is not a matrix");
  int64_t k = 0;
  if (in.size() > 1 && in[1].present) {
    std::vector<int64_t> kv = const_ints(in, 1, "k");
    if (kv.size() != 1) bad("k must be a scalar");
    k = kv[0];
  }
  bool upper = n.attr_int("upper", 1) != 0;
  int64_t rows = x.shape[x.shape.size() - 2], cols = x.shape.back();
  if (rows * cols > (1 << 26)) bad("Trilu of " + shape_str(x.shape) + " is too large");
  std::vector<int64_t> mask(size_t(rows * cols));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) mask[size_t(i * cols + j)] = upper ? j - i >= k : j - i <= k;
  HostTensorPtr zero = x.is_int() ? ints({}, {0}) : floats({}, {0.f});
  NodePlan p;
  p.outs.push_back(fresh(x.shape, x.is_int()));
  if (element_count(x.shape) == 0) return p;
  p.steps.push_back(ew_step({EwOp::Where, x.is_int()}, {{rows, cols}, x.shape, {}},
                            {Ref::cst(ints({rows, cols}, mask)), Ref::in(0), Ref::cst(zero)}, Ref::out(0)));
  return p;
}

AxisDims axis_dims(const Shape& s, int64_t axis);

// --- reductions built from others -----------------------------------------------------------------

// Renumbers an inner plan's scratch buffers after `base` others.
void shift_temps(NodePlan& p, int base) {
  for (auto& st : p.steps) {
    for (auto& r : st.in)
      if (r.kind == Ref::Temp) r.index += base;
    if (st.out.kind == Ref::Temp) st.out.index += base;
  }
  p.temps.insert(p.temps.begin(), size_t(base), 0);
  if (!p.int_temps.empty()) p.int_temps.insert(p.int_temps.begin(), size_t(base), false);
}

// The inner plan's source (input 0) read from `src` and its output written to `dst`.
void reroute(NodePlan& p, Ref src, Ref dst) {
  for (auto& st : p.steps) {
    for (auto& r : st.in)
      if (r.kind == Ref::Input && r.index == 0) r = src;
    if (st.out.kind == Ref::Output && st.out.index == 0) st.out = dst;
  }
}

NodeStep unary_step(UnaryOp op, uint64_t count, Ref src, Ref dst) {
  return {UnaryStep{{op}, count}, {std::move(src)}, std::move(dst), double(count)};
}

// ReduceSumSquare, ReduceL1, ReduceL2, ReduceLogSum, ReduceLogSumExp: a map before the sum and one
// after it; LogSumExp subtracts each row's largest value first (no overflow) and adds it back.
NodePlan plan_reduce_composite(const Graph& g, const Node& n, const std::vector<In>& in) {
  const In& x = float_input(in, 0, "data");
  uint64_t count = uint64_t(element_count(x.shape));
  NodePlan p = plan_reduce_op(g, n, in, AxisReduceOp::Sum, 18);
  if (p.steps.empty()) return p;  // an empty output
  if (n.op == "ReduceLogSumExp") {
    Node keep = n;
    keep.attrs["keepdims"].kind = Attribute::Kind::Int;  // the maxima broadcast against x
    keep.attrs["keepdims"].i = 1;
    NodePlan mx = plan_reduce_op(g, keep, in, AxisReduceOp::Max, 18);
    Shape ms = mx.outs[0].shape;
    uint64_t mcount = uint64_t(element_count(ms));
    // temps: 0 the maxima, 1 x - max, 2 its exp, 3 the sums, 4 their logs; then the inner plans'
    // own. (No step reads and writes one buffer: WebGPU forbids binding it both ways.)
    int base = 5;
    shift_temps(mx, base);
    reroute(mx, Ref::in(0), Ref::temp(0));
    shift_temps(p, int(mx.temps.size()));
    reroute(p, Ref::temp(2), Ref::temp(3));
    NodePlan r;
    r.outs = p.outs;
    r.temps = {mcount, count, count, mcount, mcount};
    for (size_t k = size_t(base); k < mx.temps.size(); ++k) r.temps.push_back(mx.temps[k]);
    for (size_t k = mx.temps.size(); k < p.temps.size(); ++k) r.temps.push_back(p.temps[k]);
    r.steps = mx.steps;
    r.steps.push_back(binary_step(BinaryOp::Sub, x.shape, ms, Ref::in(0), Ref::temp(0), Ref::temp(1)));
    r.steps.push_back(unary_step(UnaryOp::Exp, count, Ref::temp(1), Ref::temp(2)));
    r.steps.insert(r.steps.end(), p.steps.begin(), p.steps.end());
    r.steps.push_back(unary_step(UnaryOp::Log, mcount, Ref::temp(3), Ref::temp(4)));
    // The maxima have the output's elements in the same order (only extent-1 dims differ).
    r.steps.push_back(
        binary_step(BinaryOp::Add, {int64_t(mcount)}, {int64_t(mcount)}, Ref::temp(4), Ref::temp(0), Ref::out(0)));
    return r;
  }
  bool pre = n.op != "ReduceLogSum", post = n.op == "ReduceL2" || n.op == "ReduceLogSum";
  uint64_t out_count = uint64_t(element_count(p.outs[0].shape));
  shift_temps(p, 2);
  reroute(p, pre ? Ref::temp(0) : Ref::in(0), post ? Ref::temp(1) : Ref::out(0));
  p.temps[0] = pre ? count : 0;
  p.temps[1] = post ? out_count : 0;
  std::vector<NodeStep> steps;
  if (n.op == "ReduceL1")
    steps.push_back(unary_step(UnaryOp::Abs, count, Ref::in(0), Ref::temp(0)));
  else if (pre)
    steps.push_back(binary_step(BinaryOp::Mul, x.shape, x.shape, Ref::in(0), Ref::in(0), Ref::temp(0)));
  steps.insert(steps.end(), p.steps.begin(), p.steps.end());
  if (post)
    steps.push_back(
        unary_step(n.op == "ReduceL2" ? UnaryOp::Sqrt : UnaryOp::Log, out_count, Ref::temp(1), Ref::out(0)));
  p.steps = std::move(steps);
  return p;
}

// Hardmax: 1 where a row's first largest value is, 0 elsewhere (ArgMax, then Equal with the
// positions, then Cast).
NodePlan plan_hardmax(const Graph& g, const Node& n, const std::vector<In>& in) {
  const In& x = float_input(in, 0, "input");
  size_t r = x.shape.size();
  if (r == 0) bad("input is a scalar");
  int64_t axis = norm_axis(n.attr_int("axis", g.opset >= 13 ? -1 : 1), r);
  NodePlan p;
  p.outs.push_back(fresh(x.shape));
  if (element_count(x.shape) == 0) return p;
  // Opset < 13: the dims from axis on are one flattened row.
  Shape rows = x.shape;
  if (g.opset < 13) rows = {prod(x.shape, 0, size_t(axis)), prod(x.shape, size_t(axis), r)}, axis = 1;
  int64_t len = rows[size_t(axis)];
  AxisDims d = axis_dims(rows, axis);
  Shape arg_shape = rows;
  arg_shape[size_t(axis)] = 1;
  Shape pos_shape(rows.size() - size_t(axis), 1);
  pos_shape[0] = len;
  std::vector<int64_t> pos(static_cast<size_t>(len));
  for (int64_t i = 0; i < len; ++i) pos[size_t(i)] = i;
  p.temps = {uint64_t(element_count(arg_shape)), uint64_t(element_count(rows))};
  p.int_temps = {true, true};
  p.steps.push_back({ArgReduceStep{{d, true, false}}, {Ref::in(0)}, Ref::temp(0), double(element_count(rows))});
  p.steps.push_back(ew_step({EwOp::Equal, true}, {arg_shape, pos_shape}, {Ref::temp(0), Ref::cst(ints(pos_shape, pos))},
                            Ref::temp(1)));
  p.steps.push_back(ew_step({EwOp::CastToFloat, true}, {rows}, {Ref::temp(1)}, Ref::out(0)));
  return p;
}

// OneHot: Equal of the indices (negative ones from the end) with the positions along the new
// axis, then Where between the off and on values.
NodePlan plan_one_hot(const Graph&, const Node& n, const std::vector<In>& in) {
  const In& idx = input(in, 0, "indices");
  const HostTensor& depth_t = const_input(in, 1, "depth");
  const HostTensor& values = const_input(in, 2, "values");
  if (depth_t.numel() != 1 || values.numel() != 2) bad("depth must hold one value and values two");
  int64_t depth = depth_t.integer ? depth_t.i[0] : int64_t(depth_t.f[0]);
  if (depth <= 0 || depth > (1 << 24)) bad("depth " + std::to_string(depth) + " is out of range");
  size_t r = idx.shape.size();
  int64_t axis = norm_axis(n.attr_int("axis", -1), r + 1);
  Shape out = idx.shape;
  out.insert(out.begin() + axis, depth);
  if (element_count(out) > INT32_MAX) bad("an output of " + shape_str(out) + " is too large");
  Shape ishape = idx.shape;  // the indices with the new axis of extent 1
  ishape.insert(ishape.begin() + axis, 1);
  Shape pshape(r + 1 - size_t(axis), 1);  // the positions along the new axis, broadcast
  pshape[0] = depth;
  std::vector<int64_t> pos(static_cast<size_t>(depth)), neg(static_cast<size_t>(depth));
  for (int64_t i = 0; i < depth; ++i) pos[size_t(i)] = i, neg[size_t(i)] = i - depth;
  bool ints_out = values.integer;
  HostTensorPtr off = values.integer ? ints({}, {values.i[0]}) : floats({}, {values.f[0]});
  HostTensorPtr on = values.integer ? ints({}, {values.i[1]}) : floats({}, {values.f[1]});
  NodePlan p;
  p.outs.push_back(fresh(out, ints_out));
  if (element_count(out) == 0) return p;
  Ref ri = Ref::in(0);
  uint64_t count = uint64_t(element_count(out));
  p.temps = {count, count, count};
  p.int_temps = {true, true, true};
  if (!idx.is_int()) {  // float indices: as integers
    p.temps.push_back(uint64_t(element_count(idx.shape)));
    p.int_temps.push_back(true);
    p.steps.push_back(ew_step({EwOp::CastToInt, false}, {idx.shape}, {Ref::in(0)}, Ref::temp(3)));
    ri = Ref::temp(3);
  }
  p.steps.push_back(ew_step({EwOp::Equal, true}, {ishape, pshape}, {ri, Ref::cst(ints(pshape, pos))}, Ref::temp(0)));
  p.steps.push_back(ew_step({EwOp::Equal, true}, {ishape, pshape}, {ri, Ref::cst(ints(pshape, neg))}, Ref::temp(1)));
  p.steps.push_back(ew_step({EwOp::Or, true}, {out, out}, {Ref::temp(0), Ref::temp(1)}, Ref::temp(2)));
  p.steps.push_back(
      ew_step({EwOp::Where, ints_out}, {out, {}, {}}, {Ref::temp(2), Ref::cst(on), Ref::cst(off)}, Ref::out(0)));
  return p;
}

// NonZero: on the host when its input is known at plan time (the output's size depends on it).
NodePlan plan_non_zero(const Graph&, const Node&, const std::vector<In>& in) {
  const In& x = input(in, 0, "X");
  if (!x.constant) unsupported("NonZero of a tensor computed at run time (the output's size depends on its values)");
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

// --- normalisations -------------------------------------------------------------------------------

// A per-element parameter input as `count` values: a run-time tensor of exactly that many, or a
// constant broadcast to `shape` (absent: `fill`).
Ref norm_param(const std::vector<In>& in, size_t k, const char* what, const Shape& shape, float fill) {
  int64_t count = element_count(shape);
  if (in.size() <= k || !in[k].present) return Ref::cst(floats(shape, std::vector<float>(size_t(count), fill)));
  const In& t = float_input(in, k, what);
  if (element_count(t.shape) == count) return Ref::in(int(k));
  if (!t.constant) unsupported(std::string(what) + " " + shape_str(t.shape) + " computed at run time and broadcast");
  Shape b = broadcast_shape(shape, t.shape);
  if (b != shape) bad(std::string(what) + " " + shape_str(t.shape) + " does not broadcast to " + shape_str(shape));
  std::vector<float> v(static_cast<size_t>(count), 0.f);
  cpu::binary(BinaryOp::Add, std::span<const float>(v), std::span<const float>(t.constant->f), std::span<float>(v),
              broadcast(shape, t.shape));
  return Ref::cst(floats(shape, std::move(v)));
}

NodePlan plan_layer_norm(const Graph&, const Node& n, const std::vector<In>& in) {
  const In& x = float_input(in, 0, "X");
  size_t r = x.shape.size();
  if (r == 0) bad("X is a scalar");
  int64_t axis = norm_axis(n.attr_int("axis", -1), r);
  if (n.attr_int("stash_type", 1) != 1) unsupported("stash_type other than float32");
  NormDims d;
  d.rows = u32(prod(x.shape, 0, size_t(axis)), "rows");
  d.len = u32(prod(x.shape, size_t(axis), r), "normalised extent");
  d.eps = n.attr_float("epsilon", 1e-5f);
  Shape norm_shape(x.shape.begin() + axis, x.shape.end());
  Ref scale = norm_param(in, 1, "Scale", norm_shape, 1.f), bias = norm_param(in, 2, "B", norm_shape, 0.f);
  NodePlan p;
  p.outs.push_back(fresh(x.shape));
  Shape stat_shape(x.shape.begin(), x.shape.begin() + axis);
  stat_shape.resize(r, 1);
  bool stats = (n.outputs.size() > 1 && !n.outputs[1].empty()) || (n.outputs.size() > 2 && !n.outputs[2].empty());
  if (stats) p.outs.push_back(fresh(stat_shape)), p.outs.push_back(fresh(stat_shape));
  if (d.count() == 0) return p;
  p.steps.push_back({NormStep{d, false}, {Ref::in(0), scale, bias}, Ref::out(0), 8.0 * double(d.count())});
  if (stats) {  // [rows][2] into a scratch buffer, then its two columns to the outputs
    p.temps.push_back(2 * uint64_t(d.rows));
    p.steps.push_back({NormStep{d, true}, {Ref::in(0)}, Ref::temp(0), 3.0 * double(d.count())});
    for (int k = 0; k < 2; ++k)
      p.steps.push_back(
          copy_step(Ref::temp(0), Ref::out(1 + k),
                    copy_dims(std::vector<int64_t>{d.rows}, std::vector<int64_t>{2}, k, std::vector<int64_t>{1}, 0)));
  }
  return p;
}

NodePlan plan_instance_norm(const Graph&, const Node& n, const std::vector<In>& in) {
  const In& x = float_input(in, 0, "input");
  if (x.shape.size() < 3) bad("input " + shape_str(x.shape) + " is not [N, C, spatial...]");
  NormDims d;
  d.rows = u32(x.shape[0] * x.shape[1], "N x C");
  d.len = u32(prod(x.shape, 2, x.shape.size()), "spatial extent");
  d.period = std::max<uint32_t>(u32(x.shape[1], "C"), 1);
  d.row_stride = 1;
  d.div = std::max<uint32_t>(d.len, 1);
  d.eps = n.attr_float("epsilon", 1e-5f);
  Shape c = {x.shape[1]};
  Ref scale = norm_param(in, 1, "scale", c, 1.f), bias = norm_param(in, 2, "B", c, 0.f);
  NodePlan p;
  p.outs.push_back(fresh(x.shape));
  if (d.count()) p.steps.push_back({NormStep{d}, {Ref::in(0), scale, bias}, Ref::out(0), 8.0 * double(d.count())});
  return p;
}

NodePlan plan_group_norm(const Graph&, const Node& n, const std::vector<In>& in) {
  const In& x = float_input(in, 0, "X");
  if (x.shape.size() < 3) bad("X " + shape_str(x.shape) + " is not [N, C, spatial...]");
  int64_t groups = n.attr_int("num_groups", 0), c = x.shape[1];
  if (groups <= 0 || c % groups)
    bad("num_groups " + std::to_string(groups) + " does not divide " + std::to_string(c) + " channels");
  NormDims d;
  d.rows = u32(x.shape[0] * groups, "N x groups");
  d.len = u32(c / groups * prod(x.shape, 2, x.shape.size()), "group extent");
  d.period = uint32_t(groups);
  d.eps = n.attr_float("epsilon", 1e-5f);
  // Opset 18: one scale and bias per group (opset 21 changed them to one per channel).
  Shape shape = {groups};
  d.row_stride = 1;
  d.div = std::max<uint32_t>(d.len, 1);
  if (in.size() > 1 && in[1].present && element_count(in[1].shape) == c && c != groups) {
    shape = {c};
    d.row_stride = uint32_t(c / groups);
    d.div = std::max<uint32_t>(u32(prod(x.shape, 2, x.shape.size()), "spatial extent"), 1);
  }
  Ref scale = norm_param(in, 1, "scale", shape, 1.f), bias = norm_param(in, 2, "bias", shape, 0.f);
  NodePlan p;
  p.outs.push_back(fresh(x.shape));
  if (d.count()) p.steps.push_back({NormStep{d}, {Ref::in(0), scale, bias}, Ref::out(0), 8.0 * double(d.count())});
  return p;
}

// --- Resize / Upsample ----------------------------------------------------------------------------

std::vector<double> const_floats(const std::vector<In>& in, size_t k, const char* what) {
  const HostTensor& t = const_input(in, k, what);
  std::vector<double> v;
  if (t.integer)
    for (int64_t i : t.i) v.push_back(double(i));
  else
    for (float f : t.f) v.push_back(double(f));
  return v;
}

bool has_values(const std::vector<In>& in, size_t k) {
  return in.size() > k && in[k].present && element_count(in[k].shape) > 0;
}

NodePlan plan_resize(const Graph& g, const Node& n, const std::vector<In>& in) {
  const In& x = float_input(in, 0, "X");
  size_t r = x.shape.size();
  bool upsample = n.op == "Upsample";
  bool v10 = upsample || g.opset < 11;  // scales only, asymmetric coordinates, nearest rounds down
  std::string mode_s = n.attr_string("mode", "nearest");
  ResizeMode mode = mode_s == "nearest"                            ? ResizeMode::Nearest
                    : (mode_s == "linear" || mode_s == "bilinear") ? ResizeMode::Linear
                    : mode_s == "cubic" && !v10                    ? ResizeMode::Cubic
                                                : (bad("mode '" + mode_s + "' is not valid"), ResizeMode::Nearest);
  ResizeCoords coords = ResizeCoords::Asymmetric;
  NearestMode nearest = NearestMode::Floor;
  if (!v10) {
    static const std::map<std::string, ResizeCoords, std::less<>> cm = {
        {"half_pixel", ResizeCoords::HalfPixel},
        {"pytorch_half_pixel", ResizeCoords::PytorchHalfPixel},
        {"align_corners", ResizeCoords::AlignCorners},
        {"asymmetric", ResizeCoords::Asymmetric},
        {"tf_half_pixel_for_nn", ResizeCoords::TfHalfPixelForNn},
        {"tf_crop_and_resize", ResizeCoords::TfCropAndResize}};
    static const std::map<std::string, NearestMode, std::less<>> nm = {
        {"round_prefer_floor", NearestMode::RoundPreferFloor},
        {"round_prefer_ceil", NearestMode::RoundPreferCeil},
        {"floor", NearestMode::Floor},
        {"ceil", NearestMode::Ceil}};
    std::string c = n.attr_string("coordinate_transformation_mode", "half_pixel");
    std::string nn = n.attr_string("nearest_mode", "round_prefer_floor");
    if (!cm.count(c)) unsupported("coordinate_transformation_mode '" + c + "'");
    if (!nm.count(nn)) bad("nearest_mode '" + nn + "' is not valid");
    coords = cm.find(c)->second;
    nearest = nm.find(nn)->second;
  }
  // Which axes the scales / sizes / roi name (opset 18's axes; else all).
  std::vector<int64_t> axes = n.attr_ints("axes");
  if (axes.empty())
    for (size_t i = 0; i < r; ++i) axes.push_back(int64_t(i));
  for (auto& a : axes) a = norm_axis(a, r, "axes entry");
  std::vector<double> scales(r, 1.0), roi_start(r, 0.0), roi_end(r, 1.0);
  Shape out = x.shape;
  std::vector<double> sv, zv;
  bool have_scales = false, have_sizes = false;
  if (upsample && g.opset < 9) {
    for (float f : n.attr("scales") ? n.attr("scales")->floats : std::vector<float>{}) sv.push_back(double(f));
    have_scales = true;
  } else if (v10) {
    sv = const_floats(in, 1, "scales");
    have_scales = true;
  } else {
    if (has_values(in, 2)) sv = const_floats(in, 2, "scales"), have_scales = true;
    if (has_values(in, 3)) zv = const_floats(in, 3, "sizes"), have_sizes = true;
    if (has_values(in, 1)) {
      std::vector<double> roi = const_floats(in, 1, "roi");
      if (roi.size() != 2 * axes.size()) bad("roi has " + std::to_string(roi.size()) + " values");
      for (size_t i = 0; i < axes.size(); ++i) {
        roi_start[size_t(axes[i])] = roi[i];
        roi_end[size_t(axes[i])] = roi[i + axes.size()];
      }
    }
  }
  if (have_scales == have_sizes) bad("give exactly one of scales and sizes");
  if (have_scales) {
    if (sv.size() != axes.size())
      bad(std::to_string(sv.size()) + " scales for " + std::to_string(axes.size()) + " axes");
    for (size_t i = 0; i < axes.size(); ++i) {
      size_t a = size_t(axes[i]);
      if (!(sv[i] > 0)) bad("scale " + std::to_string(sv[i]) + " is not positive");
      scales[a] = sv[i];
      double span = coords == ResizeCoords::TfCropAndResize ? roi_end[a] - roi_start[a] : 1.0;
      out[a] = int64_t(std::floor(double(x.shape[a]) * span * sv[i]));
    }
  } else {
    if (zv.size() != axes.size())
      bad(std::to_string(zv.size()) + " sizes for " + std::to_string(axes.size()) + " axes");
    std::string policy = n.attr_string("keep_aspect_ratio_policy", "stretch");
    if (policy != "stretch" && policy != "not_larger" && policy != "not_smaller")
      bad("keep_aspect_ratio_policy '" + policy + "' is not valid");
    double keep = policy == "not_larger" ? INFINITY : 0.0;
    for (size_t i = 0; i < axes.size(); ++i) {
      double s = zv[i] / double(x.shape[size_t(axes[i])]);
      keep = policy == "not_larger" ? std::min(keep, s) : std::max(keep, s);
    }
    for (size_t i = 0; i < axes.size(); ++i) {
      size_t a = size_t(axes[i]);
      if (policy == "stretch") {
        out[a] = int64_t(zv[i]);
        scales[a] = zv[i] / double(x.shape[a]);
      } else {
        scales[a] = keep;
        out[a] = int64_t(std::nearbyint(keep * double(x.shape[a])));
      }
    }
  }
  for (size_t a = 0; a < r; ++a)
    if (out[a] < 0 || out[a] > INT32_MAX) bad("output extent " + std::to_string(out[a]));
  if (element_count(out) > INT32_MAX) bad("an output of " + shape_str(out) + " is too large");
  NodePlan p;
  p.outs.push_back(fresh(out));
  if (element_count(out) == 0) return p;
  if (element_count(x.shape) == 0) bad("resizes an empty tensor");
  // The axes that change (at most two: the kernel's h and w).
  std::vector<size_t> moved;
  for (size_t a = 0; a < r; ++a) {
    bool crop = coords == ResizeCoords::TfCropAndResize && (roi_start[a] != 0 || roi_end[a] != 1);
    if (out[a] != x.shape[a] || scales[a] != 1.0 || crop) moved.push_back(a);
  }
  if (moved.size() > 2)
    unsupported("Resize of more than two axes at once (" + shape_str(x.shape) + " to " + shape_str(out) + ")");
  for (size_t a : moved)  // the taps tables (antialiasing widens them by 1 / scale)
    if (double(out[a]) * std::max(4.0, 4.0 / std::min(scales[a], 1.0)) > double(1 << 26))
      bad("resizing axis " + std::to_string(a) + " to " + std::to_string(out[a]) + " needs too large a taps table");
  auto axis_of = [&](size_t a) {
    ResizeAxis ax;
    ax.in = uint32_t(x.shape[a]);
    ax.out = uint32_t(out[a]);
    ax.scale = scales[a];
    ax.mode = mode;
    ax.coords = coords;
    ax.nearest = nearest;
    ax.cubic_a = n.attr_float("cubic_coeff_a", -0.75f);
    ax.exclude_outside = n.attr_int("exclude_outside", 0) != 0;
    ax.antialias = n.attr_int("antialias", 0) != 0;
    ax.roi_start = roi_start[a];
    ax.roi_end = roi_end[a];
    return ax;
  };
  ResizeAxis unit;  // an axis of extent 1 kept as it is
  size_t ah = moved.size() == 2 ? moved[0] : (moved.empty() ? r : moved[0]);
  size_t aw = moved.size() == 2 ? moved[1] : (moved.empty() ? r : moved[0]);
  ResizeDims d;
  ResizeTaps th, tw;
  if (moved.size() == 2) {
    d.outer = u32(prod(x.shape, 0, ah), "outer extent");
    d.mid = u32(prod(x.shape, ah + 1, aw), "middle extent");
    d.inner = u32(prod(x.shape, aw + 1, r), "inner extent");
    th = resize_taps(axis_of(ah));
    tw = resize_taps(axis_of(aw));
  } else if (moved.size() == 1) {
    d.outer = u32(prod(x.shape, 0, aw), "outer extent");
    d.inner = u32(prod(x.shape, aw + 1, r), "inner extent");
    th = resize_taps(unit);
    tw = resize_taps(axis_of(aw));
  } else {  // nothing moves: a copy through one tap
    d.inner = u32(element_count(x.shape), "extent");
    th = tw = resize_taps(unit);
  }
  d.in_h = moved.size() == 2 ? uint32_t(x.shape[ah]) : 1;
  d.out_h = th.out;
  d.in_w = moved.empty() ? 1 : uint32_t(x.shape[aw]);
  d.out_w = tw.out;
  d.taps_h = th.taps;
  d.taps_w = tw.taps;
  d.extrapolation = n.attr_float("extrapolation_value", 0.f);
  p.steps.push_back({ResizeStep{d},
                     {Ref::in(0), Ref::cst(floats({int64_t(d.table_floats())}, resize_table(th, tw)))},
                     Ref::out(0),
                     double(d.out_count()) * d.taps_h * d.taps_w * 2});
  return p;
}

// --- data movement -------------------------------------------------------------------------------

NodePlan plan_pad(const Graph& g, const Node& n, const std::vector<In>& in) {
  const In& x = input(in, 0, "data");
  size_t r = x.shape.size();
  std::string mode_s = n.attr_string("mode", "constant");
  PadMode mode = mode_s == "constant"  ? PadMode::Constant
                 : mode_s == "reflect" ? PadMode::Reflect
                 : mode_s == "edge"    ? PadMode::Edge
                 : mode_s == "wrap"    ? PadMode::Wrap
                                       : (bad("mode '" + mode_s + "' is not valid"), PadMode::Constant);
  std::vector<int64_t> pads;
  double value = 0;
  if (g.opset < 11) {
    pads = n.attr_ints(g.opset < 2 ? "paddings" : "pads");
    value = double(n.attr_float("value", 0.f));
  } else {
    std::vector<int64_t> given = const_ints(in, 1, "pads");
    if (in.size() > 2 && in[2].present && element_count(in[2].shape) > 0) {
      const HostTensor& c = const_input(in, 2, "constant_value");
      value = c.integer ? double(c.i.at(0)) : double(c.f.at(0));
    }
    std::vector<int64_t> axes;
    if (in.size() > 3 && in[3].present) axes = const_ints(in, 3, "axes");
    if (axes.empty()) {
      pads = given;
    } else {
      if (given.size() != 2 * axes.size())
        bad(std::to_string(given.size()) + " pads for " + std::to_string(axes.size()) + " axes");
      pads.assign(2 * r, 0);
      for (size_t i = 0; i < axes.size(); ++i) {
        size_t a = size_t(norm_axis(axes[i], r, "axes entry"));
        pads[a] = given[i];
        pads[a + r] = given[i + axes.size()];
      }
    }
  }
  if (pads.size() != 2 * r) bad(std::to_string(pads.size()) + " pads for rank " + std::to_string(r));
  Shape out = x.shape;
  for (size_t i = 0; i < r; ++i) out[i] += pads[i] + pads[i + r];
  NodePlan p;
  p.outs.push_back(fresh(out, x.is_int()));
  if (element_count(out) == 0) return p;
  if (element_count(x.shape) == 0 && mode != PadMode::Constant) bad("pads an empty tensor in mode " + mode_s);
  PadDims d = pad_dims(x.shape, pads, mode, value);
  d.ints = x.is_int();
  if (element_count(x.shape) == 0) {  // all constant: read nothing
    PadDims z = pad_dims(out, std::vector<int64_t>(2 * r, 0), PadMode::Constant, value);
    z.ints = d.ints;
    for (uint32_t i = 0; i < z.rank; ++i) z.in_shape[i] = 0, z.begin[i] = int64_t(z.out_shape[i]);
    d = z;
  }
  p.steps.push_back({PadStep{d}, {Ref::in(0)}, Ref::out(0), 0});
  return p;
}

// Copy walks of (extent, src stride, dst stride) dims: one step when at most kMaxRank dims have an
// extent above 1, else one step per index of the leading dims.
void walk_steps(NodePlan& p, std::vector<std::array<int64_t, 3>> dims, int64_t src_off, int64_t dst_off) {
  dims.erase(std::remove_if(dims.begin(), dims.end(), [](const auto& d) { return d[0] == 1; }), dims.end());
  if (dims.size() > kMaxRank) {
    if (p.steps.size() + size_t(dims[0][0]) > 4096) unsupported("a copy of more than 4096 pieces");
    auto rest = std::vector<std::array<int64_t, 3>>(dims.begin() + 1, dims.end());
    for (int64_t i = 0; i < dims[0][0]; ++i) walk_steps(p, rest, src_off + i * dims[0][1], dst_off + i * dims[0][2]);
    return;
  }
  std::vector<int64_t> shape, ss, ds;
  for (const auto& d : dims) shape.push_back(d[0]), ss.push_back(d[1]), ds.push_back(d[2]);
  p.steps.push_back(copy_step(Ref::in(0), Ref::out(0), copy_dims(shape, ss, src_off, ds, dst_off)));
}

NodePlan plan_tile(const Graph&, const Node&, const std::vector<In>& in) {
  const In& x = input(in, 0, "input");
  std::vector<int64_t> reps = const_ints(in, 1, "repeats");
  size_t r = x.shape.size();
  if (reps.size() != r) bad(std::to_string(reps.size()) + " repeats for rank " + std::to_string(r));
  Shape out = x.shape;
  for (size_t i = 0; i < r; ++i) {
    if (reps[i] < 0) bad("a negative repeat");
    out[i] *= reps[i];
  }
  if (element_count(out) > (1ll << 31)) bad("Tile to " + shape_str(out) + " is too large");
  NodePlan p;
  p.outs.push_back(fresh(out, x.is_int()));
  if (element_count(out) == 0) return p;
  auto xs = contiguous_strides(x.shape), os = contiguous_strides(out);
  std::vector<std::array<int64_t, 3>> dims;
  for (size_t i = 0; i < r; ++i) {
    dims.push_back({reps[i], 0, x.shape[i] * os[i]});
    dims.push_back({x.shape[i], xs[i], os[i]});
  }
  walk_steps(p, dims, 0, 0);
  return p;
}

NodePlan plan_depth_space(const Graph&, const Node& n, const std::vector<In>& in) {
  const In& x = input(in, 0, "input");
  if (x.shape.size() != 4) bad("input " + shape_str(x.shape) + " is not [N, C, H, W]");
  int64_t b = n.attr_int("blocksize", 0);
  if (b <= 0) bad("blocksize " + std::to_string(b));
  int64_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
  NodePlan p;
  std::vector<std::array<int64_t, 3>> dims;
  if (n.op == "DepthToSpace") {
    if (C % (b * b)) bad(std::to_string(C) + " channels are not a multiple of blocksize^2");
    int64_t c = C / (b * b);
    Shape out = {N, c, H * b, W * b};
    p.outs.push_back(fresh(out, x.is_int()));
    bool crd = n.attr_string("mode", "DCR") == "CRD";
    // Output walk [N, c, H, b1, W, b2], contiguous; the source channel is (b1 b + b2) c + ci (DCR)
    // or ci b b + b1 b + b2 (CRD).
    int64_t hw = H * W;
    int64_t cs = crd ? b * b * hw : hw, b1s = crd ? b * hw : b * c * hw, b2s = crd ? hw : c * hw;
    std::vector<int64_t> shape = {N, c, H, b, W, b}, src = {C * hw, cs, W, b1s, 1, b2s};
    auto os = contiguous_strides(shape);
    for (size_t i = 0; i < 6; ++i) dims.push_back({shape[i], src[i], os[i]});
  } else {
    if (H % b || W % b) bad("H and W are not multiples of blocksize " + std::to_string(b));
    int64_t h = H / b, w = W / b;
    Shape out = {N, C * b * b, h, w};
    p.outs.push_back(fresh(out, x.is_int()));
    // Output walk [N, b1, b2, C, h, w], contiguous; it reads x[n][c][h b + b1][w b + b2].
    std::vector<int64_t> shape = {N, b, b, C, h, w}, src = {C * H * W, W, 1, H * W, b * W, b};
    auto os = contiguous_strides(shape);
    for (size_t i = 0; i < 6; ++i) dims.push_back({shape[i], src[i], os[i]});
  }
  if (element_count(x.shape) > 0) walk_steps(p, dims, 0, 0);
  return p;
}

NodePlan plan_gather_elements(const Graph&, const Node& n, const std::vector<In>& in) {
  const In& x = input(in, 0, "data");
  const In& ind = input(in, 1, "indices");
  if (!ind.is_int()) bad("indices must be an integer tensor");
  size_t r = x.shape.size();
  if (ind.shape.size() != r)
    bad("indices " + shape_str(ind.shape) + " and data " + shape_str(x.shape) + " differ in rank");
  if (r == 0) bad("data is a scalar");
  if (r > kMaxRank) unsupported("GatherElements of rank " + std::to_string(r));
  int64_t axis = norm_axis(n.attr_int("axis", 0), r);
  for (size_t i = 0; i < r; ++i)
    if (int64_t(i) != axis && ind.shape[i] > x.shape[i])
      bad("indices " + shape_str(ind.shape) + " exceed data " + shape_str(x.shape));
  if (ind.constant)
    for (int64_t v : ind.constant->i)
      if (v < -x.shape[size_t(axis)] || v >= x.shape[size_t(axis)])
        bad("index " + std::to_string(v) + " is out of range");
  NodePlan p;
  p.outs.push_back(fresh(ind.shape, x.is_int()));
  if (element_count(ind.shape) == 0) return p;
  if (x.shape[size_t(axis)] == 0) bad("gathers from an empty axis");
  GatherElementsDims d;
  d.rank = uint32_t(r);
  auto xs = contiguous_strides(x.shape);
  for (size_t i = 0; i < r; ++i) d.shape[i] = u32(ind.shape[i], "extent"), d.x_strides[i] = xs[i];
  d.axis = uint32_t(axis);
  d.axis_len = u32(x.shape[size_t(axis)], "axis");
  p.steps.push_back({GatherElementsStep{d}, {Ref::in(0), Ref::in(1)}, Ref::out(0), 0});
  return p;
}

// --- positions -----------------------------------------------------------------------------------

AxisDims axis_dims(const Shape& s, int64_t axis) {
  return {u32(prod(s, 0, size_t(axis)), "outer extent"), u32(s[size_t(axis)], "axis"),
          u32(prod(s, size_t(axis) + 1, s.size()), "inner extent")};
}

NodePlan plan_arg_reduce(const Graph&, const Node& n, const std::vector<In>& in) {
  const In& x = float_input(in, 0, "data");
  size_t r = x.shape.size();
  if (r == 0) bad("data is a scalar");
  int64_t axis = norm_axis(n.attr_int("axis", 0), r);
  bool keep = n.attr_int("keepdims", 1) != 0;
  Shape out = x.shape;
  if (keep)
    out[size_t(axis)] = 1;
  else
    out.erase(out.begin() + axis);
  NodePlan p;
  p.outs.push_back(fresh(out, true));
  if (element_count(out) == 0) return p;
  if (x.shape[size_t(axis)] == 0) bad("an empty axis");
  ArgReduceDims d{axis_dims(x.shape, axis), n.op == "ArgMax", n.attr_int("select_last_index", 0) != 0};
  p.steps.push_back({ArgReduceStep{d}, {Ref::in(0)}, Ref::out(0), double(element_count(x.shape))});
  return p;
}

NodePlan plan_topk(const Graph& g, const Node& n, const std::vector<In>& in) {
  const In& x = float_input(in, 0, "X");
  size_t r = x.shape.size();
  if (r == 0) bad("X is a scalar");
  int64_t axis = norm_axis(n.attr_int("axis", -1), r);
  int64_t k;
  if (g.opset < 10) {
    k = n.attr_int("k", -1);
  } else {
    std::vector<int64_t> kv = const_ints(in, 1, "K");
    if (kv.size() != 1) bad("K must hold one value");
    k = kv[0];
  }
  if (k < 0 || k > x.shape[size_t(axis)]) bad("k " + std::to_string(k) + " is out of range for " + shape_str(x.shape));
  Shape out = x.shape;
  out[size_t(axis)] = k;
  NodePlan p;
  p.outs.push_back(fresh(out));
  p.outs.push_back(fresh(out, true));
  if (element_count(out) == 0) return p;
  TopKDims d{axis_dims(x.shape, axis), uint32_t(k), n.attr_int("largest", 1) != 0};
  double work = double(element_count(x.shape)) * double(x.shape[size_t(axis)]);
  p.steps.push_back({TopKStep{d, false}, {Ref::in(0)}, Ref::out(0), work});
  p.steps.push_back({TopKStep{d, true}, {Ref::in(0)}, Ref::out(1), work});
  return p;
}

NodePlan plan_cumsum(const Graph&, const Node& n, const std::vector<In>& in) {
  const In& x = input(in, 0, "x");
  std::vector<int64_t> av = const_ints(in, 1, "axis");
  if (av.size() != 1) bad("axis must hold one value");
  size_t r = x.shape.size();
  if (r == 0) bad("x is a scalar");
  int64_t axis = norm_axis(av[0], r);
  NodePlan p;
  p.outs.push_back(fresh(x.shape, x.is_int()));
  if (element_count(x.shape) == 0) return p;
  CumSumDims d{axis_dims(x.shape, axis), n.attr_int("exclusive", 0) != 0, n.attr_int("reverse", 0) != 0};
  p.steps.push_back({CumSumStep{d}, {Ref::in(0)}, Ref::out(0), double(element_count(x.shape))});
  return p;
}

// --- Einsum ---------------------------------------------------------------------------------------

// Einsum of one or two operands without repeated letters in one term (no diagonals) and without
// ellipses: letters in both operands and the output are batch dims, in both and not the output are
// summed (a matrix product), in one only and not the output are summed first; the operands are
// transposed to [batch][free][summed] and [batch][summed][free], multiplied by the batched matmul,
// and the product transposed to the output's order.
NodePlan plan_einsum(const Graph&, const Node& n, const std::vector<In>& in) {
  std::string eq = n.attr_string("equation", "");
  eq.erase(std::remove(eq.begin(), eq.end(), ' '), eq.end());
  if (eq.find("...") != std::string::npos) unsupported("Einsum with an ellipsis");
  size_t arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow), rhs;
  std::vector<std::string> terms;
  for (size_t s = 0;;) {
    size_t c = lhs.find(',', s);
    terms.push_back(lhs.substr(s, c == std::string::npos ? std::string::npos : c - s));
    if (c == std::string::npos) break;
    s = c + 1;
  }
  if (terms.size() != in.size())
    bad("the equation has " + std::to_string(terms.size()) + " terms for " + std::to_string(in.size()) + " inputs");
  if (terms.size() > 2) unsupported("Einsum of more than two operands");
  std::map<char, int64_t> extent;
  std::map<char, int> count;
  for (size_t t = 0; t < terms.size(); ++t) {
    const In& x = float_input(in, t, "operand");
    if (terms[t].size() != x.shape.size()) bad("term '" + terms[t] + "' does not match " + shape_str(x.shape));
    std::set<char> seen;
    for (size_t i = 0; i < terms[t].size(); ++i) {
      char c = terms[t][i];
      if (!std::isalpha(static_cast<unsigned char>(c))) bad("'" + eq + "' is not an equation");
      if (!seen.insert(c).second) unsupported("Einsum with a repeated letter in a term (a diagonal)");
      if (extent.count(c) && extent[c] != x.shape[i]) {
        if (extent[c] == 1)
          extent[c] = x.shape[i];
        else if (x.shape[i] != 1)
          bad("letter '" + std::string(1, c) + "' has extents " + std::to_string(extent[c]) + " and " +
              std::to_string(x.shape[i]));
      }
      if (!extent.count(c)) extent[c] = x.shape[i];
      ++count[c];
    }
  }
  if (arrow != std::string::npos) {
    rhs = eq.substr(arrow + 2);
  } else {  // implicit output: letters seen once, in alphabetical order
    for (auto [c, k] : count)
      if (k == 1) rhs += c;
  }
  for (char c : rhs)
    if (!extent.count(c)) bad("output letter '" + std::string(1, c) + "' is in no input");
  Shape out;
  for (char c : rhs) out.push_back(extent[c]);
  NodePlan p;
  p.outs.push_back(fresh(out));
  if (element_count(out) == 0) return p;
  for (size_t t = 0; t < terms.size(); ++t)
    for (size_t i = 0; i < terms[t].size(); ++i)
      if (in[t].shape[i] != extent[terms[t][i]]) unsupported("Einsum with broadcast extents");
  auto in_out = [&](char c) { return rhs.find(c) != std::string::npos; };
  // One operand: a transpose, then the sum over the letters not in the output.
  auto transposed = [&](size_t t, const std::string& order, Ref dst) {
    auto st = contiguous_strides(in[t].shape);
    Shape shape;
    std::vector<int64_t> src;
    for (char c : order) {
      size_t i = terms[t].find(c);
      shape.push_back(extent[c]);
      src.push_back(st[i]);
    }
    p.steps.push_back(copy_step(Ref::in(int(t)), dst, copy_dims(shape, src, 0, contiguous_strides(shape), 0)));
  };
  int64_t total_in = element_count(in[0].shape);
  if (terms.size() == 1) {
    std::string order = rhs;
    int64_t summed = 1;
    for (char c : terms[0])
      if (!in_out(c)) order += c, summed *= extent[c];
    if (summed == 1) {
      transposed(0, order, Ref::out(0));
      return p;
    }
    p.temps.push_back(uint64_t(total_in));
    transposed(0, order, Ref::temp(0));
    AxisDims d{u32(element_count(out), "outer"), u32(summed, "summed"), 1};
    p.steps.push_back({ReduceStep{d, AxisReduceOp::Sum}, {Ref::temp(0)}, Ref::out(0), double(total_in)});
    return p;
  }
  const std::string &ta = terms[0], &tb = terms[1];
  std::string batch, m_letters, n_letters, k_letters;
  for (char c : ta) {
    bool in_b = tb.find(c) != std::string::npos;
    if (in_b && in_out(c))
      batch += c;
    else if (in_b)
      k_letters += c;
    else if (in_out(c))
      m_letters += c;
    else
      unsupported("Einsum summing a letter of one operand only");
  }
  for (char c : tb) {
    bool in_a = ta.find(c) != std::string::npos;
    if (!in_a && in_out(c))
      n_letters += c;
    else if (!in_a)
      unsupported("Einsum summing a letter of one operand only");
  }
  auto ext = [&](const std::string& s) {
    int64_t e = 1;
    for (char c : s) e *= extent[c];
    return e;
  };
  int64_t B = ext(batch), M = ext(m_letters), N = ext(n_letters), K = ext(k_letters);
  if (K == 0) unsupported("a product over an empty inner dimension");
  p.temps.push_back(uint64_t(B * M * K));
  p.temps.push_back(uint64_t(B * K * N));
  transposed(0, batch + m_letters + k_letters, Ref::temp(0));
  transposed(1, batch + k_letters + n_letters, Ref::temp(1));
  std::string prod_order = batch + m_letters + n_letters;
  bool direct = prod_order == rhs;
  if (!direct) p.temps.push_back(uint64_t(B * M * N));
  Ref dst = direct ? Ref::out(0) : Ref::temp(2);
  BatchedMatmulDims d;
  d.m = u32(M, "M"), d.n = u32(N, "N"), d.k = u32(K, "K");
  d.rank = 1;
  d.batch[0] = u32(B, "batch");
  d.a_strides[0] = M * K;
  d.b_strides[0] = K * N;
  p.steps.push_back({BatchedMatmulStep{d}, {Ref::temp(0), Ref::temp(1)}, dst, d.flops()});
  if (!direct) {
    Shape shape;
    std::vector<int64_t> src;
    Shape pshape;
    for (char c : prod_order) pshape.push_back(extent[c]);
    auto st = contiguous_strides(pshape);
    for (char c : rhs) {
      shape.push_back(extent[c]);
      src.push_back(st[prod_order.find(c)]);
    }
    p.steps.push_back(copy_step(Ref::temp(2), Ref::out(0), copy_dims(shape, src, 0, contiguous_strides(shape), 0)));
  }
  return p;
}

// --- NonMaxSuppression ---------------------------------------------------------------------------

// On the host, when boxes and scores are known at plan time (its output's size depends on their
// values; wgc's detection path decodes and suppresses on the host after the network, cnn/detection.h).
NodePlan plan_nms(const Graph&, const Node& n, const std::vector<In>& in) {
  const In& b = input(in, 0, "boxes");
  const In& sc = input(in, 1, "scores");
  if (!b.constant || !sc.constant)
    unsupported(
        "NonMaxSuppression of boxes or scores computed at run time (the output's size depends on their values)");
  if (b.shape.size() != 3 || b.shape[2] != 4 || sc.shape.size() != 3 || sc.shape[0] != b.shape[0] ||
      sc.shape[2] != b.shape[1])
    bad("boxes " + shape_str(b.shape) + " and scores " + shape_str(sc.shape) + " are not [B, N, 4] and [B, C, N]");
  auto scalar = [&](size_t k, const char* what, double fallback) {
    if (in.size() <= k || !in[k].present || element_count(in[k].shape) == 0) return fallback;
    const HostTensor& t = const_input(in, k, what);
    if (t.numel() != 1) bad(std::string(what) + " must hold one value");
    return t.integer ? double(t.i[0]) : double(t.f[0]);
  };
  double max_out = scalar(2, "max_output_boxes_per_class", 0), iou = scalar(3, "iou_threshold", 0),
         score = scalar(4, "score_threshold", -INFINITY);
  if (b.constant->integer || sc.constant->integer) bad("boxes and scores must be float tensors");
  auto sel = cpu::non_max_suppression(
      b.constant->f, sc.constant->f, u32(b.shape[0], "batches"), u32(sc.shape[1], "classes"), u32(b.shape[1], "boxes"),
      int64_t(std::min(max_out, 1e9)), float(iou), float(score), n.attr_int("center_point_box", 0) != 0);
  std::vector<int64_t> flat;
  for (const auto& t : sel) flat.insert(flat.end(), t.begin(), t.end());
  return constant_out(ints({int64_t(sel.size()), 3}, std::move(flat)));
}

// --- ConvTranspose --------------------------------------------------------------------------------

// ConvTranspose as a convolution: x with stride - 1 zeros inserted between its elements and
// padded by (k_eff - 1 - pad) on each side (output_padding more at the end; negative amounts
// crop), then a stride-1 convolution with the same dilation and groups whose weights are the
// transposed ones, flipped ([C_in][C_out/g][kh][kw] -> [C_out][C_in/g][kh][kw]). The convolution
// is the library's ladder (prepared once; bias fused); the zero insertion is one pad kernel.
NodePlan plan_conv_transpose(const Graph&, const Node& n, const std::vector<In>& in) {
  const In& x = float_input(in, 0, "X");
  const HostTensor& wt = const_input(in, 1, "W");
  if (wt.integer) bad("W must be a float tensor");
  size_t r = x.shape.size();
  if (r != 3 && r != 4)
    unsupported("ConvTranspose of a rank-" + std::to_string(r) + " input (1-D and 2-D are supported)");
  if (wt.shape.size() != r) bad("W " + shape_str(wt.shape) + " does not match X " + shape_str(x.shape));
  size_t sp = r - 2;
  int64_t groups = n.attr_int("group", 1);
  int64_t cin = x.shape[1];
  if (groups <= 0 || cin % groups || wt.shape[0] != cin)
    bad("W " + shape_str(wt.shape) + " does not fit " + std::to_string(cin) + " input channels in " +
        std::to_string(groups) + " groups");
  int64_t cout_g = wt.shape[1], cout = cout_g * groups, cin_g = cin / groups;
  std::vector<int64_t> k(wt.shape.begin() + 2, wt.shape.end());
  if (n.has("kernel_shape") && n.attr_ints("kernel_shape") != k) bad("kernel_shape differs from W");
  auto attr = [&](const char* name, int64_t fill, size_t count) {
    std::vector<int64_t> v = n.attr_ints(name, std::vector<int64_t>(count, fill));
    if (v.size() != count)
      bad(std::string(name) + " has " + std::to_string(v.size()) + " values, " + std::to_string(count) + " expected");
    return v;
  };
  std::vector<int64_t> stride = attr("strides", 1, sp), dil = attr("dilations", 1, sp), pads = attr("pads", 0, 2 * sp),
                       opad = attr("output_padding", 0, sp);
  for (size_t i = 0; i < sp; ++i) {
    if (stride[i] <= 0 || dil[i] <= 0 || k[i] <= 0) bad("a stride, dilation or kernel extent below 1");
    if (opad[i] < 0) bad("a negative output_padding");
  }
  std::string ap = n.attr_string("auto_pad", "NOTSET");
  std::vector<int64_t> out_shape = n.attr_ints("output_shape");
  if (out_shape.size() > sp) out_shape.erase(out_shape.begin(), out_shape.end() - long(sp));  // [N, C, ...] given
  if (ap == "SAME_UPPER" || ap == "SAME_LOWER") {
    if (out_shape.empty())
      for (size_t i = 0; i < sp; ++i) out_shape.push_back(x.shape[2 + i] * stride[i]);
  } else if (ap == "VALID") {
    std::fill(pads.begin(), pads.end(), 0);
  } else if (ap != "NOTSET") {
    bad("auto_pad '" + ap + "' is not valid");
  }
  if (!out_shape.empty()) {
    if (out_shape.size() != sp) bad("output_shape " + shape_str(out_shape) + " does not match the spatial dims");
    for (size_t i = 0; i < sp; ++i) {
      int64_t total = stride[i] * (x.shape[2 + i] - 1) + opad[i] + (k[i] - 1) * dil[i] + 1 - out_shape[i];
      int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);  // floor, as ONNX's reference (Python //)
      pads[i] = ap == "SAME_UPPER" ? half : total - half;
      pads[i + sp] = total - pads[i];
    }
  }
  Shape out = {x.shape[0], cout};
  std::vector<int64_t> zbegin(sp), zlen(sp);
  for (size_t i = 0; i < sp; ++i) {
    int64_t ke = (k[i] - 1) * dil[i] + 1;
    int64_t o = stride[i] * (x.shape[2 + i] - 1) + opad[i] + ke - pads[i] - pads[i + sp];
    if (o <= 0) bad("the output would be empty along spatial dim " + std::to_string(i));
    out.push_back(o);
    zbegin[i] = ke - 1 - pads[i];
    zlen[i] = o + ke - 1;  // the zero-inserted, padded input the stride-1 convolution reads
  }
  bool has_bias = in.size() > 2 && in[2].present;
  HostTensorPtr bias;
  if (has_bias) {
    const HostTensor& b = const_input(in, 2, "B");
    if (b.integer || b.numel() != cout)
      bad("B has " + std::to_string(b.numel()) + " values for " + std::to_string(cout) + " channels");
    bias = in[2].constant;
  }
  NodePlan p;
  p.outs.push_back(fresh(out));
  if (element_count(out) == 0) return p;
  if (element_count(x.shape) == 0) bad("X is empty");
  // Weights: transposed per group and flipped.
  int64_t taps = element_count(k);
  std::vector<float> w(size_t(cout * cin_g * taps));
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t oc = 0; oc < cout_g; ++oc)
      for (int64_t ic = 0; ic < cin_g; ++ic)
        for (int64_t t = 0; t < taps; ++t)
          w[size_t(((g * cout_g + oc) * cin_g + ic) * taps + t)] =
              wt.f[size_t(((g * cin_g + ic) * cout_g + oc) * taps + (taps - 1 - t))];
  PadDims z;
  z.rank = uint32_t(r);
  for (size_t i = 0; i < r; ++i) {
    bool spatial = i >= 2;
    z.in_shape[i] = u32(x.shape[i], "extent");
    z.out_shape[i] = spatial ? u32(zlen[i - 2], "padded extent") : uint32_t(x.shape[i]);
    z.begin[i] = spatial ? zbegin[i - 2] : 0;
    z.stride[i] = spatial ? u32(stride[i - 2], "stride") : 1;
  }
  Conv2dDims d;
  d.n = u32(x.shape[0], "N");
  d.c_in = u32(cin, "C");
  d.h = r == 4 ? z.out_shape[2] : 1;
  d.w = z.out_shape[r - 1];
  d.c_out = u32(cout, "M");
  d.kh = r == 4 ? u32(k[0], "kernel") : 1;
  d.kw = u32(k[sp - 1], "kernel");
  d.dil_h = r == 4 ? u32(dil[0], "dilation") : 1;
  d.dil_w = u32(dil[sp - 1], "dilation");
  d.groups = u32(groups, "group");
  try {
    check(d);
  } catch (const Error& e) {
    bad(e.what());
  }
  ConvEpilogue ep = n.fused;  // an activation after it (cnn/fuse.h)
  ep.bias = has_bias;
  ep.residual = false;
  p.temps.push_back(z.out_count());
  p.steps.push_back({PadStep{z}, {Ref::in(0)}, Ref::temp(0), 0});
  p.steps.push_back({ConvStep{d, ep, floats({cout, cin_g, r == 4 ? k[0] : 1, k[sp - 1]}, std::move(w)), bias},
                     {Ref::temp(0)},
                     Ref::out(0),
                     d.flops()});
  return p;
}

}  // namespace

const std::map<std::string_view, Planner>& dense_planners() {
  static const std::map<std::string_view, Planner> m = [] {
    std::map<std::string_view, Planner> r;
    for (const auto& [name, op] : ew_ops()) r[name] = plan_elementwise;
    r["ArgMax"] = plan_arg_reduce;
    r["EyeLike"] = plan_eye_like;
    r["Hardmax"] = plan_hardmax;
    r["OneHot"] = plan_one_hot;
    r["NonZero"] = plan_non_zero;
    for (const char* op : {"ReduceSumSquare", "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp"})
      r[op] = plan_reduce_composite;
    r["ArgMin"] = plan_arg_reduce;
    r["ConvTranspose"] = plan_conv_transpose;
    r["CumSum"] = plan_cumsum;
    r["DepthToSpace"] = plan_depth_space;
    r["Einsum"] = plan_einsum;
    r["GatherElements"] = plan_gather_elements;
    r["GroupNormalization"] = plan_group_norm;
    r["InstanceNormalization"] = plan_instance_norm;
    r["LayerNormalization"] = plan_layer_norm;
    r["Mean"] = plan_mean;
    r["NonMaxSuppression"] = plan_nms;
    r["Pad"] = plan_pad;
    r["Resize"] = plan_resize;
    r["SpaceToDepth"] = plan_depth_space;
    r["Tile"] = plan_tile;
    r["TopK"] = plan_topk;
    r["Trilu"] = plan_trilu;
    r["Upsample"] = plan_resize;
    return r;
  }();
  return m;
}

}  // namespace wgc::cnn::detail
