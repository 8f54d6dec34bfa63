// wgc sobel / wgc blur: image filters on PNG/JPEG files (format by extension), on the GPU, or on
// the CPU below the size threshold (ops/stencil.h).
#include "cli/command.h"
#include "cpu/stencil.h"
#include "gpu/context.h"
#include "io/image.h"
#include "ops/stencil.h"
#include "util/error.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>

namespace wgc::cli {
namespace {

namespace fs = std::filesystem;

struct ImageArgs {
  GpuFlags gpu;
  StencilVersion version = StencilVersion::Auto;
  int64_t cpu_below = -1;
  bool force = false, quiet = false;
  int quality = 92;
  fs::path in, out;
};

ImageArgs parse(Args& a, const char* cmd) {
  ImageArgs r;
  r.gpu = gpu_flags(a);
  r.version = parse_stencil_version(a.option_or("--version", "auto"));
  double below = a.number_or("--cpu-below", -1);
  if (below < -1 || below != double(int64_t(below)))
    throw Error(std::string("wgc ") + cmd + ": --cpu-below expects a pixel count");
  r.cpu_below = int64_t(below);
  r.force = a.flag("--force");
  r.quiet = a.flag("--quiet");
  double q = a.number_or("--quality", 92);
  if (q < 1 || q > 100 || q != double(int(q))) throw Error(std::string("wgc ") + cmd + ": --quality expects 1..100");
  r.quality = int(q);
  return r;
}

void take_files(Args& a, ImageArgs& r, const char* cmd) {
  auto pos = a.positionals();
  if (pos.size() != 2) throw Error(std::string("wgc ") + cmd + ": expected IN and OUT image paths");
  r.in = pos[0];
  r.out = pos[1];
  format_for_extension(r.out);  // an unknown output extension fails before any work
  if (!r.force && fs::exists(r.out))
    throw Error(std::string("wgc ") + cmd + ": '" + r.out.string() + "' exists (use --force to overwrite)");
}

// Runs filter on the CPU or the GPU by the threshold (a named --version always runs on the GPU);
// the device is only created when needed.
template <class Gpu, class Cpu>
int run_filter(const char* cmd, StencilOp op, const ImageArgs& r, float sigma, Gpu gpu, Cpu cpu) {
  Image img = read_image(r.in);
  auto t0 = std::chrono::steady_clock::now();  // the filter's time (after the device is up)
  // Below both adapters' defaults (or an explicit threshold) no device is needed to decide.
  const thresholds::Threshold& t = op == StencilOp::Sobel ? thresholds::kSobel : thresholds::kBlur;
  Policy policy{r.cpu_below};
  bool auto_version = r.version == StencilVersion::Auto;
  uint64_t sure_cpu = cpu_below_override(t, policy).value_or(std::min(t.cpu_adapter, t.gpu_adapter));
  Image out;
  std::string how;
  if (auto_version && uint64_t(img.pixels()) < sure_cpu) {
    out = cpu(img);
    how = "cpu";
  } else {
    Context ctx({parse_backend(r.gpu.backend), r.gpu.debug});
    t0 = std::chrono::steady_clock::now();
    if (auto_version && run_on_cpu(ctx, t, policy, uint64_t(img.pixels()))) {
      out = cpu(img);
      how = "cpu";
    } else {
      StencilVersion v = image_stencil_version(ctx, op, img.channels, sigma, r.version);
      out = gpu(ctx, img, Policy{0}, r.version);
      how = "gpu " + std::string(to_string(v)) + " on " + ctx.adapter().device;
    }
  }
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  write_image(r.out, out, r.quality);
  if (!r.quiet)
    std::printf("%s: %s %dx%dx%d -> %s %dx%dx%d (%s, %.1f ms)\n", cmd, r.in.string().c_str(), img.width, img.height,
                img.channels, r.out.string().c_str(), out.width, out.height, out.channels, how.c_str(), ms);
  return 0;
}

int sobel_cmd(Args& a) {
  ImageArgs r = parse(a, "sobel");
  take_files(a, r, "sobel");
  return run_filter(
      "sobel", StencilOp::Sobel, r, 0.f,
      [](const Context& ctx, const Image& img, Policy p, StencilVersion v) { return sobel(ctx, img, p, v); },
      [](const Image& img) { return sobel_on_cpu(img); });
}

int blur_cmd(Args& a) {
  ImageArgs r = parse(a, "blur");
  double sigma = a.number_or("--sigma", 2.0);
  take_files(a, r, "blur");
  float s = float(sigma);
  cpu::gaussian_radius(s);  // a bad sigma fails before any work
  return run_filter(
      "blur", StencilOp::GaussianBlur, r, s,
      [s](const Context& ctx, const Image& img, Policy p, StencilVersion v) {
        return gaussian_blur(ctx, img, s, p, v);
      },
      [s](const Image& img) { return gaussian_blur_on_cpu(img, s); });
}

const char* kCommon =
    "[--version auto|naive|tiled|naive_vec4|tiled_vec4] [--cpu-below PIXELS] [--force] [--quiet] "
    "[--quality 1-100] [--backend B] IN OUT";

Register reg_sobel{{"sobel", kCommon,
                    "Sobel edge magnitude of an image's luma (PNG/JPEG in and out, by extension; --force overwrites)",
                    sobel_cmd}};
Register reg_blur{{"blur", std::string("[--sigma S] ") + kCommon,
                   "Gaussian blur (radius ceil(3 sigma), default sigma 2) of a PNG/JPEG image; --force overwrites",
                   blur_cmd}};

}  // namespace
}  // namespace wgc::cli
