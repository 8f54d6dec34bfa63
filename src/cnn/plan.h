// A graph resolved for one set of input shapes: every node's output shape known, shape arithmetic
// (Shape / Gather / Concat / Unsqueeze ... as PyTorch's exporter writes it) and anything else whose
// inputs are all constants computed on the host, and the rest turned into steps (one kernel each)
// over activation buffers ("slots") assigned by liveness and reused. The same plan runs on the GPU
// (cnn/exec_gpu.h) and on the CPU references (cnn/exec_cpu.h).
#pragma once

#include "cnn/graph.h"
#include "cpu/conv.h"
#include "cpu/detect.h"
#include "cpu/elementwise.h"
#include "cpu/fused_attention.h"
#include "cpu/index_ops.h"
#include "cpu/norm.h"
#include "cpu/resize.h"
#include "cpu/tensor_ops.h"
#include "cpu/words.h"
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
// The ops beyond classifiers (cpu/elementwise.h, cpu/norm.h, cpu/resize.h, cpu/index_ops.h).
struct EwStep {
  EwParams p;
  EwDims dims;
};
struct NormStep {
  NormDims dims;
  bool stats = false;  // in: x; out: [rows][2] mean and 1 / std (else in: x, scale, bias)
};
struct ResizeStep {
  ResizeDims dims;  // in: x, the taps table (a constant)
};
struct PadStep {
  PadDims dims;
};
struct GatherStep {
  GatherDims dims;  // in: x, indices
};
struct GatherElementsStep {
  GatherElementsDims dims;  // in: x, indices
};
struct ArgReduceStep {
  ArgReduceDims dims;
};
struct TopKStep {
  TopKDims dims;
  bool indices = false;  // the positions (else the values)
};
struct CumSumStep {
  CumSumDims dims;
};
struct ScatterElementsStep {
  ScatterElementsDims dims;  // in: data, indices, updates
};
struct RoiAlignStep {
  RoiAlignDims dims;  // in: x, rois, batch indices
};
struct AttentionStep {
  FusedAttentionDims dims;  // in: q, kt, v, and the mask when dims.mask
};
using StepOp =
    std::variant<ConvStep, PoolStep, GlobalPoolStep, MatmulStep, BatchedMatmulStep, BinaryStep, UnaryStep, SoftmaxStep,
                 ReduceStep, CopyStep, EwStep, NormStep, ResizeStep, PadStep, GatherStep, GatherElementsStep,
                 ArgReduceStep, TopKStep, CumSumStep, ScatterElementsStep, RoiAlignStep, AttentionStep>;

// An operand of a step: an activation slot, or a constant. Integer (and bool) operands hold i32
// in their slot (and an integer constant goes to the device as i32).
struct Operand {
  int slot = -1;
  HostTensorPtr constant;
  uint64_t elems = 0;  // elements the operand holds
  bool integer = false;
};

struct Step {
  std::string label;  // "node name (Op)", for profiles
  StepOp op;
  std::vector<Operand> in;
  Operand out;
  double flops = 0;
};

// A graph output after planning: in a slot (i32 values when integer), or a constant.
struct PlannedValue {
  Shape shape;
  int slot = -1;
  HostTensorPtr constant;
  bool integer = false;
};

// What a run feeds the plan: the shape of each graph input, and optionally its values: the plan
// then computes with them on the host (shape arithmetic from integer inputs, parameters such as
// Resize's scales given as inputs), a new plan per set of values. Without values an input is a
// run-time tensor on the device (f32, or i32 for integer and bool inputs).
struct InputSpec {
  Shape shape;
  HostTensorPtr value;  // planned by value
};

// What a plan may need, checked while it is made (before the CPU path or constant folding
// allocates anything, and before the GPU path creates buffers): one limit for both paths.
inline constexpr int64_t kMaxValueElements = int64_t(1) << 29;  // one tensor: 2 GiB of float32
inline constexpr uint64_t kMaxPlanBytes = uint64_t(16) << 30;   // all activation buffers together

struct Plan {
  std::vector<InputSpec> inputs;
  std::vector<uint64_t> slot_elems;  // each slot's size in elements
  std::vector<int> input_slots;      // per graph input: its slot (-1 for inputs planned by value)
  std::vector<bool> input_integer;   // per graph input: an integer (i32 in its slot) or bool one
  std::vector<PlannedValue> outputs;
  std::vector<Step> steps;
  double flops() const;
  uint64_t slot_bytes() const;  // all activation buffers together
};

// A node needs the values of a tensor that the graph computes at run time: its output's shape
// depends on them (NonZero, NonMaxSuppression), or they choose what runs (If's condition). The
// plan cannot go past it in one piece; cnn::Model then runs the graph in stages, cut before `node`
// (cnn/model.h). `nodes` are the graph's nodes as planned (If's branches taken so far spliced in),
// which `node` indexes.
struct NeedsValues : Unsupported {
  NeedsValues(const std::string& what, size_t node_index, std::string value_name,
              std::shared_ptr<const std::vector<Node>> planned)
      : Unsupported(what), node(node_index), value(std::move(value_name)), nodes(std::move(planned)) {}
  size_t node = 0;
  std::string value;
  std::shared_ptr<const std::vector<Node>> nodes;
};

// Resolves g for these inputs (one per g.inputs, in order). Throws Unsupported for what wgc does
// not support, NeedsValues where it needs values computed at run time, wgc::Error (naming the node)
// for a model that is wrong for these inputs. An If whose condition is known on the host (a shape
// test, as PyTorch's exporter writes for Squeeze) is replaced by the branch it takes.
Plan make_plan(const Graph& g, const std::vector<InputSpec>& inputs);

// Runs every step of p on the CPU references, over host buffers of p.slot_elems 4-byte words each
// (f32, or i32 for integer values; the inputs already in their slots; the outputs are left in theirs).
void run_plan_cpu(const Plan& p, std::vector<std::vector<float>>& slots);

// Runs a step on the CPU references over host buffers: the CPU path (f32 and i32 words) and
// constant folding at plan time (f32 and i64). Throws Unsupported for integer operands of an op
// that takes floats only.
void run_step_cpu(const Step& s, std::span<const cpu::ConstWords> in, const cpu::Words& out);

}  // namespace wgc::cnn
