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
#include "ops/thresholds.h"
#include "util/image.h"

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace wgc {

enum class StencilVersion { Auto, Naive, Tiled, NaiveVec4, TiledVec4 };
enum class StencilOp { Sobel, GaussianBlur };
inline constexpr StencilVersion kStencilVersions[] = {StencilVersion::Naive, StencilVersion::Tiled,
                                                      StencilVersion::NaiveVec4, StencilVersion::TiledVec4};
std::string_view to_string(StencilVersion v);                 // "auto", "naive", "tiled", "naive_vec4", "tiled_vec4"
std::string_view to_string(StencilOp op);                     // "sobel", "blur"
StencilVersion parse_stencil_version(std::string_view name);  // throws naming the op and the valid names

// The problem: which stencil, on an image of width x height pixels of `channels` f32 values.
struct StencilDims {
  StencilOp op = StencilOp::Sobel;
  int width = 0, height = 0, channels = 1;
  float sigma = 2.f;  // blur only
};

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

// Whether version v can run this problem: the Vec4 versions need 4 channels, a tiled blur needs
// its tile plus 2 * radius halo to fit the device's workgroup memory. `why` (if given) says why not.
bool supports(const Context& ctx, StencilVersion v, const StencilDims& d, const StencilConfig& cfg = {},
              std::string* why = nullptr);
// What Auto runs (measured on the H200 and SwiftShader, see stencil.cpp): on a GPU, NaiveVec4
// for 4 channels (its 16-byte loads hit the caches well; tiled_vec4 was slower), else Tiled (Naive
// when a blur's halo does not fit workgroup memory). On a CPU adapter (SwiftShader, where workgroup
// barriers are slow) Naive/NaiveVec4.
StencilVersion choose_stencil(const Context& ctx, const StencilDims& d, const StencilConfig& cfg = {});

// Records the stencil into a batch: img and out hold at least width*height*channels f32 values
// (interleaved, rows top to bottom). The blur's intermediate image comes from the context's pool.
// Throws wgc::Error for a bad shape or dtype, a too-small tensor or a version that cannot run.
void stencil(Batch& batch, const Tensor& img, const Tensor& out, const StencilDims& d, const StencilConfig& cfg = {},
             StencilVersion v = StencilVersion::Auto);

// --- tensor ops (run now, return a new {h, w, channels} f32 tensor) --------------------------
Tensor sobel(const Context& ctx, const Tensor& img, int w, int h, int channels,
             StencilVersion v = StencilVersion::Auto);
Tensor gaussian_blur(const Context& ctx, const Tensor& img, int w, int h, int channels, float sigma,
                     StencilVersion v = StencilVersion::Auto);

// --- host images ------------------------------------------------------------------------------
// Below the op's threshold (thresholds::kSobel, kBlur, in pixels; measured there) the GPU round
// trip (convert, upload, dispatch, submit, wait, download, convert) costs more than the CPU
// reference, which then runs instead (cpu/stencil.h) -- unless a version was asked for: a version
// other than Auto always runs on the GPU (or fails there).

// Whether Auto blurs an RGB image on a GPU as RGBA through the vec4 kernels (a third more bytes,
// one 16-byte load per pixel) rather than as 3 channels through the scalar ones: on the H200 at
// 4096x4096, 0.41 ms (naive_vec4, 4 channels) against 0.93 ms (tiled, 3 channels).
inline constexpr bool kStencilPadRgbToVec4 = true;

// The version the host-image overloads run on the GPU (Sobel runs on the luma, 1 channel). An RGB
// image is padded to RGBA for a Vec4 version: when asked for one, or for Auto on a GPU when
// kStencilPadRgbToVec4 (measured: see stencil.cpp).
StencilVersion image_stencil_version(const Context& ctx, StencilOp op, int image_channels, float sigma,
                                     StencilVersion requested);

// Float images in host memory (h rows of w pixels of `channels` interleaved values, 1..4), as the
// tensor ops take them, with the same threshold and version rules as the Image overloads below
// (an RGB image goes through RGBA where image_stencil_version pads). Sobel is per channel here.
// Throw wgc::Error for a bad size or sigma.
std::vector<float> sobel(const Context& ctx, std::span<const float> img, int w, int h, int channels, Policy policy = {},
                         StencilVersion v = StencilVersion::Auto);
std::vector<float> gaussian_blur(const Context& ctx, std::span<const float> img, int w, int h, int channels,
                                 float sigma, Policy policy = {}, StencilVersion v = StencilVersion::Auto);

// Sobel edge magnitude of the image's luma (Rec. 601), one channel out, clamped to [0, 1].
Image sobel(const Context& ctx, const Image& img, Policy policy = {}, StencilVersion v = StencilVersion::Auto);
// Gaussian blur of every channel (alpha too); keeps the channel count.
Image gaussian_blur(const Context& ctx, const Image& img, float sigma, Policy policy = {},
                    StencilVersion v = StencilVersion::Auto);
// The same on the CPU, with no device (what the overloads above run below the threshold).
Image sobel_on_cpu(const Image& img);
Image gaussian_blur_on_cpu(const Image& img, float sigma);

// --- benchmark hook ---------------------------------------------------------------------------

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
  bool supports(const Context& ctx, const StencilDims& p, const StencilConfig& cfg = {}) const;
  StencilCall prepare(const Context& ctx, const StencilDims& p, uint32_t seed = 1, const StencilConfig& cfg = {}) const;
};

// Every GPU version of both ops (Auto excluded), in ladder order per op.
std::vector<StencilVariant> stencil_variants();

// Bytes one call must move through memory, for GB/s: Sobel reads the image once and writes it
// once; the blur does that twice (horizontal into the intermediate, then vertical). The weights
// and the halo re-reads are not counted. 4 bytes per value.
uint64_t stencil_bytes_moved(const StencilDims& p);

// The CPU reference for a problem (the bench's CPU baseline and correctness check).
std::vector<float> stencil_cpu(const StencilDims& p, std::span<const float> input);

}  // namespace wgc
