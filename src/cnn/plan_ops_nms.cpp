// NonMaxSuppression, planned on the host (cpu/detect.h) when its inputs are known; RoiAlign (a
// kernel, ops/index_ops.h).
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
  if (!b.constant) needs_input(0, "NonMaxSuppression's boxes: the output's size depends on their values");
  if (!sc.constant) needs_input(1, "NonMaxSuppression's scores: the output's size depends on their values");
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

// RoiAlign (opsets 10 and 16): X [N, C, H, W], rois [R, 4], batch_indices [R] -> [R, C, oh, ow].
NodePlan plan_roi_align(const Graph& g, const Node& n, const std::vector<In>& in) {
  const In& x = float_input(in, 0, "X");
  const In& rois = float_input(in, 1, "rois");
  const In& bi = input(in, 2, "batch_indices");
  if (x.shape.size() != 4) bad("X " + shape_str(x.shape) + " is not [N, C, H, W]");
  if (rois.shape.size() != 2 || rois.shape[1] != 4) bad("rois " + shape_str(rois.shape) + " are not [R, 4]");
  if (bi.shape.size() != 1 || bi.shape[0] != rois.shape[0])
    bad("batch_indices " + shape_str(bi.shape) + " do not match rois " + shape_str(rois.shape));
  if (!bi.is_int()) bad("batch_indices must be an integer tensor");
  RoiAlignDims d;
  d.n = u32(x.shape[0], "N"), d.c = u32(x.shape[1], "C"), d.h = u32(x.shape[2], "H"), d.w = u32(x.shape[3], "W");
  d.rois = u32(rois.shape[0], "rois");
  int64_t oh = n.attr_int("output_height", 1), ow = n.attr_int("output_width", 1), sr = n.attr_int("sampling_ratio", 0);
  if (oh <= 0 || ow <= 0 || oh > 65536 || ow > 65536) bad("output_height / output_width must be in 1..65536");
  if (sr < 0) bad("sampling_ratio " + std::to_string(sr) + " is negative");
  d.out_h = uint32_t(oh), d.out_w = uint32_t(ow), d.sampling_ratio = uint32_t(std::min<int64_t>(sr, kRoiAlignMaxGrid));
  d.spatial_scale = n.attr_float("spatial_scale", 1.f);
  std::string mode = n.attr_string("mode", "avg");
  if (mode != "avg" && mode != "max") bad("mode '" + mode + "' (avg or max)");
  d.max = mode == "max";
  std::string ctm = n.attr_string("coordinate_transformation_mode", g.opset >= 16 ? "half_pixel" : "output_half_pixel");
  if (ctm != "half_pixel" && ctm != "output_half_pixel")
    bad("coordinate_transformation_mode '" + ctm + "' (half_pixel or output_half_pixel)");
  d.half_pixel = ctm == "half_pixel";
  check(d);
  if (bi.constant)
    for (int64_t b : bi.constant->i)
      if (b < 0 || b >= x.shape[0])
        bad("batch index " + std::to_string(b) + " is outside the batch of " + shape_str(x.shape));
  NodePlan p;
  p.outs.push_back(fresh({rois.shape[0], x.shape[1], oh, ow}));
  if (d.out_count() == 0) return p;
  double taps = d.sampling_ratio ? double(d.sampling_ratio) * d.sampling_ratio : 4.0;
  p.steps.push_back(
      {RoiAlignStep{d}, {Ref::in(0), Ref::in(1), Ref::in(2)}, Ref::out(0), double(d.out_count()) * taps * 8});
  return p;
}

}  // namespace

void add_nms_planners(PlannerTable& t) {
  t.emplace("NonMaxSuppression", plan_nms);
  t.emplace("RoiAlign", plan_roi_align);
}

}  // namespace wgc::cnn::detail
