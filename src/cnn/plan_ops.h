// Inside the planner (cnn/plan.cpp): what one op's planner sees and gives back. Each ONNX op has a
// planner (in plan_ops_<family>.cpp) that computes its output shapes and the steps that compute it,
// in terms of its own inputs, outputs and scratch buffers; make_plan maps those onto slots (or, when
// every input is a constant, runs the steps on the host at once).
#pragma once

#include "cnn/plan.h"

#include <map>
#include <string_view>

namespace wgc::cnn::detail {

// One input of a node as the planner sees it.
struct In {
  bool present = false;
  Shape shape;
  HostTensorPtr constant;  // known on the host (a weight, a computed shape)
  bool integer = false;    // an integer (or bool) tensor: i64 on the host, i32 on the device
  bool is_int() const { return integer; }
};

// A reference from a node's step to one of its inputs, outputs, scratch buffers, or a constant the
// planner made (folded parameters).
struct Ref {
  enum Kind { Input, Output, Temp, Const } kind = Input;
  int index = 0;
  HostTensorPtr c;
  static Ref in(int i) { return {Input, i, nullptr}; }
  static Ref out(int i) { return {Output, i, nullptr}; }
  static Ref temp(int i) { return {Temp, i, nullptr}; }
  static Ref cst(HostTensorPtr t) { return {Const, 0, std::move(t)}; }
};

struct NodeStep {
  StepOp op;
  std::vector<Ref> in;
  Ref out;
  double flops = 0;
};

struct OutSpec {
  Shape shape;
  bool integer = false;    // an integer (or bool) tensor
  HostTensorPtr constant;  // known now
  int alias = -1;          // a view of this input (Reshape and friends: no step)
};

struct NodePlan {
  std::vector<OutSpec> outs;
  std::vector<uint64_t> temps;  // scratch buffers (elements), live during the node only
  std::vector<bool> int_temps;  // which of them hold integers (missing entries: floats)
  bool temp_integer(size_t k) const { return k < int_temps.size() && int_temps[k]; }
  std::vector<NodeStep> steps;
};

using Planner = NodePlan (*)(const Graph& g, const Node& n, const std::vector<In>& in);

// --- helpers of the planners ----------------------------------------------------------------------

[[noreturn]] inline void unsupported(const std::string& what) { throw Unsupported(what); }

// A planner needs the values of input k, which the graph computes at run time (make_plan turns it
// into NeedsValues naming the tensor).
struct NeedsInput : Unsupported {
  NeedsInput(const std::string& what, size_t k) : Unsupported(what), input(k) {}
  size_t input = 0;
};
[[noreturn]] inline void needs_input(size_t k, const std::string& what) {
  throw NeedsInput(what + " (computed at run time; wgc runs the graph in stages there)", k);
}
[[noreturn]] inline void bad(const std::string& what) { throw Error(what); }

inline std::string shape_str(const Shape& s) { return shape_string(s); }

inline const In& input(const std::vector<In>& in, size_t k, const char* what) {
  if (k >= in.size() || !in[k].present) bad(std::string("input ") + std::to_string(k) + " (" + what + ") is missing");
  return in[k];
}

// The float data of an input that must be a constant.
inline const HostTensor& const_input(const std::vector<In>& in, size_t k, const char* what) {
  const In& x = input(in, k, what);
  if (!x.constant)
    throw NeedsInput(std::string("input ") + std::to_string(k) + " (" + what +
                         ") is computed at run time; wgc needs it to be a constant (an initializer or a shape "
                         "computation)",
                     k);
  return *x.constant;
}

inline std::vector<int64_t> const_ints(const std::vector<In>& in, size_t k, const char* what) {
  const HostTensor& c = const_input(in, k, what);
  if (!c.integer) bad(std::string("input ") + std::to_string(k) + " (" + what + ") must be an integer tensor");
  return c.i;
}

inline const In& float_input(const std::vector<In>& in, size_t k, const char* what) {
  const In& x = input(in, k, what);
  if (x.is_int()) unsupported(std::string("input ") + what + " is an integer tensor; this op runs on float32 only");
  return x;
}

inline int64_t norm_axis(int64_t axis, size_t rank, const char* what = "axis") {
  int64_t r = int64_t(rank);
  if (axis < -r || axis >= r)
    bad(std::string(what) + " " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + r : axis;
}

inline int64_t prod(const Shape& s, size_t from, size_t to) {
  int64_t n = 1;
  for (size_t i = from; i < to && i < s.size(); ++i) n *= s[i];
  return n;
}

inline uint32_t u32(int64_t v, const char* what) {
  if (v < 0 || v > int64_t(UINT32_MAX)) bad(std::string(what) + " " + std::to_string(v) + " is out of range");
  return uint32_t(v);
}

inline HostTensorPtr floats(Shape s, std::vector<float> v) {
  return std::make_shared<HostTensor>(std::move(s), std::move(v));
}
inline HostTensorPtr ints(Shape s, std::vector<int64_t> v) {
  return std::make_shared<HostTensor>(HostTensor::ints(std::move(s), std::move(v)));
}

// An output with a buffer of its own.
inline OutSpec fresh(Shape shape, bool integer = false) { return {std::move(shape), integer, nullptr, -1}; }

inline NodePlan alias_of(int input, Shape shape, bool integer = false) {
  NodePlan p;
  p.outs.push_back(OutSpec{std::move(shape), integer, nullptr, input});
  return p;
}

inline NodePlan constant_out(HostTensorPtr c) {
  NodePlan p;
  p.outs.push_back(OutSpec{c->shape, c->integer, c, -1});
  return p;
}

// A copy of all of input `from` (contiguous) into output `to` seen with dst strides at an offset.
inline NodeStep copy_step(Ref from, Ref to, const CopyDims& d) {
  return {CopyStep{d}, {std::move(from)}, std::move(to), 0};
}

inline NodeStep binary_step(BinaryOp op, const Shape& a, const Shape& b, Ref ra, Ref rb, Ref out) {
  BinaryDims d = broadcast(a, b);
  return {BinaryStep{d, op}, {std::move(ra), std::move(rb)}, std::move(out), double(d.count())};
}

inline NodeStep ew_step(const EwParams& p, const std::vector<Shape>& shapes, std::vector<Ref> refs, Ref out) {
  EwDims d = ew_broadcast(shapes);
  return {EwStep{p, d}, std::move(refs), std::move(out), double(d.count())};
}

// A node of one element-wise step over its first `operands` inputs (broadcast), one output whose
// type the op gives.
inline NodePlan ew_node(const EwParams& p, const std::vector<In>& in, size_t operands) {
  std::vector<Shape> shapes;
  std::vector<Ref> refs;
  for (size_t k = 0; k < operands; ++k) {
    const In& x = input(in, k, "operand");
    shapes.push_back(x.shape);
    refs.push_back(Ref::in(int(k)));
  }
  NodePlan np;
  Shape out = ew_broadcast_shape(shapes);
  np.outs.push_back(fresh(out, ew_int_output(p.op, p.ints)));
  if (element_count(out) > 0) np.steps.push_back(ew_step(p, shapes, std::move(refs), Ref::out(0)));
  return np;
}

// The axes of a node: input k from opset input_from_opset on, else the attribute.
inline std::vector<int64_t> axes_of(const Graph& g, const Node& n, const std::vector<In>& in, int64_t input_from_opset,
                                    size_t k = 1) {
  if (g.opset >= input_from_opset)
    return in.size() > k && in[k].present ? const_ints(in, k, "axes") : std::vector<int64_t>{};
  return n.attr_ints("axes");
}

// The planners by op name. Each plan_ops_<family>.cpp adds its family's (an op is in one only).
using PlannerTable = std::map<std::string_view, Planner>;
void add_shape_planners(PlannerTable& t);        // views, shape-made constants, Cast
void add_movement_planners(PlannerTable& t);     // Transpose, Concat, Slice, Gather, Pad, Tile, ...
void add_elementwise_planners(PlannerTable& t);  // binary, unary and the general element-wise ops
void add_axis_planners(PlannerTable& t);         // reductions, Softmax, ArgMax, TopK, CumSum
void add_conv_planners(PlannerTable& t);         // Conv, ConvTranspose, pooling
void add_norm_planners(PlannerTable& t);         // Batch / Layer / Instance / GroupNormalization
void add_matmul_planners(PlannerTable& t);       // Gemm, MatMul, Einsum
void add_resize_planners(PlannerTable& t);       // Resize, Upsample
void add_nms_planners(PlannerTable& t);          // NonMaxSuppression, RoiAlign
void add_attention_planners(PlannerTable& t);    // FusedAttention (cnn/fuse.h's)
void add_host_planners(PlannerTable& t);         // Unique, Det (from their input's values)

// The planner for an op of the default domain, or nullptr.
Planner find_planner(std::string_view op);
// The ops that have one, comma-separated (for "not supported" messages).
std::string supported_ops();

}  // namespace wgc::cnn::detail
