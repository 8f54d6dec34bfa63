// Element-wise ops: binary and unary maps of the classifier kernels, the general element-wise
// family (comparisons, logic and Where on integer / bool tensors, float functions, PRelu, Mod),
// Mean, Trilu and OneHot (masks made of those).
// Planners of plan_ops.h; attribute defaults and opset differences follow the ONNX operator
// specification (opsets 7..18).
#include "cnn/plan_ops.h"
#include "cpu/detect.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

namespace wgc::cnn::detail {
namespace {

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

}  // namespace

void add_elementwise_planners(PlannerTable& t) {
  for (const auto& [name, op] : ew_ops()) t.emplace(name, plan_elementwise);
  t.emplace("Abs", plan_unary);
  t.emplace("Add", plan_binary);
  t.emplace("Clip", plan_unary);
  t.emplace("Div", plan_binary);
  t.emplace("Elu", plan_unary);
  t.emplace("Exp", plan_unary);
  t.emplace("HardSigmoid", plan_unary);
  t.emplace("HardSwish", plan_unary);
  t.emplace("LeakyRelu", plan_unary);
  t.emplace("Log", plan_unary);
  t.emplace("Max", plan_binary);
  t.emplace("Mean", plan_mean);
  t.emplace("Min", plan_binary);
  t.emplace("Mul", plan_binary);
  t.emplace("Neg", plan_unary);
  t.emplace("OneHot", plan_one_hot);
  t.emplace("Pow", plan_binary);
  t.emplace("Relu", plan_unary);
  t.emplace("Sigmoid", plan_unary);
  t.emplace("Sqrt", plan_unary);
  t.emplace("Sub", plan_binary);
  t.emplace("Sum", plan_binary);
  t.emplace("Tanh", plan_unary);
  t.emplace("Trilu", plan_trilu);
}

}  // namespace wgc::cnn::detail
