// Normalisations: BatchNormalization (folded to a per-channel scale and shift), Layer, Instance
// and GroupNormalization.
// Planners of plan_ops.h; attribute defaults and opset differences follow the ONNX operator
// specification (opsets 7..18).
#include "cnn/plan_ops.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

namespace wgc::cnn::detail {
namespace {

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

}  // namespace

void add_norm_planners(PlannerTable& t) {
  t.emplace("BatchNormalization", plan_batchnorm);
  t.emplace("GroupNormalization", plan_group_norm);
  t.emplace("InstanceNormalization", plan_instance_norm);
  t.emplace("LayerNormalization", plan_layer_norm);
}

}  // namespace wgc::cnn::detail
