// Stencil ops: Sobel edge magnitude and separable Gaussian blur, clamp-to-edge borders.
//
// Images on the GPU are f32 tensors of h rows x w pixels x `channels` interleaved values
// (shape {h, w, channels}, channels 1..4). Versions (a ladder, slowest first):
//   Naive      one thread per pixel and channel, every tap read from global memory
//   Tiled      a workgroup loads its tile plus the halo into workgroup memory together
//   NaiveVec4  as Naive, an RGBA pixel per vec4 element (4 channels only)
//   TiledVec4  as Tiled, an RGBA pixel per vec4 element (4 channels only)
// The blur runs two passes (horizontal, then vertical) through an intermediate image; its radius is
// ceil(3 sigma) and its weights are normalized to sum 1 (cpu/stencil.h).
#pragma once

#include "gpu/batch.h"
#include "gpu/context.h"
#include "gpu/tensor.h"
#include "util/image.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace wgc {

enum class StencilVersion { Auto, Naive, Tiled, NaiveVec4, TiledVec4 };
enum class StencilOp { Sobel, GaussianBlur };
inline constexpr StencilVersion kStencilVersions[] = {StencilVersion::Naive, StencilVersion::Tiled,
                                                      StencilVersion::NaiveVec4, StencilVersion::TiledVec4};

// Tuning knobs, for benchmarks: each kernel's workgroup shape and outputs per thread along its
// pass direction (Sobel tiled: rows; blur tiled: along x for the horizontal pass, y for the
// vertical). The defaults are what the ops use: the best of a sweep on the H200
// (Stencil.DISABLED_TuneConfigs, 4096x4096, 1 and 4 channels, sigma 2, two rounds), all within
// SwiftShader's 256 invocations. The vec4 tiled kernels did best with one output per thread.
struct StencilShape {
  uint32_t x = 16, y = 16, per = 1;
};
struct StencilConfig {
  StencilShape sobel_naive{32, 8, 1};         // scalar and vec4
  StencilShape sobel_tiled{64, 4, 4};         // scalar
  StencilShape sobel_tiled_vec4{32, 8, 1};    // vec4
  StencilShape blur_naive{64, 4, 1};          // scalar and vec4, both passes
  StencilShape blur_tiled_h{64, 4, 2};        // scalar, horizontal pass
  StencilShape blur_tiled_v{32, 8, 2};        // scalar, vertical pass
  StencilShape blur_tiled_h_vec4{16, 16, 1};  // vec4, horizontal pass
  StencilShape blur_tiled_v_vec4{16, 16, 1};  // vec4, vertical pass
};

std::string_view to_string(StencilVersion v);                 // "auto", "naive", "tiled", "naive_vec4", "tiled_vec4"
std::string_view to_string(StencilOp op);                     // "sobel", "blur"
StencilVersion parse_stencil_version(std::string_view name);  // throws wgc::Error on others

// Whether version v can run this problem: the Vec4 versions need 4 channels, a tiled blur needs
// its tile plus 2 * radius halo to fit the device's workgroup memory. `why` (if given) says why not.
bool stencil_supports(const Context& ctx, StencilOp op, StencilVersion v, int channels, float sigma = 0.f,
                      std::string* why = nullptr, const StencilConfig& cfg = {});
// What Auto picks (measured on the H200 and SwiftShader, see stencil.cpp): on a GPU, NaiveVec4
// for 4 channels (its 16-byte loads hit the caches well; tiled_vec4 was slower), else Tiled (Naive
// when a blur's halo does not fit workgroup memory). On a CPU adapter (SwiftShader, where workgroup
// barriers are slow) Naive/NaiveVec4.
StencilVersion stencil_auto_version(const Context& ctx, StencilOp op, int channels, float sigma = 0.f,
                                    const StencilConfig& cfg = {});

// --- tensor ops (run now, return a new {h, w, channels} f32 tensor) --------------------------
// Throw wgc::Error for a bad shape or dtype, a too-small input or an unsupported version.
Tensor sobel(const Context& ctx, const Tensor& img, int w, int h, int channels,
             StencilVersion v = StencilVersion::Auto);
Tensor gaussian_blur(const Context& ctx, const Tensor& img, int w, int h, int channels, float sigma,
                     StencilVersion v = StencilVersion::Auto);

// Recording forms: add the dispatches to a batch (no submit). out (and the blur's tmp) hold at least
// w*h*channels f32 values; tmp must not alias img or out. Auto resolves as above.
void record_sobel(const Context& ctx, Batch& b, const Tensor& img, const Tensor& out, int w, int h, int channels,
                  StencilVersion v = StencilVersion::Auto, const StencilConfig& cfg = {});
void record_gaussian_blur(const Context& ctx, Batch& b, const Tensor& img, const Tensor& tmp, const Tensor& out, int w,
                          int h, int channels, float sigma, StencilVersion v = StencilVersion::Auto,
                          const StencilConfig& cfg = {});

