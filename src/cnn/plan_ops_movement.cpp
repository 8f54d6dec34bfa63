// Data movement: Transpose, Concat, Split, Slice, Gather, Expand, Pad, Tile,
// DepthToSpace / SpaceToDepth, GatherElements (strided copies and index walks).
// Planners of plan_ops.h; attribute defaults and opset differences follow the ONNX operator
// specification (opsets 7..18).
#include "cnn/plan_ops.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

namespace wgc::cnn::detail {
namespace {

// --- data movement ------------------------------------------------------------------------------

NodePlan plan_transpose(const Graph&, const Node& n, const std::vector<In>& in) {
  const In& x = input(in, 0, "data");
  size_t r = x.shape.size();
  std::vector<int64_t> perm = n.attr_ints("perm");
  if (perm.empty())
    for (size_t i = 0; i < r; ++i) perm.push_back(int64_t(r - 1 - i));
  if (perm.size() != r) bad("perm has " + std::to_string(perm.size()) + " entries for rank " + std::to_string(r));
  std::vector<bool> seen(r, false);
  auto st = contiguous_strides(x.shape);
  Shape out;
  std::vector<int64_t> src;
  for (int64_t p : perm) {
    int64_t a = norm_axis(p, r, "perm entry");
    if (seen[size_t(a)]) bad("perm repeats axis " + std::to_string(a));
    seen[size_t(a)] = true;
    out.push_back(x.shape[size_t(a)]);
    src.push_back(st[size_t(a)]);
  }
  NodePlan p;
  p.outs.push_back(fresh(out, x.is_int()));
  p.steps.push_back(copy_step(Ref::in(0), Ref::out(0), copy_dims(out, src, 0, contiguous_strides(out), 0)));
  return p;
}

NodePlan plan_concat(const Graph&, const Node& n, const std::vector<In>& in) {
  if (in.empty()) bad("no inputs");
  const In& first = input(in, 0, "input");
  size_t r = first.shape.size();
  if (!n.has("axis")) bad("the axis attribute is required");
  int64_t axis = norm_axis(n.attr_int("axis", 0), r);
  Shape out = first.shape;
  out[size_t(axis)] = 0;
  bool integer = first.is_int();
  for (size_t k = 0; k < in.size(); ++k) {
    const In& x = input(in, k, "input");
    if (x.shape.size() != r || x.is_int() != integer) bad("inputs differ in rank or type");
    for (size_t d = 0; d < r; ++d)
      if (int64_t(d) != axis && x.shape[d] != first.shape[d])
        bad("input " + std::to_string(k) + " has shape " + shape_str(x.shape) + ", input 0 " + shape_str(first.shape));
    out[size_t(axis)] += x.shape[size_t(axis)];
  }
  NodePlan p;
  p.outs.push_back(fresh(out, integer));
  auto ost = contiguous_strides(out);
  int64_t at = 0;
  for (size_t k = 0; k < in.size(); ++k) {
    const Shape& s = in[k].shape;
    if (element_count(s) > 0)
      p.steps.push_back(
          copy_step(Ref::in(int(k)), Ref::out(0), copy_dims(s, contiguous_strides(s), 0, ost, at * ost[size_t(axis)])));
    at += s[size_t(axis)];
  }
  return p;
}

NodePlan plan_split(const Graph& g, const Node& n, const std::vector<In>& in) {
  const In& x = input(in, 0, "input");
  size_t r = x.shape.size();
  int64_t axis = norm_axis(n.attr_int("axis", 0), r);
  int64_t len = x.shape[size_t(axis)];
  std::vector<int64_t> parts;
  if (g.opset >= 13 && in.size() > 1 && in[1].present)
    parts = const_ints(in, 1, "split");
  else if (g.opset < 13)
    parts = n.attr_ints("split");
  size_t count = n.outputs.size();
  if (parts.empty()) {
    if (n.has("num_outputs")) count = size_t(n.attr_int("num_outputs", 1));
    if (count == 0) bad("no outputs");
    int64_t each = (len + int64_t(count) - 1) / int64_t(count);
    for (size_t k = 0; k < count; ++k) parts.push_back(std::clamp<int64_t>(len - each * int64_t(k), 0, each));
  }
  if (parts.size() != n.outputs.size())
    bad(std::to_string(parts.size()) + " split sizes for " + std::to_string(n.outputs.size()) + " outputs");
  if (std::accumulate(parts.begin(), parts.end(), int64_t(0)) != len)
    bad("split sizes do not add up to " + std::to_string(len));
  NodePlan p;
  auto st = contiguous_strides(x.shape);
  int64_t at = 0;
  for (size_t k = 0; k < parts.size(); ++k) {
    if (parts[k] < 0) bad("a negative split size");
    Shape s = x.shape;
    s[size_t(axis)] = parts[k];
    p.outs.push_back(fresh(s, x.is_int()));
    if (element_count(s) > 0)
      p.steps.push_back(
          copy_step(Ref::in(0), Ref::out(int(k)), copy_dims(s, st, at * st[size_t(axis)], contiguous_strides(s), 0)));
    at += parts[k];
  }
  return p;
}

NodePlan plan_slice(const Graph& g, const Node& n, const std::vector<In>& in) {
  const In& x = input(in, 0, "data");
  size_t r = x.shape.size();
  std::vector<int64_t> starts, ends, axes, steps;
  if (g.opset < 10) {
    starts = n.attr_ints("starts");
    ends = n.attr_ints("ends");
    axes = n.attr_ints("axes");
  } else {
    starts = const_ints(in, 1, "starts");
    ends = const_ints(in, 2, "ends");
    if (in.size() > 3 && in[3].present) axes = const_ints(in, 3, "axes");
    if (in.size() > 4 && in[4].present) steps = const_ints(in, 4, "steps");
  }
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(int64_t(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    bad("starts, ends, axes and steps differ in length");
  auto st = contiguous_strides(x.shape);
  Shape out = x.shape;
  std::vector<int64_t> src = st;
  int64_t offset = 0;
  std::vector<bool> seen(r, false);
  for (size_t i = 0; i < starts.size(); ++i) {
    size_t a = size_t(norm_axis(axes[i], r));
    if (seen[a]) bad("axis " + std::to_string(a) + " is sliced twice");
    seen[a] = true;
    int64_t dim = x.shape[a], step = steps[i];
    if (step == 0) bad("a step of 0");
    int64_t s = starts[i], e = ends[i];
    if (s < 0) s += dim;
    if (e < 0) e += dim;
    int64_t count;
    if (step > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      count = e > s ? (e - s + step - 1) / step : 0;
    } else {
      s = std::clamp<int64_t>(s, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      count = s > e ? (s - e + (-step) - 1) / (-step) : 0;
    }
    out[a] = count;
    if (count > 0) offset += s * st[a];
    src[a] = st[a] * step;
  }
  NodePlan p;
  p.outs.push_back(fresh(out, x.is_int()));
  if (element_count(out) > 0)
    p.steps.push_back(copy_step(Ref::in(0), Ref::out(0), copy_dims(out, src, offset, contiguous_strides(out), 0)));
  return p;
}

NodePlan plan_gather(const Graph&, const Node& n, const std::vector<In>& in) {
  const In& x = input(in, 0, "data");
  const In& ind = input(in, 1, "indices");
  if (!ind.is_int()) bad("indices must be an integer tensor");
  const Shape& ishape = ind.shape;
  size_t r = x.shape.size();
  if (r == 0) bad("data is a scalar");
  int64_t axis = norm_axis(n.attr_int("axis", 0), r);
  int64_t len = x.shape[size_t(axis)];
  Shape out(x.shape.begin(), x.shape.begin() + axis);
  out.insert(out.end(), ishape.begin(), ishape.end());
  out.insert(out.end(), x.shape.begin() + axis + 1, x.shape.end());
  int64_t pre = prod(x.shape, 0, size_t(axis)), post = prod(x.shape, size_t(axis) + 1, r);
  NodePlan p;
  p.outs.push_back(fresh(out, x.is_int()));
  if (element_count(out) == 0) return p;
  // Indices computed at run time (token ids into an embedding), or many of them: one gather kernel
  // (indices on the device; constant ones checked here).
  if (!ind.constant || (!x.constant && element_count(ishape) > 64)) {
    if (len == 0) bad("gathers from an empty axis");
    if (ind.constant)
      for (int64_t i : ind.constant->i)
        if (i < -len || i >= len)
          bad("index " + std::to_string(i) + " is out of range for a dimension of " + std::to_string(len));
    GatherDims d{u32(pre, "outer extent"), u32(len, "axis"), u32(post, "inner extent"),
                 u32(element_count(ishape), "indices")};
    p.steps.push_back({GatherStep{d}, {Ref::in(0), Ref::in(1)}, Ref::out(0), 0});
    return p;
  }
  std::vector<int64_t> idx = ind.constant->i;
  int64_t nidx = int64_t(idx.size());
  for (int64_t j = 0; j < nidx; ++j) {
    int64_t i = idx[size_t(j)];
    if (i < -len || i >= len)
      bad("index " + std::to_string(i) + " is out of range for a dimension of " + std::to_string(len));
    if (i < 0) i += len;
    std::vector<int64_t> shape = {pre, post};
    p.steps.push_back(copy_step(Ref::in(0), Ref::out(0),
                                copy_dims(shape, std::vector<int64_t>{len * post, 1}, i * post,
                                          std::vector<int64_t>{nidx * post, 1}, j * post)));
  }
  return p;
}

NodePlan plan_expand(const Graph&, const Node&, const std::vector<In>& in) {
  const In& x = input(in, 0, "input");
  std::vector<int64_t> shape = const_ints(in, 1, "shape");
  Shape out = broadcast_shape(x.shape, shape);
  if (element_count(out) > (1ll << 31)) bad("Expand to " + shape_str(out) + " is too large");
  std::vector<int64_t> src(out.size(), 0);
  auto st = contiguous_strides(x.shape);
  for (size_t i = 0; i < x.shape.size(); ++i)
    if (x.shape[i] != 1) src[out.size() - x.shape.size() + i] = st[i];
  NodePlan p;
  p.outs.push_back(fresh(out, x.is_int()));
  if (element_count(out) > 0)
    p.steps.push_back(copy_step(Ref::in(0), Ref::out(0), copy_dims(out, src, 0, contiguous_strides(out), 0)));
  return p;
}

// --- data movement -------------------------------------------------------------------------------

NodePlan plan_pad(const Graph& g, const Node& n, const std::vector<In>& in) {
  const In& x = input(in, 0, "data");
  size_t r = x.shape.size();
  std::string mode_s = n.attr_string("mode", "constant");
  PadMode mode = mode_s == "constant"  ? PadMode::Constant
                 : mode_s == "reflect" ? PadMode::Reflect
                 : mode_s == "edge"    ? PadMode::Edge
                 : mode_s == "wrap"    ? PadMode::Wrap
                                       : (bad("mode '" + mode_s + "' is not valid"), PadMode::Constant);
  std::vector<int64_t> pads;
  double value = 0;
  if (g.opset < 11) {
    pads = n.attr_ints(g.opset < 2 ? "paddings" : "pads");
    value = double(n.attr_float("value", 0.f));
  } else {
    std::vector<int64_t> given = const_ints(in, 1, "pads");
    if (in.size() > 2 && in[2].present && element_count(in[2].shape) > 0) {
      const HostTensor& c = const_input(in, 2, "constant_value");
      value = c.integer ? double(c.i.at(0)) : double(c.f.at(0));
    }
    std::vector<int64_t> axes;
    if (in.size() > 3 && in[3].present) axes = const_ints(in, 3, "axes");
    if (axes.empty()) {
      pads = given;
    } else {
      if (given.size() != 2 * axes.size())
        bad(std::to_string(given.size()) + " pads for " + std::to_string(axes.size()) + " axes");
      pads.assign(2 * r, 0);
      for (size_t i = 0; i < axes.size(); ++i) {
        size_t a = size_t(norm_axis(axes[i], r, "axes entry"));
        pads[a] = given[i];
        pads[a + r] = given[i + axes.size()];
      }
    }
  }
  if (pads.size() != 2 * r) bad(std::to_string(pads.size()) + " pads for rank " + std::to_string(r));
  Shape out = x.shape;
  for (size_t i = 0; i < r; ++i) out[i] += pads[i] + pads[i + r];
  NodePlan p;
  p.outs.push_back(fresh(out, x.is_int()));
  if (element_count(out) == 0) return p;
  if (element_count(x.shape) == 0 && mode != PadMode::Constant) bad("pads an empty tensor in mode " + mode_s);
  PadDims d = pad_dims(x.shape, pads, mode, value);
  d.ints = x.is_int();
  if (element_count(x.shape) == 0) {  // all constant: read nothing
    PadDims z = pad_dims(out, std::vector<int64_t>(2 * r, 0), PadMode::Constant, value);
    z.ints = d.ints;
    for (uint32_t i = 0; i < z.rank; ++i) z.in_shape[i] = 0, z.begin[i] = int64_t(z.out_shape[i]);
    d = z;
  }
  p.steps.push_back({PadStep{d}, {Ref::in(0)}, Ref::out(0), 0});
  return p;
}

// Copy walks of (extent, src stride, dst stride) dims: one step when at most kMaxRank dims have an
// extent above 1, else one step per index of the leading dims.
void walk_steps(NodePlan& p, std::vector<std::array<int64_t, 3>> dims, int64_t src_off, int64_t dst_off) {
  dims.erase(std::remove_if(dims.begin(), dims.end(), [](const auto& d) { return d[0] == 1; }), dims.end());
  if (dims.size() > kMaxRank) {
    if (p.steps.size() + size_t(dims[0][0]) > 4096) unsupported("a copy of more than 4096 pieces");
    auto rest = std::vector<std::array<int64_t, 3>>(dims.begin() + 1, dims.end());
    for (int64_t i = 0; i < dims[0][0]; ++i) walk_steps(p, rest, src_off + i * dims[0][1], dst_off + i * dims[0][2]);
    return;
  }
  std::vector<int64_t> shape, ss, ds;
  for (const auto& d : dims) shape.push_back(d[0]), ss.push_back(d[1]), ds.push_back(d[2]);
  p.steps.push_back(copy_step(Ref::in(0), Ref::out(0), copy_dims(shape, ss, src_off, ds, dst_off)));
}

NodePlan plan_tile(const Graph&, const Node&, const std::vector<In>& in) {
  const In& x = input(in, 0, "input");
  std::vector<int64_t> reps = const_ints(in, 1, "repeats");
  size_t r = x.shape.size();
  if (reps.size() != r) bad(std::to_string(reps.size()) + " repeats for rank " + std::to_string(r));
  Shape out = x.shape;
  for (size_t i = 0; i < r; ++i) {
    if (reps[i] < 0) bad("a negative repeat");
    out[i] *= reps[i];
  }
  if (element_count(out) > (1ll << 31)) bad("Tile to " + shape_str(out) + " is too large");
  NodePlan p;
  p.outs.push_back(fresh(out, x.is_int()));
  if (element_count(out) == 0) return p;
  auto xs = contiguous_strides(x.shape), os = contiguous_strides(out);
  std::vector<std::array<int64_t, 3>> dims;
  for (size_t i = 0; i < r; ++i) {
    dims.push_back({reps[i], 0, x.shape[i] * os[i]});
    dims.push_back({x.shape[i], xs[i], os[i]});
  }
  walk_steps(p, dims, 0, 0);
  return p;
}

NodePlan plan_depth_space(const Graph&, const Node& n, const std::vector<In>& in) {
  const In& x = input(in, 0, "input");
  if (x.shape.size() != 4) bad("input " + shape_str(x.shape) + " is not [N, C, H, W]");
  int64_t b = n.attr_int("blocksize", 0);
  if (b <= 0) bad("blocksize " + std::to_string(b));
  int64_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
  NodePlan p;
  std::vector<std::array<int64_t, 3>> dims;
  if (n.op == "DepthToSpace") {
    if (C % (b * b)) bad(std::to_string(C) + " channels are not a multiple of blocksize^2");
    int64_t c = C / (b * b);
    Shape out = {N, c, H * b, W * b};
    p.outs.push_back(fresh(out, x.is_int()));
    bool crd = n.attr_string("mode", "DCR") == "CRD";
    // Output walk [N, c, H, b1, W, b2], contiguous; the source channel is (b1 b + b2) c + ci (DCR)
    // or ci b b + b1 b + b2 (CRD).
    int64_t hw = H * W;
    int64_t cs = crd ? b * b * hw : hw, b1s = crd ? b * hw : b * c * hw, b2s = crd ? hw : c * hw;
    std::vector<int64_t> shape = {N, c, H, b, W, b}, src = {C * hw, cs, W, b1s, 1, b2s};
    auto os = contiguous_strides(shape);
    for (size_t i = 0; i < 6; ++i) dims.push_back({shape[i], src[i], os[i]});
  } else {
    if (H % b || W % b) bad("H and W are not multiples of blocksize " + std::to_string(b));
    int64_t h = H / b, w = W / b;
    Shape out = {N, C * b * b, h, w};
    p.outs.push_back(fresh(out, x.is_int()));
    // Output walk [N, b1, b2, C, h, w], contiguous; it reads x[n][c][h b + b1][w b + b2].
    std::vector<int64_t> shape = {N, b, b, C, h, w}, src = {C * H * W, W, 1, H * W, b * W, b};
    auto os = contiguous_strides(shape);
    for (size_t i = 0; i < 6; ++i) dims.push_back({shape[i], src[i], os[i]});
  }
  if (element_count(x.shape) > 0) walk_steps(p, dims, 0, 0);
  return p;
}

NodePlan plan_gather_elements(const Graph&, const Node& n, const std::vector<In>& in) {
  const In& x = input(in, 0, "data");
  const In& ind = input(in, 1, "indices");
  if (!ind.is_int()) bad("indices must be an integer tensor");
  size_t r = x.shape.size();
  if (ind.shape.size() != r)
    bad("indices " + shape_str(ind.shape) + " and data " + shape_str(x.shape) + " differ in rank");
  if (r == 0) bad("data is a scalar");
  if (r > kMaxRank) unsupported("GatherElements of rank " + std::to_string(r));
  int64_t axis = norm_axis(n.attr_int("axis", 0), r);
  for (size_t i = 0; i < r; ++i)
    if (int64_t(i) != axis && ind.shape[i] > x.shape[i])
      bad("indices " + shape_str(ind.shape) + " exceed data " + shape_str(x.shape));
  if (ind.constant)
    for (int64_t v : ind.constant->i)
      if (v < -x.shape[size_t(axis)] || v >= x.shape[size_t(axis)])
        bad("index " + std::to_string(v) + " is out of range");
  NodePlan p;
  p.outs.push_back(fresh(ind.shape, x.is_int()));
  if (element_count(ind.shape) == 0) return p;
  if (x.shape[size_t(axis)] == 0) bad("gathers from an empty axis");
  GatherElementsDims d;
  d.rank = uint32_t(r);
  auto xs = contiguous_strides(x.shape);
  for (size_t i = 0; i < r; ++i) d.shape[i] = u32(ind.shape[i], "extent"), d.x_strides[i] = xs[i];
  d.axis = uint32_t(axis);
  d.axis_len = u32(x.shape[size_t(axis)], "axis");
  p.steps.push_back({GatherElementsStep{d}, {Ref::in(0), Ref::in(1)}, Ref::out(0), 0});
  return p;
}

// ScatterElements (and opset 9's Scatter): data, indices, updates of the indices' shape; reduction
// none, add, mul (16), max, min (18).
NodePlan plan_scatter_elements(const Graph&, const Node& n, const std::vector<In>& in) {
  const In& x = input(in, 0, "data");
  const In& ind = input(in, 1, "indices");
  const In& upd = input(in, 2, "updates");
  size_t r = x.shape.size();
  if (!ind.is_int()) bad("indices must be an integer tensor");
  if (ind.shape.size() != r || upd.shape != ind.shape)
    bad("indices " + shape_str(ind.shape) + " and updates " + shape_str(upd.shape) + " must have data " +
        shape_str(x.shape) + "'s rank and one shape");
  if (upd.is_int() != x.is_int()) bad("updates and data differ in type");
  if (r == 0) bad("data is a scalar");
  if (r > kMaxRank) unsupported("ScatterElements of rank " + std::to_string(r));
  int64_t axis = norm_axis(n.attr_int("axis", 0), r);
  std::string red = n.attr_string("reduction", "none");
  ScatterElementsDims d;
  d.reduction = red == "none"  ? ScatterReduction::None
                : red == "add" ? ScatterReduction::Add
                : red == "mul" ? ScatterReduction::Mul
                : red == "max" ? ScatterReduction::Max
                : red == "min" ? ScatterReduction::Min
                               : (bad("reduction '" + red + "' (none, add, mul, max, min)"), ScatterReduction::None);
  d.rank = uint32_t(r), d.axis = uint32_t(axis), d.ints = x.is_int();
  for (size_t i = 0; i < r; ++i) {
    d.shape[i] = u32(x.shape[i], "data extent");
    d.index_shape[i] = u32(ind.shape[i], "indices extent");
  }
  check(d);
  if (ind.constant)
    for (int64_t v : ind.constant->i)
      if (v < -x.shape[size_t(axis)] || v >= x.shape[size_t(axis)])
        bad("index " + std::to_string(v) + " is out of range for a dimension of " +
            std::to_string(x.shape[size_t(axis)]));
  NodePlan p;
  p.outs.push_back(fresh(x.shape, x.is_int()));
  if (element_count(x.shape) == 0) return p;
  p.steps.push_back({ScatterElementsStep{d},
                     {Ref::in(0), Ref::in(1), Ref::in(2)},
                     Ref::out(0),
                     double(element_count(x.shape)) * double(ind.shape[size_t(axis)])});
  return p;
}

// GatherND, Compress, ScatterND: their indices (Compress's condition) are needed as values (the
// graph runs in stages where they are computed at run time); each becomes a flat Gather or
// ScatterElements over the data seen as [positions][rest], with the flat positions made here.

// The flat positions of GatherND / ScatterND: per index tuple (indices [..., k], the first
// batch_dims dims shared with data), its row of data seen as [prod(data[:b + k])][rest].
std::vector<int64_t> nd_positions(const Shape& ds, const In& ind, const std::vector<int64_t>& iv, int64_t b,
                                  const char* op) {
  const Shape& is = ind.shape;
  if (is.empty()) bad(std::string(op) + ": indices of rank 0");
  int64_t k = is.back(), r = int64_t(ds.size());
  if (b < 0 || b >= int64_t(is.size()) || b + k > r || k < 0)
    bad(std::string(op) + ": indices " + shape_str(is) + " do not fit data " + shape_str(ds) + " with batch_dims " +
        std::to_string(b));
  for (int64_t i = 0; i < b; ++i)
    if (is[size_t(i)] != ds[size_t(i)]) bad(std::string(op) + ": batch dims of indices and data differ");
  int64_t tuples = element_count(is) / std::max<int64_t>(k, 1), per_batch = prod(ds, size_t(b), size_t(b + k));
  int64_t batch_tuples = b ? tuples / std::max<int64_t>(prod(is, 0, size_t(b)), 1) : tuples;
  std::vector<int64_t> flat(static_cast<size_t>(tuples));
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t pos = b ? (t / std::max<int64_t>(batch_tuples, 1)) * per_batch : 0, stride = per_batch;
    for (int64_t j = 0; j < k; ++j) {
      int64_t e = ds[size_t(b + j)], v = iv[size_t(t * k + j)];
      if (v < -e || v >= e)
        bad(std::string(op) + ": index " + std::to_string(v) + " is out of range for " + std::to_string(e));
      stride /= std::max<int64_t>(e, 1);
      pos += (v < 0 ? v + e : v) * stride;
    }
    flat[size_t(t)] = pos;
  }
  return flat;
}

NodePlan plan_gather_nd(const Graph&, const Node& n, const std::vector<In>& in) {
  const In& x = input(in, 0, "data");
  const In& ind = input(in, 1, "indices");
  if (!ind.is_int()) bad("indices must be an integer tensor");
  std::vector<int64_t> iv = const_ints(in, 1, "indices");
  int64_t b = n.attr_int("batch_dims", 0);
  std::vector<int64_t> flat = nd_positions(x.shape, ind, iv, b, "GatherND");
  int64_t k = ind.shape.back();
  Shape out(ind.shape.begin(), ind.shape.end() - 1);
  out.insert(out.end(), x.shape.begin() + b + k, x.shape.end());
  NodePlan p;
  p.outs.push_back(fresh(out, x.is_int()));
  if (element_count(out) == 0) return p;
  int64_t rows = prod(x.shape, 0, size_t(b + k)), rest = prod(x.shape, size_t(b + k), x.shape.size());
  GatherDims d{1, u32(rows, "rows"), u32(rest, "row length"), u32(int64_t(flat.size()), "indices")};
  p.steps.push_back({GatherStep{d}, {Ref::in(0), Ref::cst(ints({int64_t(flat.size())}, flat))}, Ref::out(0), 0});
  return p;
}

NodePlan plan_compress(const Graph&, const Node& n, const std::vector<In>& in) {
  const In& x = input(in, 0, "input");
  const In& cond = input(in, 1, "condition");
  if (cond.shape.size() != 1) bad("condition " + shape_str(cond.shape) + " is not 1-D");
  std::vector<int64_t> cv = const_ints(in, 1, "condition");
  Shape xs = x.shape;
  int64_t axis = 0;
  if (n.has("axis")) {
    axis = norm_axis(n.attr_int("axis", 0), xs.size());
  } else {
    xs = {element_count(x.shape)};  // flattened
  }
  int64_t len = xs[size_t(axis)];
  if (int64_t(cv.size()) > len)
    bad("condition has " + std::to_string(cv.size()) + " entries for " + std::to_string(len));
  std::vector<int64_t> idx;
  for (size_t i = 0; i < cv.size(); ++i)
    if (cv[i]) idx.push_back(int64_t(i));
  Shape out = xs;
  out[size_t(axis)] = int64_t(idx.size());
  NodePlan p;
  p.outs.push_back(fresh(out, x.is_int()));
  if (element_count(out) == 0) return p;
  GatherDims d{u32(prod(xs, 0, size_t(axis)), "outer extent"), u32(len, "axis"),
               u32(prod(xs, size_t(axis) + 1, xs.size()), "inner extent"), u32(int64_t(idx.size()), "kept")};
  p.steps.push_back({GatherStep{d}, {Ref::in(0), Ref::cst(ints({int64_t(idx.size())}, idx))}, Ref::out(0), 0});
  return p;
}

NodePlan plan_scatter_nd(const Graph&, const Node& n, const std::vector<In>& in) {
  const In& x = input(in, 0, "data");
  const In& ind = input(in, 1, "indices");
  const In& upd = input(in, 2, "updates");
  if (!ind.is_int()) bad("indices must be an integer tensor");
  if (upd.is_int() != x.is_int()) bad("updates and data differ in type");
  std::vector<int64_t> iv = const_ints(in, 1, "indices");
  std::vector<int64_t> flat = nd_positions(x.shape, ind, iv, 0, "ScatterND");
  int64_t k = ind.shape.back(), m = int64_t(flat.size());
  Shape want(ind.shape.begin(), ind.shape.end() - 1);
  want.insert(want.end(), x.shape.begin() + k, x.shape.end());
  if (upd.shape != want) bad("updates " + shape_str(upd.shape) + " are not " + shape_str(want));
  std::string red = n.attr_string("reduction", "none");
  ScatterElementsDims d;
  d.reduction = red == "none"  ? ScatterReduction::None
                : red == "add" ? ScatterReduction::Add
                : red == "mul" ? ScatterReduction::Mul
                : red == "max" ? ScatterReduction::Max
                : red == "min" ? ScatterReduction::Min
                               : (bad("reduction '" + red + "' (none, add, mul, max, min)"), ScatterReduction::None);
  int64_t rows = prod(x.shape, 0, size_t(k)), rest = prod(x.shape, size_t(k), x.shape.size());
  NodePlan p;
  p.outs.push_back(fresh(x.shape, x.is_int()));
  if (element_count(x.shape) == 0) return p;
  // ScatterElements over [rows][rest] along rows, each update row's index repeated along it.
  d.rank = 2, d.axis = 0, d.ints = x.is_int();
  d.shape[0] = u32(rows, "rows"), d.shape[1] = u32(rest, "row length");
  d.index_shape[0] = u32(m, "updates"), d.index_shape[1] = u32(rest, "row length");
  check(d);
  if (uint64_t(m) * uint64_t(rest) > uint64_t(kMaxValueElements)) unsupported("ScatterND of that many updates");
  std::vector<int64_t> rep(size_t(m * rest));
  for (int64_t t = 0; t < m; ++t) std::fill(rep.begin() + t * rest, rep.begin() + (t + 1) * rest, flat[size_t(t)]);
  p.steps.push_back({ScatterElementsStep{d},
                     {Ref::in(0), Ref::cst(ints({m, rest}, std::move(rep))), Ref::in(2)},
                     Ref::out(0),
                     double(element_count(x.shape)) * double(m)});
  return p;
}

}  // namespace

void add_movement_planners(PlannerTable& t) {
  t.emplace("GatherND", plan_gather_nd);
  t.emplace("Compress", plan_compress);
  t.emplace("ScatterND", plan_scatter_nd);
  t.emplace("ScatterElements", plan_scatter_elements);
  t.emplace("Scatter", plan_scatter_elements);
  t.emplace("Concat", plan_concat);
  t.emplace("DepthToSpace", plan_depth_space);
  t.emplace("Expand", plan_expand);
  t.emplace("Gather", plan_gather);
  t.emplace("GatherElements", plan_gather_elements);
  t.emplace("Pad", plan_pad);
  t.emplace("Slice", plan_slice);
  t.emplace("SpaceToDepth", plan_depth_space);
  t.emplace("Split", plan_split);
  t.emplace("Tile", plan_tile);
  t.emplace("Transpose", plan_transpose);
}

}  // namespace wgc::cnn::detail
