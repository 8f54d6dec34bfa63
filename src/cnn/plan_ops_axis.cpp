// Ops along axes: ReduceSum / Mean / Max / Min and the reductions built from them (SumSquare,
// L1, L2, LogSum, LogSumExp), Softmax / LogSoftmax, ArgMax / ArgMin, Hardmax, TopK, CumSum.
// Planners of plan_ops.h; attribute defaults and opset differences follow the ONNX operator
// specification (opsets 7..18).
#include "cnn/plan_ops.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

namespace wgc::cnn::detail {
namespace {

AxisDims axis_dims(const Shape& s, int64_t axis) {
  return {u32(prod(s, 0, size_t(axis)), "outer extent"), u32(s[size_t(axis)], "axis"),
          u32(prod(s, size_t(axis) + 1, s.size()), "inner extent")};
}

// --- reductions ----------------------------------------------------------------------------------

// ReduceSum / Mean / Max / Min of input 0 over the node's axes (an input from opset input_from,
// else the attribute), keepdims and noop_with_empty_axes as the node says.
NodePlan plan_reduce_op(const Graph& g, const Node& n, const std::vector<In>& in, AxisReduceOp op, int64_t input_from) {
  const In& x = input(in, 0, "data");
  std::vector<int64_t> axes = axes_of(g, n, in, input_from);
  size_t r = x.shape.size();
  bool keep = n.attr_int("keepdims", 1) != 0;
  if (axes.empty() && n.attr_int("noop_with_empty_axes", 0)) return alias_of(0, x.shape, x.integer);
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
  p.outs.push_back(fresh(out, x.integer));
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
  p.int_temps.push_back(x.integer);
  p.steps.push_back(copy_step(Ref::in(0), Ref::temp(0), copy_dims(tshape, src, 0, contiguous_strides(tshape), 0)));
  p.steps.push_back({ReduceStep{AxisDims{u32(outer, "outer"), u32(len, "reduced extent"), 1}, op},
                     {Ref::temp(0)},
                     Ref::out(0),
                     double(element_count(x.shape))});
  return p;
}

NodePlan plan_reduce(const Graph& g, const Node& n, const std::vector<In>& in) {
  AxisReduceOp op = n.op == "ReduceMean"   ? AxisReduceOp::Mean
                    : n.op == "ReduceSum"  ? AxisReduceOp::Sum
                    : n.op == "ReduceMax"  ? AxisReduceOp::Max
                    : n.op == "ReduceProd" ? AxisReduceOp::Prod
                                           : AxisReduceOp::Min;
  return plan_reduce_op(g, n, in, op, n.op == "ReduceSum" ? 13 : 18);
}

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

// --- positions -----------------------------------------------------------------------------------

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

}  // namespace

void add_axis_planners(PlannerTable& t) {
  t.emplace("ArgMax", plan_arg_reduce);
  t.emplace("ArgMin", plan_arg_reduce);
  t.emplace("CumSum", plan_cumsum);
  t.emplace("Hardmax", plan_hardmax);
  t.emplace("LogSoftmax", plan_softmax);
  t.emplace("ReduceMax", plan_reduce);
  t.emplace("ReduceMean", plan_reduce);
  t.emplace("ReduceMin", plan_reduce);
  t.emplace("ReduceProd", plan_reduce);
  t.emplace("ReduceSum", plan_reduce);
  for (const char* op : {"ReduceSumSquare", "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp"})
    t.emplace(op, plan_reduce_composite);
  t.emplace("Softmax", plan_softmax);
  t.emplace("TopK", plan_topk);
}

}  // namespace wgc::cnn::detail
