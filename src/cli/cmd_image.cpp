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
  std::string version = "auto";
  int64_t cpu_below = -1;
  bool force = false;
  int quality = 92;
  float sigma = 2.f;  // blur
  std::string in, out;
};

// The flags both filters take.
void add_image_flags(CLI::App& app, ImageArgs& r) {
  app.add_option("--version", r.version, "the kernel: auto, naive, tiled, naive_vec4, tiled_vec4");
  add_number(app, "--cpu-below", r.cpu_below,
             "run on the CPU below this many pixels (-1: the op's threshold for the adapter, or "
             "WGC_CPU_BELOW_SOBEL / WGC_CPU_BELOW_BLUR)");
  add_force(app, r.force);
  add_number(app, "--quality", r.quality, "JPEG quality, 1-100");
  add_gpu_flags(app, r.gpu);
  app.add_option("IN", r.in, "the input image (PNG or JPEG)")->required();
  app.add_option("OUT", r.out, "the output image (PNG or JPEG, by extension)")->required();
}

void check(const ImageArgs& r) {
  (void)parse_stencil_version(r.version);
  if (r.cpu_below < -1) throw UsageError("--cpu-below expects a pixel count or -1");
  if (r.quality < 1 || r.quality > 100) throw UsageError("--quality expects 1..100");
  format_for_extension(r.out);  // an unknown output extension fails before any work
  check_output(r.out, overwrite_rule(r.force));
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
  const StencilVersion version = parse_stencil_version(r.version);
  const bool auto_version = version == StencilVersion::Auto;
  uint64_t sure_cpu = cpu_below_override(t, policy).value_or(std::min(t.cpu_adapter, t.gpu_adapter));
  Image out;
  std::string how;
  if (auto_version && uint64_t(img.pixels()) < sure_cpu) {
    out = cpu(img);
    how = "cpu";
  } else {
    Context ctx(r.gpu.context_options());
    t0 = std::chrono::steady_clock::now();
    if (auto_version && run_on_cpu(ctx, t, policy, uint64_t(img.pixels()))) {
      out = cpu(img);
      how = "cpu";
    } else {
      StencilVersion v = image_stencil_version(ctx, op, img.channels, sigma, version);
      out = gpu(ctx, img, Policy{0}, version);
      how = "gpu " + std::string(to_string(v)) + " on " + ctx.adapter().device;
    }
  }
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  write_image(r.out, out, r.quality, overwrite_rule(r.force));
  if (verbosity() != Verbosity::Quiet)
    std::printf("%s: %s %dx%dx%d -> %s %dx%dx%d (%s, %.1f ms)\n", cmd, r.in.c_str(), img.width, img.height,
                img.channels, r.out.c_str(), out.width, out.height, out.channels, how.c_str(), ms);
  return 0;
}

int sobel_cmd(const ImageArgs& r) {
  check(r);
  return run_filter(
      "sobel", StencilOp::Sobel, r, 0.f,
      [](const Context& ctx, const Image& img, Policy p, StencilVersion v) { return sobel(ctx, img, p, v); },
      [](const Image& img) { return sobel_on_cpu(img); });
}

int blur_cmd(const ImageArgs& r) {
  check(r);
  float s = r.sigma;
  if (!(s > 0.f)) throw UsageError("--sigma must be above 0 (a blur of sigma 0 copies the image unchanged)");
  cpu::gaussian_radius(s);  // a bad sigma fails before any work
  return run_filter(
      "blur", StencilOp::GaussianBlur, r, s,
      [s](const Context& ctx, const Image& img, Policy p, StencilVersion v) {
        return gaussian_blur(ctx, img, s, p, v);
      },
      [s](const Image& img) { return gaussian_blur_on_cpu(img, s); });
}

Register reg_sobel{
    {"sobel", "Sobel edge magnitude of an image's luma (PNG/JPEG in and out, by extension)", [](CLI::App& app) {
       auto r = std::make_shared<ImageArgs>();
       add_image_flags(app, *r);
       // Not a flag of sobel: said plainly rather than as an unknown flag.
       app.add_option_function<std::string>(
              "--sigma",
              [](const std::string&) -> void {
                throw UsageError(
                    "sobel takes no --sigma: its 3x3 kernel is fixed (wgc blur --sigma S smooths an image)");
              },
              "")
           ->group("");
       return [r] { return sobel_cmd(*r); };
     }}};
Register reg_blur{{"blur", "Gaussian blur (radius ceil(3 sigma)) of a PNG/JPEG image", [](CLI::App& app) {
                     auto r = std::make_shared<ImageArgs>();
                     add_number(app, "--sigma", r->sigma, "the Gaussian's standard deviation in pixels");
                     add_image_flags(app, *r);
                     return [r] { return blur_cmd(*r); };
                   }}};

}  // namespace
}  // namespace wgc::cli