// --- host images ------------------------------------------------------------------------------
// Below a size the GPU round trip (convert, upload, dispatch, submit, wait, download, convert)
// costs more than the CPU reference: images with fewer pixels than the op's threshold run on the
// CPU (cpu/stencil.h). Defaults per kind of adapter, measured with
// Stencil.DISABLED_MeasureCpuThreshold in tests/test_stencil.cpp (host-image blur, sigma 2, and
// Sobel of RGB images at square sizes, the GPU path against the CPU path, best of 7):
//  - SwiftShader (this 2-core machine): the GPU path was slower at every size tried, 8x8 to
//    1024x1024 (Sobel 4-16x, blur 4-40x slower): the CPU adapter's value is a size past the
//    largest tried (4096x4096), i.e. CPU unless asked.
//  - H200 (its host's CPU, one thread): the GPU path wins from about 96x96 for the blur
//    (0.47 vs 0.51 ms; 64x64: 0.33 vs 0.23) and from about 192x192 for Sobel (0.70 vs 0.69;
//    128x128: 0.38 vs 0.29).
struct StencilThreshold {
  int64_t cpu_adapter, gpu_adapter;  // pixels
};
inline constexpr StencilThreshold kSobelCpuBelow{int64_t(1) << 24, 192 * 192};
inline constexpr StencilThreshold kBlurCpuBelow{int64_t(1) << 24, 96 * 96};
// Whether Auto blurs an RGB image on a GPU as RGBA through the vec4 kernels (a third more bytes,
// one 16-byte load per pixel) rather than as 3 channels through the scalar ones: on the H200 at
// 4096x4096, 0.41 ms (naive_vec4, 4 channels) against 0.93 ms (tiled, 3 channels).
inline constexpr bool kStencilPadRgbToVec4 = true;

struct ImageStencilOptions {
  StencilVersion version = StencilVersion::Auto;
  // Pixel count below which the CPU runs it: -1 takes $WGC_STENCIL_CPU_BELOW if set, else the op's
  // default above for the context's adapter; 0 always uses the GPU; INT64_MAX always the CPU.
  int64_t cpu_below = -1;
};
// The threshold in force for `requested` (resolves -1 as above; a malformed environment value is
// an error naming the variable).
int64_t stencil_cpu_below(const Context& ctx, StencilOp op, int64_t requested = -1);
// The part that needs no device: `requested` if >= 0, else $WGC_STENCIL_CPU_BELOW if set, else none.
std::optional<int64_t> stencil_cpu_below_override(int64_t requested = -1);
bool stencil_runs_on_cpu(const Context& ctx, StencilOp op, int64_t pixels, const ImageStencilOptions& o = {});

// The version the host-image overloads run (Sobel runs on the luma, 1 channel). An RGB image is
// padded to RGBA for a Vec4 version: when asked for one, or for Auto on a GPU when
// kStencilPadRgbToVec4 (measured: see stencil.cpp).
StencilVersion image_stencil_version(const Context& ctx, StencilOp op, int image_channels, float sigma,
                                     StencilVersion requested);

// Float images in host memory (h rows of w pixels of `channels` interleaved values, 1..4), as the
// tensor ops take them: the CPU reference (cpu/stencil.h) below the op's threshold, else upload,
// the tensor op (an RGB image through RGBA where image_stencil_version pads) and read back. Sobel
// is per channel here. Throw wgc::Error for a bad size or sigma.
std::vector<float> sobel(const Context& ctx, std::span<const float> img, int w, int h, int channels,
                         const ImageStencilOptions& o = {});
std::vector<float> gaussian_blur(const Context& ctx, std::span<const float> img, int w, int h, int channels,
                                 float sigma, const ImageStencilOptions& o = {});

// Sobel edge magnitude of the image's luma (Rec. 601), one channel out, clamped to [0, 1].
Image sobel(const Context& ctx, const Image& img, const ImageStencilOptions& o = {});
// Gaussian blur of every channel (alpha too); keeps the channel count.
Image gaussian_blur(const Context& ctx, const Image& img, float sigma, const ImageStencilOptions& o = {});
// The same on the CPU, with no device (what the overloads above run below the threshold).
Image sobel_on_cpu(const Image& img);
Image gaussian_blur_on_cpu(const Image& img, float sigma);

// --- benchmark hook ---------------------------------------------------------------------------
struct StencilProblem {
  StencilOp op = StencilOp::Sobel;
  int width = 0, height = 0, channels = 1;
  float sigma = 2.f;  // blur only
};

// One prepared call: a random input uploaded, output and scratch allocated, kernels compiled.
struct StencilCall {
  std::vector<float> host_input;  // what `input` holds (for checking against stencil_cpu)
  Tensor input, output;
  std::function<void(Batch&)> record;  // adds one call's dispatches (1 for Sobel, 2 for the blur)
};

struct StencilVariant {
  std::string name;  // "sobel/naive", "blur/tiled_vec4", ...
  StencilOp op;
  StencilVersion version;
  bool supports(const Context& ctx, const StencilProblem& p, const StencilConfig& cfg = {}) const;
  StencilCall prepare(const Context& ctx, const StencilProblem& p, uint32_t seed = 1,
                      const StencilConfig& cfg = {}) const;
};

// Every GPU version of both ops (Auto excluded), in ladder order per op.
std::vector<StencilVariant> stencil_variants();

// Bytes one call must move through memory, for GB/s: Sobel reads the image once and writes it
// once; the blur does that twice (horizontal into the intermediate, then vertical). The weights
// and the halo re-reads are not counted. 4 bytes per value.
uint64_t stencil_bytes_moved(const StencilProblem& p);

// The CPU reference for a problem (the bench's CPU baseline and correctness check).
std::vector<float> stencil_cpu(const StencilProblem& p, std::span<const float> input);

}  // namespace wgc
