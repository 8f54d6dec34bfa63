// The table of planners (plan_ops.h): each plan_ops_<family>.cpp adds its ops.
#include "cnn/plan_ops.h"

namespace wgc::cnn::detail {
namespace {

const PlannerTable& planners() {
  static const PlannerTable t = [] {
    PlannerTable r;
    for (auto add : {add_shape_planners, add_movement_planners, add_elementwise_planners, add_axis_planners,
                     add_conv_planners, add_norm_planners, add_matmul_planners, add_resize_planners, add_nms_planners,
                     add_attention_planners, add_host_planners})
      add(r);
    return r;
  }();
  return t;
}

}  // namespace

Planner find_planner(std::string_view op) {
  auto it = planners().find(op);
  return it == planners().end() ? nullptr : it->second;
}

std::string supported_ops() {
  std::string s;
  for (const auto& [name, p] : planners()) s.append(s.empty() ? "" : ", ").append(name);
  return s;
}

}  // namespace wgc::cnn::detail
