#include "ops/conv.h"

#include "cpu/conv.h"
#include "util/error.h"
#include "gpu/kernel.h"

#include <cstdlib>
#include <string>

namespace wgc {
namespace {

constexpr uint32_t kDirectWg = 256;  // direct.wgsl

using Constants = std::vector<std::pair<std::string, double>>;

// The tensors of one call; bias and residual are the caller's, or a dummy when unused.
struct Operands {
  Tensor x, w, bias, res, y;
};

Params conv_params(const Conv2dDims& d, const ConvEpilogue& ep, uint32_t aux0 = 0, uint32_t aux1 = 0, uint32_t aux2 = 0,
                   uint32_t aux3 = 0) {
  float lo = ep.clip_min, hi = ep.clip_max;
  if (ep.act == Activation::Relu6) lo = 0, hi = 6;
  return Params(d.n, d.c_in, d.h, d.w, d.c_out, d.out_h(), d.out_w(), d.groups, d.kh, d.kw, d.stride_h, d.stride_w,
                d.dil_h, d.dil_w, d.pad_top, d.pad_left, d.c_in / d.groups, d.c_out / d.groups, lo, hi, aux0, aux1,
                aux2, aux3);
}

Constants epilogue_constants(const ConvEpilogue& ep) {
  uint32_t act = ep.act == Activation::None ? 0 : ep.act == Activation::Relu ? 1 : 2;
  return {{"HAS_BIAS", ep.bias ? 1 : 0}, {"HAS_RESIDUAL", ep.residual ? 1 : 0}, {"ACT", act}};
}

Constants with(Constants c, const Constants& more) {
  c.insert(c.end(), more.begin(), more.end());
  return c;
}

void need(const Tensor& t, uint64_t elems, const char* name, const Conv2dDims& d) {
  if (!t) throw Error("wgc: conv2d " + d.str() + ": " + name + " is an empty tensor");
  if (t.dtype() != DType::F32)
    throw Error("wgc: conv2d " + d.str() + ": " + name + " must be f32, got " + std::string(to_string(t.dtype())));
  if (t.capacity() < elems * 4)
    throw Error("wgc: conv2d " + d.str() + ": " + name + " holds " + std::to_string(t.capacity() / 4) +
                " floats, needs " + std::to_string(elems));
}

Operands operands(const Context& ctx, const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& residual,
                  const Tensor& y, const Conv2dDims& d, const ConvEpilogue& ep) {
  check(d);
  need(x, d.x_elements(), "x", d);
  need(w, d.w_elements(), "the weights", d);
  need(y, d.y_elements(), "y", d);
  if (ep.bias) need(bias, d.c_out, "bias", d);
  if (ep.residual) need(residual, d.y_elements(), "residual", d);
  if (y.buffer() == x.buffer() || (ep.residual && y.buffer() == residual.buffer()))
    throw Error("wgc: conv2d " + d.str() + ": y must not share a buffer with x or the residual");
  Tensor dummy;
  if (!ep.bias || !ep.residual) dummy = make_tensor(ctx, {4});
  return {x, w, ep.bias ? bias : dummy, ep.residual ? residual : dummy, y};
}

Kernel kernel(const Context& ctx, const char* file, const ConvEpilogue& ep, const Constants& more = {}) {
  return compile(ctx, embedded_kernel(file, with(epilogue_constants(ep), more)));
}

void record_direct(Batch& b, const Operands& o, const Conv2dDims& d, const ConvEpilogue& ep) {
  const Context& ctx = b.context();
  b.dispatch(kernel(ctx, "conv/direct.wgsl", ep), {o.x, o.w, o.bias, o.res, o.y}, conv_params(d, ep),
             groups_1d(ctx, ceil_div(d.y_elements(), kDirectWg)));
}

// Parses WGC_CONV_TUNING ("igemm_bm=64,igemm_bn=128"); an unknown key or a bad value is an error
// naming it.
ConvTuning tuning_from_env() {
  ConvTuning t;
  const char* env = std::getenv("WGC_CONV_TUNING");
  if (!env || !*env) return t;
  std::pair<const char*, uint32_t*> keys[] = {
      {"igemm_bm", &t.igemm_bm},    {"igemm_bn", &t.igemm_bn},   {"igemm_bk", &t.igemm_bk},
      {"wino_bm", &t.wino_bm},      {"wino_bn", &t.wino_bn},     {"wino_bk", &t.wino_bk},
      {"tiled_w", &t.tiled_w},      {"tiled_h", &t.tiled_h},     {"tiled_cout", &t.tiled_cout},
      {"tiled_cin", &t.tiled_cin},  {"dw_tile_w", &t.dw_tile_w}, {"dw_tile_h", &t.dw_tile_h},
      {"dw_threads", &t.dw_threads}};
  std::string s = env;
  size_t pos = 0;
  while (pos < s.size()) {
    size_t end = s.find(',', pos);
    if (end == std::string::npos) end = s.size();
    std::string item = s.substr(pos, end - pos);
    pos = end + 1;
    size_t eq = item.find('=');
    uint32_t* dst = nullptr;
    for (auto& [k, p] : keys)
      if (eq != std::string::npos && item.substr(0, eq) == k) dst = p;
    char* e = nullptr;
    unsigned long v = eq == std::string::npos ? 0 : std::strtoul(item.c_str() + eq + 1, &e, 10);
    if (!dst || !e || *e || v == 0 || v > 4096)
      throw Error("wgc: WGC_CONV_TUNING: '" + item + "' is not KEY=VALUE with a known key and 1 <= VALUE <= 4096");
    *dst = uint32_t(v);
  }
  return t;
}

}  // namespace

ConvTuning& conv2d_tuning() {
  static ConvTuning t = tuning_from_env();
  return t;
}

std::string_view to_string(Conv2dVersion v) {
  switch (v) {
    case Conv2dVersion::Auto: return "auto";
    case Conv2dVersion::Direct: return "direct";
    case Conv2dVersion::DirectTiled: return "direct-tiled";
    case Conv2dVersion::Im2colGemm: return "im2col-gemm";
    case Conv2dVersion::ImplicitGemm: return "implicit-gemm";
    case Conv2dVersion::Winograd2x2: return "winograd2x2";
    case Conv2dVersion::Depthwise: return "depthwise";
    case Conv2dVersion::Pointwise: return "pointwise";
  }
  return "?";
}

Conv2dVersion parse_conv2d_version(std::string_view name) {
  std::string all = "auto";
  if (name == "auto") return Conv2dVersion::Auto;
  for (Conv2dVersion v : kConv2dVersions) {
    if (name == to_string(v)) return v;
    all += ", " + std::string(to_string(v));
  }
  throw Error("wgc: conv2d: unknown version '" + std::string(name) + "' (" + all + ")");
}

bool supports(const Context& ctx, Conv2dVersion v, const Conv2dDims& d) {
  (void)ctx;
  (void)d;
  switch (v) {
    case Conv2dVersion::Auto:
    case Conv2dVersion::Direct: return true;
    default: return false;
  }
}

Conv2dVersion choose_conv2d(const Context& ctx, const Conv2dDims& d) {
  (void)ctx;
  (void)d;
  return Conv2dVersion::Direct;
}

void conv2d(Batch& batch, const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& residual, const Tensor& y,
            const Conv2dDims& d, const ConvEpilogue& ep, Conv2dVersion v) {
  const Context& ctx = batch.context();
  Operands o = operands(ctx, x, w, bias, residual, y, d, ep);
  if (v == Conv2dVersion::Auto) v = choose_conv2d(ctx, d);
  if (!supports(ctx, v, d))
    throw Error("wgc: conv2d " + d.str() + ": version " + std::string(to_string(v)) + " cannot run these dims");
  switch (v) {
    case Conv2dVersion::Direct: record_direct(batch, o, d, ep); return;
    default: break;
  }
  throw Error("wgc: conv2d: version " + std::string(to_string(v)) + " has no kernel");
}

PreparedConv prepare_conv2d(const Context& ctx, std::span<const float> weights, std::span<const float> bias,
                            const Conv2dDims& d, Conv2dVersion v) {
  check(d);
  if (weights.size() != d.w_elements())
    throw Error("wgc: prepare_conv2d " + d.str() + ": " + std::to_string(weights.size()) + " weights, needs " +
                std::to_string(d.w_elements()));
  if (!bias.empty() && bias.size() != d.c_out)
    throw Error("wgc: prepare_conv2d " + d.str() + ": " + std::to_string(bias.size()) + " bias values, needs " +
                std::to_string(d.c_out));
  if (v == Conv2dVersion::Auto) v = choose_conv2d(ctx, d);
  if (!supports(ctx, v, d))
    throw Error("wgc: prepare_conv2d " + d.str() + ": version " + std::string(to_string(v)) + " cannot run these dims");
  PreparedConv p{d, v, make_tensor(ctx, {int64_t(weights.size())}, weights), {}};
  if (!bias.empty()) p.bias = make_tensor(ctx, {int64_t(bias.size())}, bias);
  return p;
}

void conv2d(Batch& batch, const PreparedConv& layer, const Tensor& x, const Tensor& residual, const Tensor& y,
            const ConvEpilogue& ep) {
  ConvEpilogue e = ep;
  e.bias = bool(layer.bias);
  conv2d(batch, x, layer.weights, layer.bias, residual, y, layer.dims, e, layer.version);
}

std::vector<float> conv2d(const Context& ctx, std::span<const float> x, std::span<const float> w,
                          std::span<const float> bias, std::span<const float> residual, const Conv2dDims& d,
                          const ConvEpilogue& ep, Policy policy) {
  check(d);
  std::vector<float> y(d.y_elements());
  if (run_on_cpu(ctx, thresholds::kConv2d, policy, uint64_t(d.flops()))) {
    cpu::conv2d(x, w, bias, residual, y, d, ep);
    return y;
  }
  auto up = [&](std::span<const float> s, uint64_t want, const char* name) {
    if (s.size() < want)
      throw Error("wgc: conv2d " + d.str() + ": " + name + " holds " + std::to_string(s.size()) + " values, needs " +
                  std::to_string(want));
    return want ? make_tensor(ctx, {int64_t(want)}, s.first(want)) : Tensor{};
  };
  Tensor tx = up(x, d.x_elements(), "x"), tw = up(w, d.w_elements(), "the weights");
  Tensor tb = ep.bias ? up(bias, d.c_out, "bias") : Tensor{};
  Tensor tr = ep.residual ? up(residual, d.y_elements(), "residual") : Tensor{};
  Tensor ty = make_tensor(ctx, {int64_t(y.size())});
  Batch batch(ctx);
  conv2d(batch, tx, tw, tb, tr, ty, d, ep);
  batch.run();
  download(ctx, ty, std::as_writable_bytes(std::span(y)));
  return y;
}

}  // namespace wgc
