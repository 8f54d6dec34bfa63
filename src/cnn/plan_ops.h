// Inside the planner (cnn/plan.cpp): what one op's planner sees and gives back. Each ONNX op has a
// planner in plan_ops.cpp that computes its output shapes and the steps that compute it, in terms
// of its own inputs, outputs and scratch buffers; make_plan maps those onto slots (or, when every
// input is a constant, runs the steps on the host at once).
#pragma once

#include "cnn/plan.h"

#include <string_view>

namespace wgc::cnn::detail {

// One input of a node as the planner sees it.
struct In {
  bool present = false;
  Shape shape;
  HostTensorPtr constant;  // known on the host (a weight, a computed shape)
  bool is_int() const { return constant && constant->integer; }
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
  bool integer = false;    // computed on the host only (shape arithmetic)
  HostTensorPtr constant;  // known now
  int alias = -1;          // a view of this input (Reshape and friends: no step)
};

struct NodePlan {
  std::vector<OutSpec> outs;
  std::vector<uint64_t> temps;  // scratch buffers (elements), live during the node only
  std::vector<NodeStep> steps;
};

using Planner = NodePlan (*)(const Graph& g, const Node& n, const std::vector<In>& in);

// The planner for an op of the default domain, or nullptr.
Planner find_planner(std::string_view op);
// The ops that have one, comma-separated (for "not supported" messages).
std::string supported_ops();

}  // namespace wgc::cnn::detail
