// Resize / Upsample: nearest (every rounding mode), linear and cubic, every
// coordinate_transformation_mode, scales or sizes, opsets 7..18.
// Planners of plan_ops.h; attribute defaults and opset differences follow the ONNX operator
// specification (opsets 7..18).
#include "cnn/plan_ops.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

namespace wgc::cnn::detail {
namespace {

// --- Resize / Upsample ----------------------------------------------------------------------------

std::vector<double> const_floats(const std::vector<In>& in, size_t k, const char* what) {
  const HostTensor& t = const_input(in, k, what);
  std::vector<double> v;
  if (t.integer)
    for (int64_t i : t.i) v.push_back(double(i));
  else
    for (float f : t.f) v.push_back(double(f));
  return v;
}

bool has_values(const std::vector<In>& in, size_t k) {
  return in.size() > k && in[k].present && element_count(in[k].shape) > 0;
}

NodePlan plan_resize(const Graph& g, const Node& n, const std::vector<In>& in) {
  const In& x = float_input(in, 0, "X");
  size_t r = x.shape.size();
  bool upsample = n.op == "Upsample";
  bool v10 = upsample || g.opset < 11;  // scales only, asymmetric coordinates, nearest rounds down
  std::string mode_s = n.attr_string("mode", "nearest");
  ResizeMode mode = mode_s == "nearest"                            ? ResizeMode::Nearest
                    : (mode_s == "linear" || mode_s == "bilinear") ? ResizeMode::Linear
                    : mode_s == "cubic" && !v10                    ? ResizeMode::Cubic
                                                : (bad("mode '" + mode_s + "' is not valid"), ResizeMode::Nearest);
  ResizeCoords coords = ResizeCoords::Asymmetric;
  NearestMode nearest = NearestMode::Floor;
  if (!v10) {
    static const std::map<std::string, ResizeCoords, std::less<>> cm = {
        {"half_pixel", ResizeCoords::HalfPixel},
        {"pytorch_half_pixel", ResizeCoords::PytorchHalfPixel},
        {"align_corners", ResizeCoords::AlignCorners},
        {"asymmetric", ResizeCoords::Asymmetric},
        {"tf_half_pixel_for_nn", ResizeCoords::TfHalfPixelForNn},
        {"tf_crop_and_resize", ResizeCoords::TfCropAndResize}};
    static const std::map<std::string, NearestMode, std::less<>> nm = {
        {"round_prefer_floor", NearestMode::RoundPreferFloor},
        {"round_prefer_ceil", NearestMode::RoundPreferCeil},
        {"floor", NearestMode::Floor},
        {"ceil", NearestMode::Ceil}};
    std::string c = n.attr_string("coordinate_transformation_mode", "half_pixel");
    std::string nn = n.attr_string("nearest_mode", "round_prefer_floor");
    if (!cm.count(c)) unsupported("coordinate_transformation_mode '" + c + "'");
    if (!nm.count(nn)) bad("nearest_mode '" + nn + "' is not valid");
    coords = cm.find(c)->second;
    nearest = nm.find(nn)->second;
  }
  // Which axes the scales / sizes / roi name (opset 18's axes; else all).
  std::vector<int64_t> axes = n.attr_ints("axes");
  if (axes.empty())
    for (size_t i = 0; i < r; ++i) axes.push_back(int64_t(i));
  for (auto& a : axes) a = norm_axis(a, r, "axes entry");
  std::vector<double> scales(r, 1.0), roi_start(r, 0.0), roi_end(r, 1.0);
  Shape out = x.shape;
  std::vector<double> sv, zv;
  bool have_scales = false, have_sizes = false;
  if (upsample && g.opset < 9) {
    for (float f : n.attr("scales") ? n.attr("scales")->floats : std::vector<float>{}) sv.push_back(double(f));
    have_scales = true;
  } else if (v10) {
    sv = const_floats(in, 1, "scales");
    have_scales = true;
  } else {
    if (has_values(in, 2)) sv = const_floats(in, 2, "scales"), have_scales = true;
    if (has_values(in, 3)) zv = const_floats(in, 3, "sizes"), have_sizes = true;
    if (has_values(in, 1)) {
      std::vector<double> roi = const_floats(in, 1, "roi");
      if (roi.size() != 2 * axes.size()) bad("roi has " + std::to_string(roi.size()) + " values");
      for (size_t i = 0; i < axes.size(); ++i) {
        roi_start[size_t(axes[i])] = roi[i];
        roi_end[size_t(axes[i])] = roi[i + axes.size()];
      }
    }
  }
  if (have_scales == have_sizes) bad("give exactly one of scales and sizes");
  if (have_scales) {
    if (sv.size() != axes.size())
      bad(std::to_string(sv.size()) + " scales for " + std::to_string(axes.size()) + " axes");
    for (size_t i = 0; i < axes.size(); ++i) {
      size_t a = size_t(axes[i]);
      if (!(sv[i] > 0)) bad("scale " + std::to_string(sv[i]) + " is not positive");
      scales[a] = sv[i];
      double span = coords == ResizeCoords::TfCropAndResize ? roi_end[a] - roi_start[a] : 1.0;
      out[a] = int64_t(std::floor(double(x.shape[a]) * span * sv[i]));
    }
  } else {
    if (zv.size() != axes.size())
      bad(std::to_string(zv.size()) + " sizes for " + std::to_string(axes.size()) + " axes");
    std::string policy = n.attr_string("keep_aspect_ratio_policy", "stretch");
    if (policy != "stretch" && policy != "not_larger" && policy != "not_smaller")
      bad("keep_aspect_ratio_policy '" + policy + "' is not valid");
    double keep = policy == "not_larger" ? INFINITY : 0.0;
    for (size_t i = 0; i < axes.size(); ++i) {
      double s = zv[i] / double(x.shape[size_t(axes[i])]);
      keep = policy == "not_larger" ? std::min(keep, s) : std::max(keep, s);
    }
    for (size_t i = 0; i < axes.size(); ++i) {
      size_t a = size_t(axes[i]);
      if (policy == "stretch") {
        out[a] = int64_t(zv[i]);
        scales[a] = zv[i] / double(x.shape[a]);
      } else {
        scales[a] = keep;
        out[a] = int64_t(std::nearbyint(keep * double(x.shape[a])));
      }
    }
  }
  for (size_t a = 0; a < r; ++a)
    if (out[a] < 0 || out[a] > INT32_MAX) bad("output extent " + std::to_string(out[a]));
  if (element_count(out) > INT32_MAX) bad("an output of " + shape_str(out) + " is too large");
  NodePlan p;
  p.outs.push_back(fresh(out));
  if (element_count(out) == 0) return p;
  if (element_count(x.shape) == 0) bad("resizes an empty tensor");
  // The axes that change (at most two: the kernel's h and w).
  std::vector<size_t> moved;
  for (size_t a = 0; a < r; ++a) {
    bool crop = coords == ResizeCoords::TfCropAndResize && (roi_start[a] != 0 || roi_end[a] != 1);
    if (out[a] != x.shape[a] || scales[a] != 1.0 || crop) moved.push_back(a);
  }
  if (moved.size() > 2)
    unsupported("Resize of more than two axes at once (" + shape_str(x.shape) + " to " + shape_str(out) + ")");
  for (size_t a : moved)  // the taps tables (antialiasing widens them by 1 / scale)
    if (double(out[a]) * std::max(4.0, 4.0 / std::min(scales[a], 1.0)) > double(1 << 26))
      bad("resizing axis " + std::to_string(a) + " to " + std::to_string(out[a]) + " needs too large a taps table");
  auto axis_of = [&](size_t a) {
    ResizeAxis ax;
    ax.in = uint32_t(x.shape[a]);
    ax.out = uint32_t(out[a]);
    ax.scale = scales[a];
    ax.mode = mode;
    ax.coords = coords;
    ax.nearest = nearest;
    ax.cubic_a = n.attr_float("cubic_coeff_a", -0.75f);
    ax.exclude_outside = n.attr_int("exclude_outside", 0) != 0;
    ax.antialias = n.attr_int("antialias", 0) != 0;
    ax.roi_start = roi_start[a];
    ax.roi_end = roi_end[a];
    return ax;
  };
  ResizeAxis unit;  // an axis of extent 1 kept as it is
  size_t ah = moved.size() == 2 ? moved[0] : (moved.empty() ? r : moved[0]);
  size_t aw = moved.size() == 2 ? moved[1] : (moved.empty() ? r : moved[0]);
  ResizeDims d;
  ResizeTaps th, tw;
  if (moved.size() == 2) {
    d.outer = u32(prod(x.shape, 0, ah), "outer extent");
    d.mid = u32(prod(x.shape, ah + 1, aw), "middle extent");
    d.inner = u32(prod(x.shape, aw + 1, r), "inner extent");
    th = resize_taps(axis_of(ah));
    tw = resize_taps(axis_of(aw));
  } else if (moved.size() == 1) {
    d.outer = u32(prod(x.shape, 0, aw), "outer extent");
    d.inner = u32(prod(x.shape, aw + 1, r), "inner extent");
    th = resize_taps(unit);
    tw = resize_taps(axis_of(aw));
  } else {  // nothing moves: a copy through one tap
    d.inner = u32(element_count(x.shape), "extent");
    th = tw = resize_taps(unit);
  }
  d.in_h = moved.size() == 2 ? uint32_t(x.shape[ah]) : 1;
  d.out_h = th.out;
  d.in_w = moved.empty() ? 1 : uint32_t(x.shape[aw]);
  d.out_w = tw.out;
  d.taps_h = th.taps;
  d.taps_w = tw.taps;
  d.extrapolation = n.attr_float("extrapolation_value", 0.f);
  p.steps.push_back({ResizeStep{d},
                     {Ref::in(0), Ref::cst(floats({int64_t(d.table_floats())}, resize_table(th, tw)))},
                     Ref::out(0),
                     double(d.out_count()) * d.taps_h * d.taps_w * 2});
  return p;
}

}  // namespace

void add_resize_planners(PlannerTable& t) {
  t.emplace("Resize", plan_resize);
  t.emplace("Upsample", plan_resize);
}

}  // namespace wgc::cnn::detail
