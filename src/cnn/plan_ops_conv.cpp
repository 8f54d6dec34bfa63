// Convolutions and pooling: Conv (the convolution ladder with fused epilogues), ConvTranspose
// (zero insertion + the ladder with flipped weights), Average / Max / global pooling.
// Planners of plan_ops.h; attribute defaults and opset differences follow the ONNX operator
// specification (opsets 7..18).
#include "cnn/plan_ops.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

namespace wgc::cnn::detail {
namespace {

NodePlan plan_global_pool(const Graph&, const Node& n, const std::vector<In>& in) {
  const In& x = float_input(in, 0, "X");
  if (x.shape.size() < 3) bad("input " + shape_str(x.shape) + " is not [N, C, spatial...]");
  Shape out = {x.shape[0], x.shape[1]};
  out.resize(x.shape.size(), 1);
  uint32_t nn = u32(x.shape[0], "N"), c = u32(x.shape[1], "C"), hw = u32(prod(x.shape, 2, x.shape.size()), "pixels");
  if (hw == 0) bad("empty spatial extent");
  NodePlan p;
  p.outs.push_back(fresh(out));
  if (uint64_t(nn) * c == 0) return p;
  double work = double(element_count(x.shape));
  if (n.op == "GlobalAveragePool")
    p.steps.push_back({GlobalPoolStep{nn, c, hw}, {Ref::in(0)}, Ref::out(0), work});
  else
    p.steps.push_back({ReduceStep{AxisDims{nn * c, hw, 1}, AxisReduceOp::Max}, {Ref::in(0)}, Ref::out(0), work});
  return p;
}

// Spatial attributes shared by Conv and pooling, for 1-D or 2-D windows.
struct Window {
  uint32_t kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1, pt = 0, pl = 0, pb = 0, pr = 0;
};

Window window(const Node& n, const Shape& x, const std::vector<int64_t>& kernel) {
  size_t sp = x.size() - 2;
  if (sp != 1 && sp != 2) unsupported(std::to_string(sp) + "-D windows are not supported (1-D and 2-D are)");
  if (kernel.size() != sp) bad("kernel_shape " + shape_str(kernel) + " does not match input " + shape_str(x));
  auto strides = n.attr_ints("strides", std::vector<int64_t>(sp, 1));
  auto dil = n.attr_ints("dilations", std::vector<int64_t>(sp, 1));
  auto pads = n.attr_ints("pads", std::vector<int64_t>(2 * sp, 0));
  if (strides.size() != sp || dil.size() != sp || pads.size() != 2 * sp)
    bad("strides, dilations or pads do not match " + std::to_string(sp) + " spatial dims");
  for (auto v : strides)
    if (v <= 0) bad("a stride of " + std::to_string(v));
  for (auto v : dil)
    if (v <= 0) bad("a dilation of " + std::to_string(v));
  for (auto v : pads)
    if (v < 0) unsupported("negative pads");
  std::string ap = n.attr_string("auto_pad", "NOTSET");
  if (ap == "VALID") {
    std::fill(pads.begin(), pads.end(), 0);
  } else if (ap == "SAME_UPPER" || ap == "SAME_LOWER") {
    for (size_t i = 0; i < sp; ++i) {
      int64_t in = x[2 + i], out = (in + strides[i] - 1) / strides[i];
      int64_t total = std::max<int64_t>(0, (out - 1) * strides[i] + (kernel[i] - 1) * dil[i] + 1 - in);
      pads[i] = ap == "SAME_UPPER" ? total / 2 : total - total / 2;
      pads[i + sp] = total - pads[i];
    }
  } else if (ap != "NOTSET") {
    bad("auto_pad '" + ap + "' is not valid");
  }
  Window w;
  if (sp == 2) {
    w = {u32(kernel[0], "kernel"), u32(kernel[1], "kernel"), u32(strides[0], "stride"), u32(strides[1], "stride"),
         u32(dil[0], "dilation"),  u32(dil[1], "dilation"),  u32(pads[0], "pad"),       u32(pads[1], "pad"),
         u32(pads[2], "pad"),      u32(pads[3], "pad")};
  } else {
    w = {1, u32(kernel[0], "kernel"), 1, u32(strides[0], "stride"), 1, u32(dil[0], "dilation"),
         0, u32(pads[0], "pad"),      0, u32(pads[1], "pad")};
  }
  return w;
}

Shape spatial_out(const Shape& x, int64_t c, uint32_t oh, uint32_t ow) {
  Shape out = {x[0], c};
  if (x.size() == 4) out.push_back(oh);
  out.push_back(ow);
  return out;
}

NodePlan plan_conv(const Graph&, const Node& n, const std::vector<In>& in) {
  const In& x = float_input(in, 0, "X");
  const In& wi = float_input(in, 1, "W");
  const Shape& wshape = wi.shape;
  if (x.shape.size() != 3 && x.shape.size() != 4)
    unsupported("Conv of a rank-" + std::to_string(x.shape.size()) + " input (1-D and 2-D are supported)");
  if (wshape.size() != x.shape.size())
    bad("weights " + shape_str(wshape) + " do not match input " + shape_str(x.shape));
  std::vector<int64_t> kernel(wshape.begin() + 2, wshape.end());
  if (n.has("kernel_shape") && n.attr_ints("kernel_shape") != kernel)
    bad("kernel_shape " + shape_str(n.attr_ints("kernel_shape")) + " differs from the weights " + shape_str(wshape));
  Window win = window(n, x.shape, kernel);
  int64_t groups = n.attr_int("group", 1);
  if (groups <= 0) bad("group " + std::to_string(groups));
  Conv2dDims d;
  d.n = u32(x.shape[0], "N");
  d.c_in = u32(x.shape[1], "C");
  d.h = x.shape.size() == 4 ? u32(x.shape[2], "H") : 1;
  d.w = u32(x.shape.back(), "W");
  d.c_out = u32(wshape[0], "M");
  d.kh = win.kh, d.kw = win.kw, d.stride_h = win.sh, d.stride_w = win.sw, d.dil_h = win.dh, d.dil_w = win.dw;
  d.groups = u32(groups, "group");
  d.pad_top = win.pt, d.pad_left = win.pl, d.pad_bottom = win.pb, d.pad_right = win.pr;
  if (d.c_in % d.groups || d.c_out % d.groups || int64_t(d.c_in / d.groups) != wshape[1])
    bad("weights " + shape_str(wshape) + " do not fit " + std::to_string(d.c_in) + " input channels in " +
        std::to_string(groups) + " groups");
  try {
    check(d);
  } catch (const Error& e) {
    bad(e.what());
  }
  bool has_bias = in.size() > 2 && in[2].present;
  if (has_bias && element_count(float_input(in, 2, "B").shape) != int64_t(d.c_out))
    bad("bias has " + std::to_string(element_count(in[2].shape)) + " values for " + std::to_string(d.c_out) +
        " channels");
  Shape out = spatial_out(x.shape, d.c_out, d.out_h(), d.out_w());
  ConvEpilogue ep = n.fused;
  ep.bias = has_bias;
  NodePlan p;
  p.outs.push_back(fresh(out));
  if (d.y_elements() == 0) return p;
  // The step reads x, then the weights and bias given at run time, then the residual.
  auto conv_step = [&](const ConvEpilogue& e, Ref dst) {
    NodeStep s{
        ConvStep{d, e, in[1].constant, has_bias ? in[2].constant : nullptr}, {Ref::in(0)}, std::move(dst), d.flops()};
    auto& cs = std::get<ConvStep>(s.op);
    if (!cs.weights) cs.w_in = int(s.in.size()), s.in.push_back(Ref::in(1));
    if (has_bias && !cs.bias) cs.b_in = int(s.in.size()), s.in.push_back(Ref::in(2));
    if (e.residual) cs.res_in = int(s.in.size()), s.in.push_back(Ref::in(3));
    return s;
  };
  bool residual_fits = !ep.residual || (in.size() > 3 && in[3].present && in[3].shape == out && !in[3].is_int());
  if (residual_fits) {
    p.steps.push_back(conv_step(ep, Ref::out(0)));
    return p;
  }
  // A residual that broadcasts: the Add (and the activation after it) as steps of their own.
  const In& res = input(in, 3, "residual");
  Shape sum = broadcast_shape(out, res.shape);
  if (sum != out) bad("the residual Add changes the shape " + shape_str(out) + " to " + shape_str(sum));
  ConvEpilogue plain = ep;
  plain.residual = false;
  plain.act = Activation::None;
  p.temps.push_back(uint64_t(element_count(out)));
  p.steps.push_back(conv_step(plain, Ref::temp(0)));
  bool act = ep.act != Activation::None;
  if (act) p.temps.push_back(uint64_t(element_count(out)));
  p.steps.push_back(
      binary_step(BinaryOp::Add, out, res.shape, Ref::temp(0), Ref::in(3), act ? Ref::temp(1) : Ref::out(0)));
  if (act) {
    UnaryParams up = ep.act == Activation::Relu    ? UnaryParams{UnaryOp::Relu}
                     : ep.act == Activation::Relu6 ? UnaryParams{UnaryOp::Clip, 0.f, 6.f}
                                                   : UnaryParams{UnaryOp::Clip, ep.clip_min, ep.clip_max};
    p.steps.push_back(
        {UnaryStep{up, uint64_t(element_count(out))}, {Ref::temp(1)}, Ref::out(0), double(element_count(out))});
  }
  return p;
}

NodePlan plan_pool(const Graph& g, const Node& n, const std::vector<In>& in) {
  const In& x = float_input(in, 0, "X");
  if (x.shape.size() != 3 && x.shape.size() != 4)
    unsupported(n.op + " of a rank-" + std::to_string(x.shape.size()) + " input (1-D and 2-D are supported)");
  if (n.outputs.size() > 1 && !n.outputs[1].empty()) unsupported("the Indices output of MaxPool is not supported");
  if (n.attr_int("storage_order", 0) != 0) unsupported("storage_order 1");
  bool ceil_mode = g.opset >= 10 && n.attr_int("ceil_mode", 0) != 0;
  Window win = window(n, x.shape, n.attr_ints("kernel_shape"));
  Pool2dDims d;
  d.n = u32(x.shape[0], "N");
  d.c = u32(x.shape[1], "C");
  d.h = x.shape.size() == 4 ? u32(x.shape[2], "H") : 1;
  d.w = u32(x.shape.back(), "W");
  d.kh = win.kh, d.kw = win.kw, d.stride_h = win.sh, d.stride_w = win.sw, d.dil_h = win.dh, d.dil_w = win.dw;
  d.pad_top = win.pt, d.pad_left = win.pl, d.pad_bottom = win.pb, d.pad_right = win.pr;
  d.ceil_mode = ceil_mode;
  d.count_include_pad = n.attr_int("count_include_pad", 0) != 0;
  if (n.op == "AveragePool" && (d.dil_h != 1 || d.dil_w != 1)) unsupported("dilated AveragePool");
  try {
    check(d);
  } catch (const Error& e) {
    bad(e.what());
  }
  Shape out = spatial_out(x.shape, d.c, d.out_h(), d.out_w());
  NodePlan p;
  p.outs.push_back(fresh(out));
  if (d.y_elements())
    p.steps.push_back({PoolStep{d, n.op == "MaxPool" ? PoolKind::Max : PoolKind::Average},
                       {Ref::in(0)},
                       Ref::out(0),
                       double(d.y_elements()) * d.kh * d.kw});
  return p;
}

// --- ConvTranspose --------------------------------------------------------------------------------

// ConvTranspose as a convolution: x with stride - 1 zeros inserted between its elements and
// padded by (k_eff - 1 - pad) on each side (output_padding more at the end; negative amounts
// crop), then a stride-1 convolution with the same dilation and groups whose weights are the
// transposed ones, flipped ([C_in][C_out/g][kh][kw] -> [C_out][C_in/g][kh][kw]). The convolution
// is the library's ladder (prepared once; bias fused); the zero insertion is one pad kernel.
NodePlan plan_conv_transpose(const Graph&, const Node& n, const std::vector<In>& in) {
  const In& x = float_input(in, 0, "X");
  const HostTensor& wt = const_input(in, 1, "W");
  if (wt.integer) bad("W must be a float tensor");
  size_t r = x.shape.size();
  if (r != 3 && r != 4)
    unsupported("ConvTranspose of a rank-" + std::to_string(r) + " input (1-D and 2-D are supported)");
  if (wt.shape.size() != r) bad("W " + shape_str(wt.shape) + " does not match X " + shape_str(x.shape));
  size_t sp = r - 2;
  int64_t groups = n.attr_int("group", 1);
  int64_t cin = x.shape[1];
  if (groups <= 0 || cin % groups || wt.shape[0] != cin)
    bad("W " + shape_str(wt.shape) + " does not fit " + std::to_string(cin) + " input channels in " +
        std::to_string(groups) + " groups");
  int64_t cout_g = wt.shape[1], cout = cout_g * groups, cin_g = cin / groups;
  std::vector<int64_t> k(wt.shape.begin() + 2, wt.shape.end());
  if (n.has("kernel_shape") && n.attr_ints("kernel_shape") != k) bad("kernel_shape differs from W");
  auto attr = [&](const char* name, int64_t fill, size_t count) {
    std::vector<int64_t> v = n.attr_ints(name, std::vector<int64_t>(count, fill));
    if (v.size() != count)
      bad(std::string(name) + " has " + std::to_string(v.size()) + " values, " + std::to_string(count) + " expected");
    return v;
  };
  std::vector<int64_t> stride = attr("strides", 1, sp), dil = attr("dilations", 1, sp), pads = attr("pads", 0, 2 * sp),
                       opad = attr("output_padding", 0, sp);
  for (size_t i = 0; i < sp; ++i) {
    if (stride[i] <= 0 || dil[i] <= 0 || k[i] <= 0) bad("a stride, dilation or kernel extent below 1");
    if (opad[i] < 0) bad("a negative output_padding");
  }
  std::string ap = n.attr_string("auto_pad", "NOTSET");
  std::vector<int64_t> out_shape = n.attr_ints("output_shape");
  if (out_shape.size() > sp) out_shape.erase(out_shape.begin(), out_shape.end() - long(sp));  // [N, C, ...] given
  if (ap == "SAME_UPPER" || ap == "SAME_LOWER") {
    if (out_shape.empty())
      for (size_t i = 0; i < sp; ++i) out_shape.push_back(x.shape[2 + i] * stride[i]);
  } else if (ap == "VALID") {
    std::fill(pads.begin(), pads.end(), 0);
  } else if (ap != "NOTSET") {
    bad("auto_pad '" + ap + "' is not valid");
  }
  if (!out_shape.empty()) {
    if (out_shape.size() != sp) bad("output_shape " + shape_str(out_shape) + " does not match the spatial dims");
    for (size_t i = 0; i < sp; ++i) {
      int64_t total = stride[i] * (x.shape[2 + i] - 1) + opad[i] + (k[i] - 1) * dil[i] + 1 - out_shape[i];
      int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);  // floor, as ONNX's reference (Python //)
      pads[i] = ap == "SAME_UPPER" ? half : total - half;
      pads[i + sp] = total - pads[i];
    }
  }
  Shape out = {x.shape[0], cout};
  std::vector<int64_t> zbegin(sp), zlen(sp);
  for (size_t i = 0; i < sp; ++i) {
    int64_t ke = (k[i] - 1) * dil[i] + 1;
    int64_t o = stride[i] * (x.shape[2 + i] - 1) + opad[i] + ke - pads[i] - pads[i + sp];
    if (o <= 0) bad("the output would be empty along spatial dim " + std::to_string(i));
    out.push_back(o);
    zbegin[i] = ke - 1 - pads[i];
    zlen[i] = o + ke - 1;  // the zero-inserted, padded input the stride-1 convolution reads
  }
  bool has_bias = in.size() > 2 && in[2].present;
  HostTensorPtr bias;
  if (has_bias) {
    const HostTensor& b = const_input(in, 2, "B");
    if (b.integer || b.numel() != cout)
      bad("B has " + std::to_string(b.numel()) + " values for " + std::to_string(cout) + " channels");
    bias = in[2].constant;
  }
  NodePlan p;
  p.outs.push_back(fresh(out));
  if (element_count(out) == 0) return p;
  if (element_count(x.shape) == 0) bad("X is empty");
  // Weights: transposed per group and flipped.
  int64_t taps = element_count(k);
  std::vector<float> w(size_t(cout * cin_g * taps));
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t oc = 0; oc < cout_g; ++oc)
      for (int64_t ic = 0; ic < cin_g; ++ic)
        for (int64_t t = 0; t < taps; ++t)
          w[size_t(((g * cout_g + oc) * cin_g + ic) * taps + t)] =
              wt.f[size_t(((g * cin_g + ic) * cout_g + oc) * taps + (taps - 1 - t))];
  PadDims z;
  z.rank = uint32_t(r);
  for (size_t i = 0; i < r; ++i) {
    bool spatial = i >= 2;
    z.in_shape[i] = u32(x.shape[i], "extent");
    z.out_shape[i] = spatial ? u32(zlen[i - 2], "padded extent") : uint32_t(x.shape[i]);
    z.begin[i] = spatial ? zbegin[i - 2] : 0;
    z.stride[i] = spatial ? u32(stride[i - 2], "stride") : 1;
  }
  Conv2dDims d;
  d.n = u32(x.shape[0], "N");
  d.c_in = u32(cin, "C");
  d.h = r == 4 ? z.out_shape[2] : 1;
  d.w = z.out_shape[r - 1];
  d.c_out = u32(cout, "M");
  d.kh = r == 4 ? u32(k[0], "kernel") : 1;
  d.kw = u32(k[sp - 1], "kernel");
  d.dil_h = r == 4 ? u32(dil[0], "dilation") : 1;
  d.dil_w = u32(dil[sp - 1], "dilation");
  d.groups = u32(groups, "group");
  try {
    check(d);
  } catch (const Error& e) {
    bad(e.what());
  }
  ConvEpilogue ep = n.fused;  // an activation after it (cnn/fuse.h)
  ep.bias = has_bias;
  ep.residual = false;
  p.temps.push_back(z.out_count());
  p.steps.push_back({PadStep{z}, {Ref::in(0)}, Ref::temp(0), 0});
  p.steps.push_back({ConvStep{d, ep, floats({cout, cin_g, r == 4 ? k[0] : 1, k[sp - 1]}, std::move(w)), bias},
                     {Ref::temp(0)},
                     Ref::out(0),
                     d.flops()});
  return p;
}

}  // namespace

void add_conv_planners(PlannerTable& t) {
  t.emplace("AveragePool", plan_pool);
  t.emplace("Conv", plan_conv);
  t.emplace("ConvTranspose", plan_conv_transpose);
  t.emplace("GlobalAveragePool", plan_global_pool);
  t.emplace("GlobalMaxPool", plan_global_pool);
  t.emplace("MaxPool", plan_pool);
}

}  // namespace wgc::cnn::detail
