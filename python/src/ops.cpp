// The compute ops on NumPy arrays (host memory: the C++ host overloads, with their CPU fallback
// below each op's threshold) and on wgc.Tensor (device memory: no copies through the host).
// Argument checks live here, with messages that name the Python function and argument.
#include "common.h"

#include "cpu/stencil.h"
#include "ops/conv.h"
#include "ops/map.h"
#include "ops/matmul.h"
#include "ops/reduce.h"
#include "ops/stencil.h"
#include "util/error.h"

#include <cmath>
#include <cstdint>
#include <limits>

namespace wgc::python {
namespace {

// device="auto" | "gpu" | "cpu": where a host-memory op runs (auto: the op's threshold).
enum class Where { Auto, Gpu, Cpu };

Where parse_where(const std::string& s, const char* fn) {
  if (s == "auto") return Where::Auto;
  if (s == "gpu") return Where::Gpu;
  if (s == "cpu") return Where::Cpu;
  throw py::value_error(std::string(fn) + ": device must be 'auto', 'gpu' or 'cpu', got '" + s + "'");
}

Policy policy_of(Where w) {
  switch (w) {
    case Where::Auto: return {};
    case Where::Gpu: return {0};
    case Where::Cpu: return {std::numeric_limits<int64_t>::max()};
  }
  return {};
}

std::vector<py::ssize_t> shape_of(const py::array& a) { return {a.shape(), a.shape() + a.ndim()}; }

std::string shape_str(const py::array& a) { return py::repr(py::tuple(py::cast(shape_of(a)))).cast<std::string>(); }

std::string shape_str(const Tensor& t) { return py::repr(shape_tuple(t.shape())).cast<std::string>(); }

// wgc::Error from an argument check becomes ValueError.
template <class F>
void check_args(const char* fn, F&& f) {
  try {
    f();
  } catch (const Error& e) {
    std::string_view what = e.what();
    if (what.starts_with("wgc: ")) what.remove_prefix(5);
    throw py::value_error(std::string(fn) + ": " + std::string(what));
  }
}

void require_f32(const PyTensor& t, const char* what) {
  if (t.tensor.dtype() != DType::F32)
    throw py::type_error(std::string(what) + " must be float32, got " + dtype_name(t.tensor.dtype()));
}

void same_context(const PyTensor& a, const PyTensor& b, const char* fn) {
  if (a.ctx != b.ctx) throw py::value_error(std::string(fn) + ": the tensors belong to different contexts");
}

TensorPtr wrap(const ContextPtr& ctx, Tensor t) { return std::make_shared<PyTensor>(ctx, std::move(t)); }

uint32_t dim32(int64_t v, const char* fn, const char* what) {
  if (v < 1 || v > int64_t(UINT32_MAX))
    throw py::value_error(std::string(fn) + ": " + what + " " + std::to_string(v) + " is out of range");
  return uint32_t(v);
}

// ---- matmul -------------------------------------------------------------------------------------

MatmulDims matmul_dims(const std::vector<int64_t>& a, const std::vector<int64_t>& b, bool trans_b,
                       const std::string& sa, const std::string& sb) {
  constexpr const char* fn = "wgc.matmul";
  if (a.size() != 2 || b.size() != 2)
    throw py::value_error(std::string(fn) + ": a and b must be 2-D, got shapes " + sa + " and " + sb);
  int64_t k_b = trans_b ? b[1] : b[0];
  if (a[1] != k_b)
    throw py::value_error(std::string(fn) + ": a " + sa + " and b " + sb + (trans_b ? " (transposed)" : "") +
                          " do not chain (inner dimensions " + std::to_string(a[1]) + " and " + std::to_string(k_b) +
                          ")");
  MatmulDims d;
  d.m = dim32(a[0], fn, "rows of a");
  d.k = dim32(a[1], fn, "columns of a");
  d.n = dim32(trans_b ? b[0] : b[1], fn, "columns of the product");
  d.trans_b = trans_b;
  return d;
}

py::array matmul_host(const ContextPtr& ctx, const py::object& ao, const py::object& bo, bool trans_b,
                      const std::string& device) {
  const Policy policy = policy_of(parse_where(device, "wgc.matmul"));
  auto a = float_array(ao, "wgc.matmul: a"), b = float_array(bo, "wgc.matmul: b");
  std::vector<int64_t> sa(a.shape(), a.shape() + a.ndim()), sb(b.shape(), b.shape() + b.ndim());
  MatmulDims d = matmul_dims(sa, sb, trans_b, shape_str(a), shape_str(b));
  std::vector<float> c;
  {
    DeviceLock lock(*ctx);
    c = matmul(ctx->ctx(), span_of(a), span_of(b), d, policy);
  }
  return to_numpy(std::move(c), {py::ssize_t(d.m), py::ssize_t(d.n)});
}

TensorPtr matmul_tensor(const TensorPtr& a, const TensorPtr& b, bool trans_b) {
  require_f32(*a, "wgc.matmul: a");
  require_f32(*b, "wgc.matmul: b");
  same_context(*a, *b, "wgc.matmul");
  matmul_dims(a->tensor.shape(), b->tensor.shape(), trans_b, shape_str(a->tensor), shape_str(b->tensor));
  Tensor c;
  {
    DeviceLock lock(*a->ctx);
    c = matmul(a->ctx->ctx(), a->tensor, b->tensor, trans_b);
  }
  return wrap(a->ctx, std::move(c));
}

// ---- elementwise --------------------------------------------------------------------------------

void same_shape(const std::string& sa, const std::string& sb, bool equal, const char* fn) {
  if (!equal) throw py::value_error(std::string(fn) + ": the operands' shapes differ: " + sa + " and " + sb);
}

py::array map_host(const ContextPtr& ctx, const std::string& expr, const py::object& xo, const py::object& yo,
                   const std::string& device) {
  constexpr const char* fn = "wgc.map";
  Policy p = policy_of(parse_where(device, fn));
  check_args(fn, [&] { check_map_expression(expr); });
  auto x = float_array(xo, "wgc.map: x");
  std::vector<float> out;
  if (yo.is_none()) {
    DeviceLock lock(*ctx);
    out = map(ctx->ctx(), span_of(x), expr, p);
  } else {
    auto y = float_array(yo, "wgc.map: y");
    same_shape(shape_str(x), shape_str(y), shape_of(x) == shape_of(y), fn);
    DeviceLock lock(*ctx);
    out = map(ctx->ctx(), span_of(x), span_of(y), expr, p);
  }
  return to_numpy(std::move(out), shape_of(x));
}

TensorPtr map_tensor(const std::string& expr, const TensorPtr& x, const std::optional<TensorPtr>& y) {
  constexpr const char* fn = "wgc.map";
  check_args(fn, [&] { check_map_expression(expr); });
  require_f32(*x, "wgc.map: x");
  Tensor out;
  if (!y) {
    DeviceLock lock(*x->ctx);
    out = map(x->ctx->ctx(), x->tensor, expr);
  } else {
    require_f32(**y, "wgc.map: y");
    same_context(*x, **y, fn);
    same_shape(shape_str(x->tensor), shape_str((*y)->tensor), x->tensor.shape() == (*y)->tensor.shape(), fn);
    DeviceLock lock(*x->ctx);
    out = map(x->ctx->ctx(), x->tensor, (*y)->tensor, expr);
  }
  return wrap(x->ctx, out.view(x->tensor.shape()));
}

py::array add_host(const ContextPtr& ctx, const py::object& ao, const py::object& bo, const std::string& device) {
  constexpr const char* fn = "wgc.add";
  Policy p = policy_of(parse_where(device, fn));
  auto a = float_array(ao, "wgc.add: a"), b = float_array(bo, "wgc.add: b");
  same_shape(shape_str(a), shape_str(b), shape_of(a) == shape_of(b), fn);
  std::vector<float> out;
  {
    DeviceLock lock(*ctx);
    out = add(ctx->ctx(), span_of(a), span_of(b), p);
  }
  return to_numpy(std::move(out), shape_of(a));
}

TensorPtr add_tensor(const TensorPtr& a, const TensorPtr& b) {
  constexpr const char* fn = "wgc.add";
  require_f32(*a, "wgc.add: a");
  require_f32(*b, "wgc.add: b");
  same_context(*a, *b, fn);
  same_shape(shape_str(a->tensor), shape_str(b->tensor), a->tensor.shape() == b->tensor.shape(), fn);
  Tensor out;
  {
    DeviceLock lock(*a->ctx);
    out = add(a->ctx->ctx(), a->tensor, b->tensor);
  }
  return wrap(a->ctx, out.view(a->tensor.shape()));
}

// ---- reductions ---------------------------------------------------------------------------------

ReduceOp reduce_op(const std::string& op) {
  if (op == "sum") return ReduceOp::Sum;
  if (op == "max") return ReduceOp::Max;
  if (op == "min") return ReduceOp::Min;
  if (op == "mean") return ReduceOp::Mean;
  throw py::value_error("wgc: no reduction '" + op + "' (sum, max, min, mean)");
}

void nonempty_for(ReduceOp op, int64_t n) {
  if (n == 0 && op != ReduceOp::Sum)
    throw py::value_error("wgc." + std::string(to_string(op)) + ": the array is empty (only sum has a value there)");
}

float reduce_host(const ContextPtr& ctx, const std::string& name, const py::object& xo, const std::string& device) {
  ReduceOp op = reduce_op(name);
  std::string fn = "wgc." + name;
  Policy p = policy_of(parse_where(device, fn.c_str()));
  auto x = float_array(xo, fn + ": x");
  nonempty_for(op, x.size());
  DeviceLock lock(*ctx);
  switch (op) {
    case ReduceOp::Sum: return sum(ctx->ctx(), span_of(x), p);
    case ReduceOp::Max: return max(ctx->ctx(), span_of(x), p);
    case ReduceOp::Min: return min(ctx->ctx(), span_of(x), p);
    case ReduceOp::Mean: return mean(ctx->ctx(), span_of(x), p);
  }
  return 0;
}

float reduce_tensor(const std::string& name, const TensorPtr& x) {
  ReduceOp op = reduce_op(name);
  require_f32(*x, ("wgc." + name + ": x").c_str());
  DeviceLock lock(*x->ctx);
  return reduce_value(x->ctx->ctx(), x->tensor, op);
}

// ---- stencils -----------------------------------------------------------------------------------

struct ImageDims {
  int h = 0, w = 0, c = 0;
};

ImageDims image_dims(const std::vector<int64_t>& s, const std::string& shape, const char* fn) {
  if (s.size() != 2 && s.size() != 3)
    throw py::value_error(std::string(fn) + ": an image is (height, width) or (height, width, channels), got shape " +
                          shape);
  int64_t c = s.size() == 3 ? s[2] : 1;
  if (s[0] < 1 || s[1] < 1 || c < 1 || c > 4 || s[0] * s[1] > kMaxImagePixels)
    throw py::value_error(std::string(fn) + ": bad image shape " + shape + " (1..4 channels, at least 1x1, at most " +
                          std::to_string(kMaxImagePixels) + " pixels)");
  return {int(s[0]), int(s[1]), int(c)};
}

StencilOp stencil_op(const std::string& op) {
  if (op == "sobel") return StencilOp::Sobel;
  if (op == "blur") return StencilOp::GaussianBlur;
  throw py::value_error("wgc: no stencil '" + op + "' (sobel, blur)");
}

py::array stencil_host(const ContextPtr& ctx, const std::string& name, const py::object& imgo, float sigma,
                       const std::string& device) {
  StencilOp op = stencil_op(name);
  std::string fn = "wgc." + name;
  const Policy policy = policy_of(parse_where(device, fn.c_str()));
  auto img = float_array(imgo, fn + ": image");
  std::vector<int64_t> s(img.shape(), img.shape() + img.ndim());
  ImageDims d = image_dims(s, shape_str(img), fn.c_str());
  if (op == StencilOp::GaussianBlur) check_args(fn.c_str(), [&] { cpu::gaussian_radius(sigma); });
  std::vector<float> out;
  {
    DeviceLock lock(*ctx);
    out = op == StencilOp::Sobel ? sobel(ctx->ctx(), span_of(img), d.w, d.h, d.c, policy)
                                 : gaussian_blur(ctx->ctx(), span_of(img), d.w, d.h, d.c, sigma, policy);
  }
  return to_numpy(std::move(out), shape_of(img));
}

TensorPtr stencil_tensor(const std::string& name, const TensorPtr& img, float sigma) {
  StencilOp op = stencil_op(name);
  std::string fn = "wgc." + name;
  require_f32(*img, (fn + ": image").c_str());
  ImageDims d = image_dims(img->tensor.shape(), shape_str(img->tensor), fn.c_str());
  if (op == StencilOp::GaussianBlur) check_args(fn.c_str(), [&] { cpu::gaussian_radius(sigma); });
  Tensor flat = img->tensor.view({d.h, d.w, d.c});
  Tensor out;
  {
    DeviceLock lock(*img->ctx);
    out = op == StencilOp::Sobel ? sobel(img->ctx->ctx(), flat, d.w, d.h, d.c)
                                 : gaussian_blur(img->ctx->ctx(), flat, d.w, d.h, d.c, sigma);
  }
  return wrap(img->ctx, out.view(img->tensor.shape()));
}

// ---- convolution --------------------------------------------------------------------------------

struct ConvArgs {
  Conv2dDims dims;
  ConvEpilogue ep;
};

// x [n, c_in, h, w], w [c_out, c_in / groups, kh, kw]; stride/dilation (h, w), padding (top, left,
// bottom, right) as the Python layer normalised them.
ConvArgs conv_args(const std::vector<int64_t>& xs, const std::vector<int64_t>& ws, const std::string& xstr,
                   const std::string& wstr, std::array<int64_t, 2> stride, std::array<int64_t, 4> pad,
                   std::array<int64_t, 2> dil, int64_t groups, bool bias, bool residual, const std::string& act,
                   float clip_min, float clip_max) {
  constexpr const char* fn = "wgc.conv2d";
  if (xs.size() != 4) throw py::value_error(std::string(fn) + ": x must be [n, c_in, h, w], got shape " + xstr);
  if (ws.size() != 4)
    throw py::value_error(std::string(fn) + ": w must be [c_out, c_in / groups, kh, kw], got shape " + wstr);
  for (int64_t v : stride)
    if (v < 1) throw py::value_error(std::string(fn) + ": stride must be >= 1");
  for (int64_t v : dil)
    if (v < 1) throw py::value_error(std::string(fn) + ": dilation must be >= 1");
  for (int64_t v : pad)
    if (v < 0 || v > int64_t(UINT32_MAX)) throw py::value_error(std::string(fn) + ": padding must be >= 0");
  ConvArgs a;
  Conv2dDims& d = a.dims;
  d.n = dim32(xs[0], fn, "batch");
  d.c_in = dim32(xs[1], fn, "input channels");
  d.h = dim32(xs[2], fn, "height");
  d.w = dim32(xs[3], fn, "width");
  d.c_out = dim32(ws[0], fn, "output channels");
  d.kh = dim32(ws[2], fn, "kernel height");
  d.kw = dim32(ws[3], fn, "kernel width");
  d.groups = dim32(groups, fn, "groups");
  d.stride_h = uint32_t(stride[0]);
  d.stride_w = uint32_t(stride[1]);
  d.dil_h = uint32_t(dil[0]);
  d.dil_w = uint32_t(dil[1]);
  d.pad_top = uint32_t(pad[0]);
  d.pad_left = uint32_t(pad[1]);
  d.pad_bottom = uint32_t(pad[2]);
  d.pad_right = uint32_t(pad[3]);
  if (d.c_in % d.groups != 0 || ws[1] != int64_t(d.c_in / d.groups))
    throw py::value_error(std::string(fn) + ": w " + wstr + " does not fit x " + xstr +
                          " with groups=" + std::to_string(groups) + " (w's second dimension must be c_in / groups)");
  check_args(fn, [&] { check(d); });
  a.ep.bias = bias;
  a.ep.residual = residual;
  if (act == "none") {
    a.ep.act = Activation::None;
  } else if (act == "relu") {
    a.ep.act = Activation::Relu;
  } else if (act == "relu6") {
    a.ep.act = Activation::Relu6;
  } else if (act == "clip") {
    a.ep.act = Activation::Clip;
    if (!(clip_min <= clip_max)) throw py::value_error(std::string(fn) + ": clip_min must be <= clip_max");
  } else {
    throw py::value_error(std::string(fn) + ": activation must be None, 'relu', 'relu6' or 'clip', got '" + act + "'");
  }
  a.ep.clip_min = clip_min;
  a.ep.clip_max = clip_max;
  return a;
}

std::vector<py::ssize_t> conv_out_shape(const Conv2dDims& d) {
  return {py::ssize_t(d.n), py::ssize_t(d.c_out), py::ssize_t(d.out_h()), py::ssize_t(d.out_w())};
}

std::string out_shape_str(const Conv2dDims& d) {
  return py::repr(py::tuple(py::cast(conv_out_shape(d)))).cast<std::string>();
}

py::array conv2d_host(const ContextPtr& ctx, const py::object& xo, const py::object& wo, const py::object& bo,
                      const py::object& ro, std::array<int64_t, 2> stride, std::array<int64_t, 4> pad,
                      std::array<int64_t, 2> dil, int64_t groups, const std::string& act, float clip_min,
                      float clip_max, const std::string& device) {
  constexpr const char* fn = "wgc.conv2d";
  Policy p = policy_of(parse_where(device, fn));
  auto x = float_array(xo, "wgc.conv2d: x"), w = float_array(wo, "wgc.conv2d: w");
  ConvArgs a = conv_args({x.shape(), x.shape() + x.ndim()}, {w.shape(), w.shape() + w.ndim()}, shape_str(x),
                         shape_str(w), stride, pad, dil, groups, !bo.is_none(), !ro.is_none(), act, clip_min, clip_max);
  py::array_t<float> b, r;
  if (!bo.is_none()) {
    b = float_array(bo, "wgc.conv2d: bias");
    if (b.ndim() != 1 || b.shape(0) != py::ssize_t(a.dims.c_out))
      throw py::value_error(std::string(fn) + ": bias must have shape (" + std::to_string(a.dims.c_out) + ",), got " +
                            shape_str(b));
  }
  if (!ro.is_none()) {
    r = float_array(ro, "wgc.conv2d: residual");
    if (shape_of(r) != conv_out_shape(a.dims))
      throw py::value_error(std::string(fn) + ": residual must have the output's shape " + out_shape_str(a.dims) +
                            ", got " + shape_str(r));
  }
  std::vector<float> y;
  {
    DeviceLock lock(*ctx);
    y = conv2d(ctx->ctx(), span_of(x), span_of(w), b ? span_of(b) : std::span<const float>{},
               r ? span_of(r) : std::span<const float>{}, a.dims, a.ep, p);
  }
  return to_numpy(std::move(y), conv_out_shape(a.dims));
}

TensorPtr conv2d_tensor(const TensorPtr& x, const TensorPtr& w, const std::optional<TensorPtr>& bias,
                        const std::optional<TensorPtr>& residual, std::array<int64_t, 2> stride,
                        std::array<int64_t, 4> pad, std::array<int64_t, 2> dil, int64_t groups, const std::string& act,
                        float clip_min, float clip_max) {
  constexpr const char* fn = "wgc.conv2d";
  require_f32(*x, "wgc.conv2d: x");
  require_f32(*w, "wgc.conv2d: w");
  same_context(*x, *w, fn);
  ConvArgs a = conv_args(x->tensor.shape(), w->tensor.shape(), shape_str(x->tensor), shape_str(w->tensor), stride, pad,
                         dil, groups, bias.has_value(), residual.has_value(), act, clip_min, clip_max);
  Tensor b, r;
  if (bias) {
    require_f32(**bias, "wgc.conv2d: bias");
    same_context(*x, **bias, fn);
    if ((*bias)->tensor.shape() != Shape{int64_t(a.dims.c_out)})
      throw py::value_error(std::string(fn) + ": bias must have shape (" + std::to_string(a.dims.c_out) + ",), got " +
                            shape_str((*bias)->tensor));
    b = (*bias)->tensor;
  }
  if (residual) {
    require_f32(**residual, "wgc.conv2d: residual");
    same_context(*x, **residual, fn);
    std::vector<py::ssize_t> rs((*residual)->tensor.shape().begin(), (*residual)->tensor.shape().end());
    if (rs != conv_out_shape(a.dims))
      throw py::value_error(std::string(fn) + ": residual must have the output's shape " + out_shape_str(a.dims) +
                            ", got " + shape_str((*residual)->tensor));
    r = (*residual)->tensor;
  }
  const Context& c = x->ctx->ctx();
  Tensor y;
  {
    DeviceLock lock(*x->ctx);
    y = make_tensor(c, {a.dims.n, a.dims.c_out, a.dims.out_h(), a.dims.out_w()});
    Batch batch(c);
    conv2d(batch, x->tensor, w->tensor, b, r, y, a.dims, a.ep);
    batch.run();
  }
  return wrap(x->ctx, std::move(y));
}

}  // namespace

void bind_ops(py::module_& m) {
  // Thin: the wgc package routes arrays and Tensors here and documents the functions.
  m.def("matmul_host", &matmul_host);
  m.def("matmul_tensor", &matmul_tensor);
  m.def("map_host", &map_host);
  m.def("map_tensor", &map_tensor);
  m.def("add_host", &add_host);
  m.def("add_tensor", &add_tensor);
  m.def("reduce_host", &reduce_host);
  m.def("reduce_tensor", &reduce_tensor);
  m.def("stencil_host", &stencil_host);
  m.def("stencil_tensor", &stencil_tensor);
  m.def("conv2d_host", &conv2d_host);
  m.def("conv2d_tensor", &conv2d_tensor);
}

}  // namespace wgc::python
