#include "ops/stencil.h"

#include "cpu/stencil.h"
#include "gpu/kernel.h"
#include "util/error.h"

#include <algorithm>
#include <string>

namespace wgc {
namespace {

using Shape2 = StencilShape;

bool is_vec4(StencilVersion v) { return v == StencilVersion::NaiveVec4 || v == StencilVersion::TiledVec4; }
bool is_tiled(StencilVersion v) { return v == StencilVersion::Tiled || v == StencilVersion::TiledVec4; }

std::string kernel_path(StencilOp op, StencilVersion v) {
  std::string p = op == StencilOp::Sobel ? "stencil/sobel_" : "stencil/blur_";
  p += is_tiled(v) ? "tiled" : "naive";
  if (is_vec4(v)) p += "_vec4";
  return p + ".wgsl";
}

void check_shape(const Context& ctx, const Shape2& s, const char* name) {
  const Limits& l = ctx.limits();
  if (s.x == 0 || s.y == 0 || s.per == 0 || s.x > l.max_compute_workgroup_size_x ||
      s.y > l.max_compute_workgroup_size_y || uint64_t(s.x) * s.y > l.max_compute_invocations_per_workgroup)
    throw LimitError("wgc: stencil config " + std::string(name) + " " + std::to_string(s.x) + "x" +
                     std::to_string(s.y) + "x" + std::to_string(s.per) +
                     " is outside the device's workgroup limits (maxComputeInvocationsPerWorkgroup " +
                     std::to_string(l.max_compute_invocations_per_workgroup) + ")");
}

uint64_t tiled_blur_bytes(const Shape2& s, bool horizontal, int r, uint64_t elem) {
  uint64_t halo = 2 * uint64_t(r);
  return horizontal ? (uint64_t(s.x) * s.per + halo) * s.y * elem
                    : uint64_t(s.x) * (uint64_t(s.y) * s.per + halo) * elem;
}

std::string shape_str(int w, int h, int c) {
  return std::to_string(w) + "x" + std::to_string(h) + "x" + std::to_string(c);
}

void check_args(const char* op, const Tensor& img, int w, int h, int c) {
  if (w <= 0 || h <= 0 || c < 1 || c > 4)
    throw Error(std::string("wgc: ") + op + ": bad image shape " + shape_str(w, h, c) + " (channels 1..4)");
  if (!img) throw Error(std::string("wgc: ") + op + ": empty input tensor");
  if (img.dtype() != DType::F32)
    throw Error(std::string("wgc: ") + op + ": input must be f32, got " + std::string(to_string(img.dtype())));
  uint64_t need = uint64_t(w) * uint64_t(h) * uint64_t(c);
  if (uint64_t(img.numel()) < need)
    throw Error(std::string("wgc: ") + op + ": input " + to_string(img.shape()) + " holds " +
                std::to_string(img.numel()) + " values, a " + shape_str(w, h, c) + " image needs " +
                std::to_string(need));
}

void check_out(const char* op, const char* what, const Tensor& t, int w, int h, int c) {
  uint64_t need = uint64_t(w) * uint64_t(h) * uint64_t(c);
  if (!t || t.dtype() != DType::F32 || uint64_t(t.numel()) < need)
    throw Error(std::string("wgc: ") + op + ": " + what + " must be an f32 tensor of at least " + std::to_string(need) +
                " values");
}

StencilVersion resolve(const Context& ctx, StencilVersion v, const StencilDims& d, const StencilConfig& cfg) {
  if (v == StencilVersion::Auto) return choose_stencil(ctx, d, cfg);
  std::string why;
  if (!supports(ctx, v, d, cfg, &why))
    throw Error("wgc: " + std::string(to_string(d.op)) + " version " + std::string(to_string(v)) + ": " + why);
  return v;
}

Params image_params(int w, int h, int c, bool vec4) { return Params(uint32_t(w), uint32_t(h), uint32_t(vec4 ? 1 : c)); }

void record_sobel_impl(const Context& ctx, Batch& b, const Tensor& img, const Tensor& out, int w, int h, int c,
                       StencilVersion v, const StencilConfig& cfg) {
  bool vec4 = is_vec4(v), tiled = is_tiled(v);
  const Shape2& s = !tiled ? cfg.sobel_naive : vec4 ? cfg.sobel_tiled_vec4 : cfg.sobel_tiled;
  check_shape(ctx, s, !tiled ? "sobel_naive" : vec4 ? "sobel_tiled_vec4" : "sobel_tiled");
  std::vector<std::pair<std::string, double>> k{{"WG_X", s.x}, {"WG_Y", s.y}};
  if (tiled) k.push_back({"ROWS", s.per});
  Kernel kern = compile(ctx, embedded_kernel(kernel_path(StencilOp::Sobel, v), k));
  Groups g{ceil_div(uint64_t(w), s.x), ceil_div(uint64_t(h), uint64_t(s.y) * (tiled ? s.per : 1)),
           uint32_t(vec4 ? 1 : c)};
  b.dispatch(kern, {img, out}, image_params(w, h, c, vec4), g);
}

void record_blur_impl(const Context& ctx, Batch& b, const Tensor& img, const Tensor& wts, const Tensor& tmp,
                      const Tensor& out, int w, int h, int c, int r, StencilVersion v, const StencilConfig& cfg) {
  bool vec4 = is_vec4(v), tiled = is_tiled(v);
  std::string path = kernel_path(StencilOp::GaussianBlur, v);
  Params prm(uint32_t(w), uint32_t(h), uint32_t(vec4 ? 1 : c), uint32_t(r));
  uint32_t z = uint32_t(vec4 ? 1 : c);
  if (!tiled) {
    const Shape2& s = cfg.blur_naive;
    check_shape(ctx, s, "blur_naive");
    std::vector<std::pair<std::string, double>> k{{"WG_X", s.x}, {"WG_Y", s.y}};
    Groups g{ceil_div(uint64_t(w), s.x), ceil_div(uint64_t(h), s.y), z};
    b.dispatch(compile(ctx, embedded_kernel(path, k, "horizontal")), {img, wts, tmp}, prm, g);
    b.dispatch(compile(ctx, embedded_kernel(path, k, "vertical")), {tmp, wts, out}, prm, g);
    return;
  }
  const Shape2& sh = vec4 ? cfg.blur_tiled_h_vec4 : cfg.blur_tiled_h;
  const Shape2& sv = vec4 ? cfg.blur_tiled_v_vec4 : cfg.blur_tiled_v;
  check_shape(ctx, sh, "blur_tiled_h");
  check_shape(ctx, sv, "blur_tiled_v");
  std::vector<std::pair<std::string, double>> kh{{"WG_X", sh.x}, {"WG_Y", sh.y}, {"PER", sh.per}, {"R", r}};
  std::vector<std::pair<std::string, double>> kv{{"WG_X", sv.x}, {"WG_Y", sv.y}, {"PER", sv.per}, {"R", r}};
  Groups gh{ceil_div(uint64_t(w), uint64_t(sh.x) * sh.per), ceil_div(uint64_t(h), sh.y), z};
  Groups gv{ceil_div(uint64_t(w), sv.x), ceil_div(uint64_t(h), uint64_t(sv.y) * sv.per), z};
  b.dispatch(compile(ctx, embedded_kernel(path, kh, "horizontal")), {img, wts, tmp}, prm, gh);
  b.dispatch(compile(ctx, embedded_kernel(path, kv, "vertical")), {tmp, wts, out}, prm, gv);
}

Tensor weights_tensor(const Context& ctx, float sigma) {
  auto w = cpu::gaussian_weights(sigma);
  return make_tensor(ctx, {int64_t(w.size())}, w);
}

}  // namespace

std::string_view to_string(StencilVersion v) {
  switch (v) {
    case StencilVersion::Auto: return "auto";
    case StencilVersion::Naive: return "naive";
    case StencilVersion::Tiled: return "tiled";
    case StencilVersion::NaiveVec4: return "naive_vec4";
    case StencilVersion::TiledVec4: return "tiled_vec4";
  }
  return "?";
}

std::string_view to_string(StencilOp op) { return op == StencilOp::Sobel ? "sobel" : "blur"; }

StencilVersion parse_stencil_version(std::string_view name) {
  for (auto v : {StencilVersion::Auto, StencilVersion::Naive, StencilVersion::Tiled, StencilVersion::NaiveVec4,
                 StencilVersion::TiledVec4})
    if (name == to_string(v)) return v;
  throw Error("wgc: unknown stencil version '" + std::string(name) + "' (auto, naive, tiled, naive_vec4, tiled_vec4)");
}

bool supports(const Context& ctx, StencilVersion v, const StencilDims& d, const StencilConfig& cfg, std::string* why) {
  auto no = [&](std::string m) {
    if (why) *why = std::move(m);
    return false;
  };
  if (d.channels < 1 || d.channels > 4) return no("channels must be 1..4, got " + std::to_string(d.channels));
  if (v == StencilVersion::Auto) return true;
  if (is_vec4(v) && d.channels != 4) return no("needs 4 channels (RGBA), got " + std::to_string(d.channels));
  uint64_t elem = is_vec4(v) ? 16 : 4, limit = ctx.limits().max_compute_workgroup_storage_size;
  if (d.op == StencilOp::Sobel && is_tiled(v)) {
    const Shape2& s = is_vec4(v) ? cfg.sobel_tiled_vec4 : cfg.sobel_tiled;
    uint64_t need = (uint64_t(s.x) + 2) * (uint64_t(s.y) * s.per + 2) * elem;
    if (need > limit)
      return no("the tile needs " + std::to_string(need) +
                " bytes of workgroup memory, above maxComputeWorkgroupStorageSize " + std::to_string(limit));
  }
  if (d.op == StencilOp::GaussianBlur) {
    int r = cpu::gaussian_radius(d.sigma);  // throws for a bad sigma
    if (is_tiled(v)) {
      bool v4 = is_vec4(v);
      uint64_t need = std::max(tiled_blur_bytes(v4 ? cfg.blur_tiled_h_vec4 : cfg.blur_tiled_h, true, r, elem),
                               tiled_blur_bytes(v4 ? cfg.blur_tiled_v_vec4 : cfg.blur_tiled_v, false, r, elem));
      if (need > limit)
        return no("radius " + std::to_string(r) + " needs " + std::to_string(need) +
                  " bytes of workgroup memory, above maxComputeWorkgroupStorageSize " + std::to_string(limit));
    }
  }
  return true;
}

StencilVersion choose_stencil(const Context& ctx, const StencilDims& d, const StencilConfig& cfg) {
  // H200, 4096x4096, ms per call (tuned configs; Stencil.DISABLED_TuneConfigs, sigma 2):
  //   sobel  c=1: naive 0.076, tiled 0.059      c=4: naive_vec4 0.194, tiled_vec4 0.264
  //   blur   c=1: naive 0.265, tiled 0.181      c=4: naive_vec4 0.406, tiled_vec4 0.47-0.73
  // (scalar c=4 through strided loads: 0.78-1.5, which is why RGB is padded to RGBA for the
  // image blur). SwiftShader, 256x256: the tiled kernels 5-40x slower than the naive ones.
  StencilVersion naive = d.channels == 4 ? StencilVersion::NaiveVec4 : StencilVersion::Naive;
  if (d.channels == 4 || ctx.adapter().is_cpu()) return naive;
  StencilVersion tiled = StencilVersion::Tiled;
  return supports(ctx, tiled, d, cfg) ? tiled : naive;
}

void stencil(Batch& batch, const Tensor& img, const Tensor& out, const StencilDims& d, const StencilConfig& cfg,
             StencilVersion v) {
  const Context& ctx = batch.context();
  const char* op = d.op == StencilOp::Sobel ? "sobel" : "gaussian_blur";
  check_args(op, img, d.width, d.height, d.channels);
  check_out(op, "out", out, d.width, d.height, d.channels);
  StencilVersion rv = resolve(ctx, v, d, cfg);
  if (d.op == StencilOp::Sobel) {
    record_sobel_impl(ctx, batch, img, out, d.width, d.height, d.channels, rv, cfg);
    return;
  }
  Tensor tmp = make_tensor(ctx, {d.height, d.width, d.channels});
  record_blur_impl(ctx, batch, img, weights_tensor(ctx, d.sigma), tmp, out, d.width, d.height, d.channels,
                   cpu::gaussian_radius(d.sigma), rv, cfg);
}

Tensor sobel(const Context& ctx, const Tensor& img, int w, int h, int channels, StencilVersion v) {
  check_args("sobel", img, w, h, channels);
  Tensor out = make_tensor(ctx, {h, w, channels});
  Batch b(ctx);
  stencil(b, img, out, {StencilOp::Sobel, w, h, channels}, {}, v);
  b.run();
  return out;
}

Tensor gaussian_blur(const Context& ctx, const Tensor& img, int w, int h, int channels, float sigma, StencilVersion v) {
  check_args("gaussian_blur", img, w, h, channels);
  Tensor out = make_tensor(ctx, {h, w, channels});
  Batch b(ctx);
  stencil(b, img, out, {StencilOp::GaussianBlur, w, h, channels, sigma}, {}, v);
  b.run();
  return out;
}

// --- host images ---------------------------------------------------------------------------

namespace {
Image sobel_result(const std::vector<float>& mag, int w, int h) { return from_float(mag, w, h, 1); }
}  // namespace

Image sobel_on_cpu(const Image& img) {
  auto g = to_gray(img);
  return sobel_result(cpu::sobel(g, img.width, img.height, 1), img.width, img.height);
}

Image gaussian_blur_on_cpu(const Image& img, float sigma) {
  auto f = to_float(img);
  return from_float(cpu::gaussian_blur(f, img.width, img.height, img.channels, sigma), img.width, img.height,
                    img.channels);
}

namespace {

// The version the host overloads run on `c` channels: a requested one as asked (an RGB image
// padded to RGBA for a Vec4 one), Auto by choose_stencil, padding RGB on a GPU when
// kStencilPadRgbToVec4.
StencilVersion host_version(const Context& ctx, StencilOp op, int c, float sigma, StencilVersion requested) {
  StencilDims d{op, 1, 1, c, sigma};
  if (requested != StencilVersion::Auto) {
    if (c == 3 && is_vec4(requested)) d.channels = 4;
    return resolve(ctx, requested, d, {});
  }
  if (c == 3 && kStencilPadRgbToVec4 && !ctx.adapter().is_cpu()) d.channels = 4;
  return choose_stencil(ctx, d);
}

void check_host_args(const char* op, std::span<const float> img, int w, int h, int c) {
  if (w <= 0 || h <= 0 || c < 1 || c > 4 || int64_t(w) * h > kMaxImagePixels)
    throw Error(std::string("wgc: ") + op + ": bad image size " + shape_str(w, h, c) + " (channels 1..4, at most " +
                std::to_string(kMaxImagePixels) + " pixels)");
  if (img.size() != size_t(w) * size_t(h) * size_t(c))
    throw Error(std::string("wgc: ") + op + ": the image holds " + std::to_string(img.size()) + " values, not " +
                shape_str(w, h, c));
}

// Whether the host overloads run the CPU reference: only for Auto, below the op's threshold.
bool host_runs_on_cpu(const Context& ctx, StencilOp op, int64_t pixels, const Policy& policy, StencilVersion v) {
  return v == StencilVersion::Auto &&
         run_on_cpu(ctx, op == StencilOp::Sobel ? thresholds::kSobel : thresholds::kBlur, policy, uint64_t(pixels));
}

// Upload, run the tensor op with the version host_version picks, read back; RGB goes through RGBA
// (alpha 1) for a Vec4 version, and back after.
std::vector<float> run_on_device(const Context& ctx, StencilOp op, std::span<const float> img, int w, int h, int c,
                                 float sigma, StencilVersion requested) {
  const StencilVersion v = host_version(ctx, op, c, sigma, requested);
  const size_t pixels = size_t(w) * size_t(h);
  std::vector<float> padded;
  const bool pad = c == 3 && is_vec4(v);
  if (pad) {
    padded.assign(pixels * 4, 1.f);
    for (size_t i = 0; i < pixels; ++i)
      for (size_t k = 0; k < 3; ++k) padded[i * 4 + k] = img[i * 3 + k];
    img = padded;
  }
  const int dc = pad ? 4 : c;
  Tensor t = make_tensor(ctx, {h, w, dc}, img);
  Tensor out = op == StencilOp::Sobel ? sobel(ctx, t, w, h, dc, v) : gaussian_blur(ctx, t, w, h, dc, sigma, v);
  std::vector<float> r = download<float>(ctx, out);
  if (pad) {
    for (size_t i = 0; i < pixels; ++i)
      for (size_t k = 0; k < 3; ++k) r[i * 3 + k] = r[i * 4 + k];
    r.resize(pixels * 3);
  }
  return r;
}

}  // namespace

StencilVersion image_stencil_version(const Context& ctx, StencilOp op, int image_channels, float sigma,
                                     StencilVersion requested) {
  return host_version(ctx, op, op == StencilOp::Sobel ? 1 : image_channels, sigma, requested);
}

std::vector<float> sobel(const Context& ctx, std::span<const float> img, int w, int h, int channels, Policy policy,
                         StencilVersion v) {
  check_host_args("sobel", img, w, h, channels);
  if (host_runs_on_cpu(ctx, StencilOp::Sobel, int64_t(w) * h, policy, v)) return cpu::sobel(img, w, h, channels);
  return run_on_device(ctx, StencilOp::Sobel, img, w, h, channels, 0.f, v);
}

std::vector<float> gaussian_blur(const Context& ctx, std::span<const float> img, int w, int h, int channels,
                                 float sigma, Policy policy, StencilVersion v) {
  check_host_args("gaussian_blur", img, w, h, channels);
  cpu::gaussian_radius(sigma);  // a bad sigma fails the same way on both paths
  if (host_runs_on_cpu(ctx, StencilOp::GaussianBlur, int64_t(w) * h, policy, v))
    return cpu::gaussian_blur(img, w, h, channels, sigma);
  return run_on_device(ctx, StencilOp::GaussianBlur, img, w, h, channels, sigma, v);
}

Image sobel(const Context& ctx, const Image& img, Policy policy, StencilVersion v) {
  check_image(img, "sobel");
  if (host_runs_on_cpu(ctx, StencilOp::Sobel, img.pixels(), policy, v)) return sobel_on_cpu(img);
  return sobel_result(sobel(ctx, to_gray(img), img.width, img.height, 1, policy, v), img.width, img.height);
}

Image gaussian_blur(const Context& ctx, const Image& img, float sigma, Policy policy, StencilVersion v) {
  check_image(img, "gaussian_blur");
  cpu::gaussian_radius(sigma);
  if (host_runs_on_cpu(ctx, StencilOp::GaussianBlur, img.pixels(), policy, v)) return gaussian_blur_on_cpu(img, sigma);
  return from_float(gaussian_blur(ctx, to_float(img), img.width, img.height, img.channels, sigma, policy, v), img.width,
                    img.height, img.channels);
}

// --- benchmark hook ------------------------------------------------------------------------

bool StencilVariant::supports(const Context& ctx, const StencilDims& p, const StencilConfig& cfg) const {
  StencilDims d = p;
  d.op = op;
  return p.width > 0 && p.height > 0 && wgc::supports(ctx, version, d, cfg);
}

StencilCall StencilVariant::prepare(const Context& ctx, const StencilDims& p, uint32_t seed,
                                    const StencilConfig& cfg) const {
  std::string why;
  if (p.width <= 0 || p.height <= 0) throw Error("wgc: stencil " + name + ": bad problem size");
  StencilDims d = p;
  d.op = op;
  if (!wgc::supports(ctx, version, d, cfg, &why)) throw Error("wgc: stencil " + name + ": " + why);
  StencilCall call;
  size_t n = size_t(p.width) * size_t(p.height) * size_t(p.channels);
  call.host_input.resize(n);
  uint64_t state = 0x9e3779b97f4a7c15ull * (uint64_t(seed) + 1);  // splitmix64: fast for large images
  for (auto& x : call.host_input) {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    x = float((z ^ (z >> 31)) >> 40) * (1.f / 16777216.f);  // [0, 1)
  }
  Shape s{p.height, p.width, p.channels};
  call.input = make_tensor(ctx, s, call.host_input);
  call.output = make_tensor(ctx, s);
  Context c = ctx;
  Batch warm(ctx);  // recording once compiles the kernels now, not inside a timed loop; never submitted
  if (op == StencilOp::Sobel) {
    record_sobel_impl(ctx, warm, call.input, call.output, p.width, p.height, p.channels, version, cfg);
    call.record = [c, in = call.input, out = call.output, p, v = version, cfg](Batch& b) {
      record_sobel_impl(c, b, in, out, p.width, p.height, p.channels, v, cfg);
    };
  } else {
    Tensor tmp = make_tensor(ctx, s), wts = weights_tensor(ctx, p.sigma);
    int r = cpu::gaussian_radius(p.sigma);
    record_blur_impl(ctx, warm, call.input, wts, tmp, call.output, p.width, p.height, p.channels, r, version, cfg);
    call.record = [c, in = call.input, out = call.output, tmp, wts, r, p, v = version, cfg](Batch& b) {
      record_blur_impl(c, b, in, wts, tmp, out, p.width, p.height, p.channels, r, v, cfg);
    };
  }
  return call;
}

std::vector<StencilVariant> stencil_variants() {
  std::vector<StencilVariant> out;
  for (auto op : {StencilOp::Sobel, StencilOp::GaussianBlur})
    for (auto v : kStencilVersions)
      out.push_back({std::string(to_string(op)) + "/" + std::string(to_string(v)), op, v});
  return out;
}

uint64_t stencil_bytes_moved(const StencilDims& p) {
  uint64_t image = uint64_t(p.width) * uint64_t(p.height) * uint64_t(p.channels) * 4;
  return (p.op == StencilOp::Sobel ? 2 : 4) * image;
}

std::vector<float> stencil_cpu(const StencilDims& p, std::span<const float> input) {
  if (p.op == StencilOp::Sobel) return cpu::sobel(input, p.width, p.height, p.channels);
  return cpu::gaussian_blur(input, p.width, p.height, p.channels, p.sigma);
}

}  // namespace wgc
