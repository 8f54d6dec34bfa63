// 2-D convolution of f32 NCHW tensors (ONNX Conv semantics), with a fused epilogue.
//
// Tensors: x [n][c_in][h][w], weights [c_out][c_in / groups][kh][kw] (ONNX), bias [c_out],
// residual and y [n][c_out][out_h][out_w]. Versions (a ladder, slowest first; docs/cnn.md):
//   Direct        one invocation per output element, every tap read from global memory
//   DirectTiled   a workgroup stages an input tile (with halo) and a block of weights in
//                 workgroup memory; each invocation keeps several output channels in registers
//   Im2colGemm    unfold the input into a [k][n * pixels] buffer, the project's SGEMM
//                 (ops/matmul.h), then a pass that adds the epilogue and writes NCHW
//   ImplicitGemm  the GEMM view (M = c_out, N = n * pixels, K = c_in / groups * kh * kw)
//                 register-tiled like the best SGEMM rung, gathering the input tile straight from
//                 x (no buffer); weights transposed to [group][k][m] first
//   Winograd2x2   F(2x2, 3x3) for 3x3 stride-1 undilated ungrouped convolutions: input and output
//                 transforms around 16 GEMMs (weights transformed once per call, or once at load
//                 through prepare_conv2d)
//   Depthwise     groups == c_in (any channel multiplier), a plane tile in workgroup memory
//   DepthwiseRows the same without workgroup memory: an invocation computes outputs down a column
//   DepthwiseReg  the same register-blocked: an invocation computes a block of outputs (a few
//                 along the row, a few down the column), each input row loaded once into
//                 registers, vec4 loads and stores where the layout allows, the columns beside
//                 a block from the lanes beside (subgroup shuffles) where the window allows
//   Pointwise     1x1 stride-1 unpadded ungrouped convolutions as a GEMM W[c_out][c_in] x X_n[c_in][h*w]
// Every version applies the epilogue (bias, residual, activation) in the kernel that writes y.
// Variants and knobs that lost on the H200 left the library; docs/history/pruned.md lists them
// with the commit that removed them.
// Conv2dDims and ConvEpilogue are declared in cpu/conv.h (the CPU references take them too).
#pragma once

