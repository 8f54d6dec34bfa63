// A graph resolved for one set of input shapes: every node's output shape known, shape arithmetic
// (Shape / Gather / Concat / Unsqueeze ... as PyTorch's exporter writes it) and anything else whose
// inputs are all constants computed on the host, and the rest turned into steps (one kernel each)
// over activation buffers ("slots") assigned by liveness and reused. The same plan runs on the GPU
// (cnn/exec_gpu.h) and on the CPU references (cnn/exec_cpu.h).
#pragma once

#include "cnn/graph.h"
#include "cpu/conv.h"
#include "cpu/tensor_ops.h"
#include "ops/matmul.h"
#include "util/error.h"

#include <string>
#include <variant>
#include <vector>

namespace wgc::cnn {

struct ConvStep {
  Conv2dDims dims;
  ConvEpilogue ep;
  HostTensorPtr weights, bias;  // constants (prepared once); empty when given at run time or absent
  // Step inputs: x is in[0]; weights and bias given at run time, and the residual, are in[k].
  int w_in = -1, b_in = -1, res_in = -1;
};
struct PoolStep {
  Pool2dDims dims;
  PoolKind kind = PoolKind::Max;
};
struct GlobalPoolStep {
  uint32_t n = 0, c = 0, hw = 0;
};
struct MatmulStep {
  MatmulDims dims;
};
struct BatchedMatmulStep {
  BatchedMatmulDims dims;
};
struct BinaryStep {
  BinaryDims dims;
  BinaryOp op = BinaryOp::Add;
};
struct UnaryStep {
  UnaryParams p;
  uint64_t count = 0;
};
struct SoftmaxStep {
  AxisDims dims;
  bool log = false;
};
struct ReduceStep {
  AxisDims dims;
  AxisReduceOp op = AxisReduceOp::Mean;
};
struct CopyStep {
  CopyDims dims;
};
using StepOp = std::variant<ConvStep, PoolStep, GlobalPoolStep, MatmulStep, BatchedMatmulStep, BinaryStep, UnaryStep,
                            SoftmaxStep, ReduceStep, CopyStep>;

// An operand of a step: an activation slot, or a constant.
struct Operand {
  int slot = -1;
  HostTensorPtr constant;
  uint64_t elems = 0;  // elements the operand holds
};

struct Step {
  std::string label;  // "node name (Op)", for profiles
  StepOp op;
  std::vector<Operand> in;
  Operand out;
  double flops = 0;
};

// A graph output after planning: in a slot, or a constant.
struct PlannedValue {
  Shape shape;
  int slot = -1;
  HostTensorPtr constant;
};

// What a run feeds the plan: the shape of each graph input, and the values of integer ones (they
// are shape arithmetic, computed on the host).
struct InputSpec {
  Shape shape;
  HostTensorPtr int_value;  // for integer inputs
};

// What a plan may need, checked while it is made (before the CPU path or constant folding
// allocates anything, and before the GPU path creates buffers): one limit for both paths.
inline constexpr int64_t kMaxValueElements = int64_t(1) << 29;  // one tensor: 2 GiB of float32
inline constexpr uint64_t kMaxPlanBytes = uint64_t(16) << 30;   // all activation buffers together

struct Plan {
  std::vector<InputSpec> inputs;
  std::vector<uint64_t> slot_elems;  // each slot's size in elements
  std::vector<int> input_slots;      // per graph input: its slot (-1 for integer inputs)
  std::vector<PlannedValue> outputs;
  std::vector<Step> steps;
  double flops() const;
  uint64_t slot_bytes() const;  // all activation buffers together
};

// Resolves g for these inputs (one per g.inputs, in order). Throws Unsupported for what wgc does
// not support, wgc::Error (naming the node) for a model that is wrong for these inputs.
Plan make_plan(const Graph& g, const std::vector<InputSpec>& inputs);

// Runs every step of p on the CPU references, over host buffers of p.slot_elems floats each (the
// inputs already in their slots; the outputs are left in theirs).
void run_plan_cpu(const Plan& p, std::vector<std::vector<float>>& slots);

// Runs a step on the CPU references over host buffers (CPU path; constant folding at plan time).
void run_step_cpu(const Step& s, std::span<const float* const> in, std::span<const uint64_t> in_elems, float* out,
                  uint64_t out_elems);

}  // namespace wgc::cnn
