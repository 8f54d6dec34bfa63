// Convolution and pooling on the CPU (f32 NCHW, ONNX semantics): the references the GPU versions
// are checked against, the fallback for layers too small to pay for a GPU round trip, and
// BatchNorm folding at load. The shape types live here (no GPU) and are shared with ops/conv.h
// and ops/pool.h.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace wgc {

struct Conv2dDims {
  uint32_t n = 1, c_in = 0, h = 0, w = 0;  // input [n][c_in][h][w]
  uint32_t c_out = 0, kh = 1, kw = 1;      // weight [c_out][c_in / groups][kh][kw] (ONNX)
  uint32_t stride_h = 1, stride_w = 1, dil_h = 1, dil_w = 1, groups = 1;
  uint32_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;

  uint32_t out_h() const;  // (h + pad_top + pad_bottom - dil_h * (kh - 1) - 1) / stride_h + 1
  uint32_t out_w() const;
  double flops() const;    // 2 * n * c_out * out_h * out_w * (c_in / groups) * kh * kw
  bool depthwise() const;  // groups == c_in && c_out % c_in == 0 (channel multiplier c_out / c_in)
  bool pointwise() const;  // 1x1, stride 1, no padding, groups 1
  uint64_t x_elements() const;
  uint64_t w_elements() const;
  uint64_t y_elements() const;
  std::string str() const;  // "n2 c3->8 9x11 k3x3 s2,2 d1,1 p1,1,0,1 g1" (errors, benchmarks)
};

// Throws wgc::Error naming the field when the dims do not describe a convolution (a zero size or
// stride, channels not divisible by groups, a dilated kernel larger than the padded input) or
// when a tensor would pass 2^31 elements (the kernels index with u32 and need headroom).
void check(const Conv2dDims& d);

enum class Activation { None, Relu, Relu6, Clip };  // Clip uses clip_min / clip_max
struct ConvEpilogue {                               // applied in this order, fused into the kernel
  bool bias = false;                                // + bias[c_out]
  bool residual = false;                            // + residual[n][c_out][oh][ow] (same shape as y)
  Activation act = Activation::None;
  float clip_min = 0, clip_max = 6;
};

// Pooling windows over x [n][c][h][w] (ONNX MaxPool / AveragePool).
struct Pool2dDims {
  uint32_t n = 1, c = 0, h = 0, w = 0, kh = 1, kw = 1, stride_h = 1, stride_w = 1;
  uint32_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  uint32_t dil_h = 1, dil_w = 1;
  bool ceil_mode = false;          // output size rounds up (a last window must start inside the input
                                   // or its left/top padding, as ONNX Runtime and PyTorch do)
  bool count_include_pad = false;  // average: divide by the taps inside the padded input, not the
                                   // taps inside the input
  uint32_t out_h() const;
  uint32_t out_w() const;
  uint64_t x_elements() const;
  uint64_t y_elements() const;
  std::string str() const;
};
enum class PoolKind { Max, Average };
void check(const Pool2dDims& d);  // throws wgc::Error naming the field, as for Conv2dDims

namespace cpu {

// y = epilogue(conv(x, w)), accumulating in double: slow, exact enough to judge the GPU.
// bias (c_out values) is read when ep.bias, residual (like y) when ep.residual.
void conv2d_reference(std::span<const float> x, std::span<const float> w, std::span<const float> bias,
                      std::span<const float> residual, std::span<float> y, const Conv2dDims& d,
                      const ConvEpilogue& ep = {});

// Output element i of conv2d_reference (for checking samples of large outputs).
float conv2d_reference_at(std::span<const float> x, std::span<const float> w, std::span<const float> bias,
                          std::span<const float> residual, const Conv2dDims& d, const ConvEpilogue& ep, uint64_t i);

// The same in float with loops ordered for the cache (an output row accumulated per tap): the
// "plain CPU" figure in the benchmark and the small-layer fallback.
void conv2d(std::span<const float> x, std::span<const float> w, std::span<const float> bias,
            std::span<const float> residual, std::span<float> y, const Conv2dDims& d, const ConvEpilogue& ep = {});

// The unfolded input of group g for an im2col GEMM: col[k][n * oh * ow + p] with
// k = (ci * kh + r) * kw + c over the group's channels (zeros where the tap is in the padding).
void im2col(std::span<const float> x, std::span<float> col, const Conv2dDims& d, uint32_t g = 0);

// Applies the activation of ep (not bias or residual) to one value.
float activate(float v, const ConvEpilogue& ep);

// BatchNorm after a convolution folded into it: w[co][...] *= s, bias[co] = (bias[co] - mean) * s
// + b, with s = scale / sqrt(var + eps). weights holds c_out equal rows; bias has c_out values
// (zeros for a convolution without one). Throws when the sizes disagree or var + eps <= 0.
void fold_batchnorm(std::span<float> weights, std::span<float> bias, std::span<const float> scale,
                    std::span<const float> b, std::span<const float> mean, std::span<const float> var, float eps,
                    uint32_t c_out);

void pool2d(std::span<const float> x, std::span<float> y, const Pool2dDims& d, PoolKind kind);
// y[n][c] = mean of x[n][c][0 .. hw-1] (accumulated in double).
void global_average_pool(std::span<const float> x, std::span<float> y, uint32_t n, uint32_t c, uint32_t hw);

}  // namespace cpu
}  // namespace wgc