#include "cpu/conv.h"  // Conv2dDims, ConvEpilogue, check(Conv2dDims): shared with the CPU reference
#include "gpu/batch.h"
#include "ops/thresholds.h"

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace wgc {

enum class Conv2dVersion {
  Auto,
  Direct,
  DirectTiled,
  Im2colGemm,
  ImplicitGemm,
  Winograd2x2,
  Depthwise,
  Pointwise,
  DepthwiseRows,
  DepthwiseReg
};
std::string_view to_string(Conv2dVersion v);                // "auto", "direct", "direct-tiled", "im2col-gemm", ...
Conv2dVersion parse_conv2d_version(std::string_view name);  // throws naming the op and the valid names
inline constexpr Conv2dVersion kConv2dVersions[] = {
    Conv2dVersion::Direct,       Conv2dVersion::DirectTiled,   Conv2dVersion::Im2colGemm,
    Conv2dVersion::ImplicitGemm, Conv2dVersion::Winograd2x2,   Conv2dVersion::Depthwise,
    Conv2dVersion::Pointwise,    Conv2dVersion::DepthwiseRows, Conv2dVersion::DepthwiseReg};

// Whether version v can run d on this context (Winograd2x2: 3x3, stride 1, dilation 1, groups 1;
// Depthwise: d.depthwise(); DepthwiseRows, DepthwiseReg: depthwise with at most 25 taps (DepthwiseReg: a block
// that fits its registers); Pointwise: d.pointwise(); DirectTiled: its tile fits workgroup memory).
bool supports(const Context& ctx, Conv2dVersion v, const Conv2dDims& d);
// What Auto runs: by shape, from measurements (conv.cpp says which).
Conv2dVersion choose_conv2d(const Context& ctx, const Conv2dDims& d);

// Tuning knobs (override constants, so a sweep needs no rebuild); the defaults are what the ops
// use. Set through conv2d_tuning() for benchmarks, or WGC_CONV_TUNING="key=value,..." (keys as
// the field names: igemm_bm=64,igemm_bn=128,...), read once, when first used. A tile the device
// cannot run makes its versions unsupported (supports() says false; asking for one is an error
// naming the knob).
struct ConvTuning {
  // ImplicitGemm / Pointwise: workgroup tile BM x BN, k per step BK, rows per invocation TM (8 or
  // 4; each invocation computes TM x 8 outputs, so (BM / TM) * (BN / 8) invocations), and
  // whether the next tile's loads are issued before this tile's math. Shapes adjust it: layers
  // of at most 32 output channels (per group) take BM 32 with TM 4, and BN halves (down to 32)
  // while the grid has fewer than igemm_min_workgroups workgroups (264: two per SM of an H200).
  uint32_t igemm_bm = 64, igemm_bn = 128, igemm_bk = 8, igemm_tm = 8, igemm_prefetch = 1;
  uint32_t igemm_min_workgroups = 264;
  // Split K: a grid still under igemm_min_workgroups splits K into slices of at least this many
  // values (0: never), summed by a second pass that applies the epilogue (1x1 layers at 7x7 and
  // 14x14, batch 1, and the classifier).
  uint32_t igemm_split_k = 64;
  // Winograd2x2's 16 GEMMs (the same kernel, as a grouped 1x1 convolution).
  uint32_t wino_bm = 64, wino_bn = 128, wino_bk = 8, wino_tm = 8, wino_prefetch = 1;
  // DirectTiled: output tile (tiled_w x tiled_h pixels, one invocation each), output channels per
  // invocation (at most 16) and input channels staged per step.
  uint32_t tiled_w = 16, tiled_h = 8, tiled_cout = 8, tiled_cin = 4;
  // Depthwise: the largest output tile per workgroup (the plane is cut into equal tiles no larger)
  // and invocations per workgroup.
  uint32_t dw_tile_w = 64, dw_tile_h = 8, dw_threads = 128;
  // DepthwiseRows (no workgroup memory, conv/depthwise_rows.wgsl): output rows per invocation; it
  // takes dw_threads invocations per workgroup too.
  uint32_t dw_rows = 2;
  // DepthwiseReg (conv/depthwise_reg.wgsl): outputs per invocation along a row (dwr_cols) and down
  // a column (dwr_rows; dwr_cols * dwr_rows <= 64), and invocations per workgroup. Rows move as
  // aligned vec4s where the layout allows (stride 1 along W, widths multiples of 4, dwr_cols a
  // multiple of 4), and with 4 columns and a 3-column window from one column left of the block
  // (3x3, pad_left 1) the columns beside a block's own vec4s come from the lanes beside (an adapter
  // with one subgroup size that divides dwr_threads). 4 x 2 blocks of 128: 72.2% of the 1 GiB copy
  // bandwidth on the H200 at 144 x 56 x 56 x 32 (docs/benchmarks.md).
  uint32_t dwr_cols = 4, dwr_rows = 2, dwr_threads = 128;
};
ConvTuning& conv2d_tuning();  // process-wide; not thread-safe to change while recording
// The knobs of "key=value,..." (WGC_CONV_TUNING's form) set over `base`; an unknown key or a bad
// value is an error naming the item.
ConvTuning parse_conv2d_tuning(std::string_view knobs, ConvTuning base = {});
// Throws wgc::Error naming the knobs when conv2d_tuning()'s tiles cannot run on this device (a
// sweep's bad point fails loudly instead of leaving versions unsupported).
void check_conv2d_tuning(const Context& ctx);

// Records y = epilogue(conv(x, w)). bias / residual: empty Tensor{} when the epilogue does not
// use them. Throws for bad dims, tensors too small for them, or a version that cannot run them
// (never a silent fallback). Versions that read another weight layout (ImplicitGemm, Pointwise,
// Winograd2x2) record the transform into a scratch tensor first; prepare_conv2d does it once.
void conv2d(Batch& batch, const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& residual, const Tensor& y,
            const Conv2dDims& d, const ConvEpilogue& ep = {}, Conv2dVersion v = Conv2dVersion::Auto);

// A convolution layer made once at load: the version chosen (never Auto) and its weights in the
// layout that version reads (ONNX order; [group][k][m] for the GEMMs; Winograd's transformed
// U[16][c_in][c_out]), bias on the device. Fold BatchNorm into the weights first
// (cpu::fold_batchnorm).
struct PreparedConv {
  Conv2dDims dims;
  Conv2dVersion version = Conv2dVersion::Auto;
  Tensor weights;
  Tensor bias;  // [c_out], or empty
};
// weights: [c_out][c_in / groups][kh][kw]; bias: c_out values or empty. Uploads (and for Winograd
// transforms, on the device) now, waiting for it.
PreparedConv prepare_conv2d(const Context& ctx, std::span<const float> weights, std::span<const float> bias,
                            const Conv2dDims& d, Conv2dVersion v = Conv2dVersion::Auto);
// Records the prepared layer: the prepared bias is added when there is one (ep.bias is ignored);
// residual is used when ep.residual.
void conv2d(Batch& batch, const PreparedConv& layer, const Tensor& x, const Tensor& residual, const Tensor& y,
            const ConvEpilogue& ep = {});

// Host memory: runs the CPU reference (cpu/conv.h) below the threshold (thresholds::kConv2d, in
// FLOPs: d.flops()), else uploads, records conv2d with Auto and reads back. bias / residual empty
// when not used (ep.bias / ep.residual say whether they are).
std::vector<float> conv2d(const Context& ctx, std::span<const float> x, std::span<const float> w,
                          std::span<const float> bias, std::span<const float> residual, const Conv2dDims& d,
                          const ConvEpilogue& ep = {}, Policy policy = {});

}  // namespace wgc
