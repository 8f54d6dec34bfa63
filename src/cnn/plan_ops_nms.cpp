// NonMaxSuppression, planned on the host (cpu/detect.h) when its inputs are known.
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

}  // namespace

void add_nms_planners(PlannerTable& t) { t.emplace("NonMaxSuppression", plan_nms); }

}  // namespace wgc::cnn::detail
