#include "cpu/conv.h"

#include "util/error.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <vector>

namespace wgc {
namespace {

// Output length of a window sweep, 0 when the dilated window does not fit the padded input.
uint32_t out_len(uint32_t in, uint32_t pad0, uint32_t pad1, uint32_t k, uint32_t dil, uint32_t stride, bool ceil) {
  uint64_t padded = uint64_t(in) + pad0 + pad1, extent = uint64_t(dil) * (k - 1) + 1;
  if (k == 0 || stride == 0 || padded < extent) return 0;
  uint64_t span = padded - extent;
  uint64_t out = (ceil ? (span + stride - 1) / stride : span / stride) + 1;
  // A last window that would start in the right/bottom padding is dropped (ONNX Runtime, PyTorch).
  if (ceil && (out - 1) * stride >= uint64_t(in) + pad0) --out;
  return static_cast<uint32_t>(out);
}

// Tensors index with u32 in the kernels, and some index arithmetic adds a few rows past the end.
constexpr uint64_t kMaxElements = uint64_t(1) << 31;

void check_elements(const char* op, const char* tensor, uint64_t n, const std::string& dims) {
  if (n >= kMaxElements)
    throw Error(std::string("wgc: ") + op + ": " + tensor + " of " + dims + " has " + std::to_string(n) +
                " elements, above the limit of 2^31");
}

// "n2 c3..." from labels and values in turn (appends: GCC 12 warns falsely on long + chains).
std::string join_dims(std::initializer_list<const char*> labels, std::initializer_list<uint32_t> values) {
  std::string r;
  auto v = values.begin();
  for (const char* l : labels) {
    r += l;
    r += std::to_string(*v++);
  }
  return r;
}

size_t at(uint64_t i) { return static_cast<size_t>(i); }

void need(const char* op, const char* name, size_t have, uint64_t want) {
  if (have < want)
    throw Error(std::string("wgc: ") + op + ": " + name + " holds " + std::to_string(have) + " values, needs " +
                std::to_string(want));
}

}  // namespace

uint32_t Conv2dDims::out_h() const { return out_len(h, pad_top, pad_bottom, kh, dil_h, stride_h, false); }
uint32_t Conv2dDims::out_w() const { return out_len(w, pad_left, pad_right, kw, dil_w, stride_w, false); }
double Conv2dDims::flops() const {
  return groups == 0 ? 0 : 2.0 * n * c_out * out_h() * out_w() * double(c_in / groups) * kh * kw;
}
bool Conv2dDims::depthwise() const { return c_in > 0 && groups == c_in && c_out % c_in == 0; }
bool Conv2dDims::pointwise() const {
  return kh == 1 && kw == 1 && stride_h == 1 && stride_w == 1 && groups == 1 && pad_top == 0 && pad_left == 0 &&
         pad_bottom == 0 && pad_right == 0;
}
uint64_t Conv2dDims::x_elements() const { return uint64_t(n) * c_in * h * w; }
uint64_t Conv2dDims::w_elements() const { return groups == 0 ? 0 : uint64_t(c_out) * (c_in / groups) * kh * kw; }
uint64_t Conv2dDims::y_elements() const { return uint64_t(n) * c_out * out_h() * out_w(); }
std::string Conv2dDims::str() const {
  return join_dims({"n", " c", "->", " ", "x", " k", "x", " s", ",", " d", ",", " p", ",", ",", ",", " g"},
                   {n, c_in, c_out, h, w, kh, kw, stride_h, stride_w, dil_h, dil_w, pad_top, pad_left, pad_bottom,
                    pad_right, groups});
}

void check(const Conv2dDims& d) {
  std::string where = "wgc: conv2d " + d.str() + ": ";
  struct F {
    const char* name;
    uint32_t v;
  };
  for (F f : {F{"n", d.n}, F{"c_in", d.c_in}, F{"h", d.h}, F{"w", d.w}, F{"c_out", d.c_out}, F{"kh", d.kh},
              F{"kw", d.kw}, F{"stride_h", d.stride_h}, F{"stride_w", d.stride_w}, F{"dil_h", d.dil_h},
              F{"dil_w", d.dil_w}, F{"groups", d.groups}})
    if (f.v == 0) throw Error(where + f.name + " is 0");
  if (d.c_in % d.groups || d.c_out % d.groups)
    throw Error(where + "groups " + std::to_string(d.groups) + " must divide c_in " + std::to_string(d.c_in) +
                " and c_out " + std::to_string(d.c_out));
  if (d.out_h() == 0 || d.out_w() == 0)
    throw Error(where + "the dilated kernel " + std::to_string(uint64_t(d.dil_h) * (d.kh - 1) + 1) + "x" +
                std::to_string(uint64_t(d.dil_w) * (d.kw - 1) + 1) + " is larger than the padded input");
  // Pads past the kernel extent would make whole output rows of padding only; ONNX allows it, and
  // the kernels handle it, but a pad >= 2^16 is surely a corrupt model.
  for (F f : {F{"pad_top", d.pad_top}, F{"pad_left", d.pad_left}, F{"pad_bottom", d.pad_bottom},
              F{"pad_right", d.pad_right}, F{"kh", d.kh}, F{"kw", d.kw}, F{"stride_h", d.stride_h},
              F{"stride_w", d.stride_w}, F{"dil_h", d.dil_h}, F{"dil_w", d.dil_w}})
    if (f.v >= 65536) throw Error(where + f.name + " " + std::to_string(f.v) + " is above the limit of 65535");
  check_elements("conv2d", "x", d.x_elements(), d.str());
  check_elements("conv2d", "the weights", d.w_elements(), d.str());
  check_elements("conv2d", "y", d.y_elements(), d.str());
}

uint32_t Pool2dDims::out_h() const { return out_len(h, pad_top, pad_bottom, kh, dil_h, stride_h, ceil_mode); }
uint32_t Pool2dDims::out_w() const { return out_len(w, pad_left, pad_right, kw, dil_w, stride_w, ceil_mode); }
uint64_t Pool2dDims::x_elements() const { return uint64_t(n) * c * h * w; }
uint64_t Pool2dDims::y_elements() const { return uint64_t(n) * c * out_h() * out_w(); }
std::string Pool2dDims::str() const {
  std::string r =
      join_dims({"n", " c", " ", "x", " k", "x", " s", ",", " d", ",", " p", ",", ",", ","},
                {n, c, h, w, kh, kw, stride_h, stride_w, dil_h, dil_w, pad_top, pad_left, pad_bottom, pad_right});
  if (ceil_mode) r += " ceil";
  if (count_include_pad) r += " incl-pad";
  return r;
}

void check(const Pool2dDims& d) {
  std::string where = "wgc: pool2d " + d.str() + ": ";
  struct F {
    const char* name;
    uint32_t v;
  };
  for (F f : {F{"n", d.n}, F{"c", d.c}, F{"h", d.h}, F{"w", d.w}, F{"kh", d.kh}, F{"kw", d.kw},
              F{"stride_h", d.stride_h}, F{"stride_w", d.stride_w}, F{"dil_h", d.dil_h}, F{"dil_w", d.dil_w}})
    if (f.v == 0) throw Error(where + f.name + " is 0");
  for (F f : {F{"pad_top", d.pad_top}, F{"pad_left", d.pad_left}, F{"pad_bottom", d.pad_bottom},
              F{"pad_right", d.pad_right}, F{"kh", d.kh}, F{"kw", d.kw}, F{"stride_h", d.stride_h},
              F{"stride_w", d.stride_w}, F{"dil_h", d.dil_h}, F{"dil_w", d.dil_w}})
    if (f.v >= 65536) throw Error(where + f.name + " " + std::to_string(f.v) + " is above the limit of 65535");
  if (d.pad_top >= uint64_t(d.dil_h) * (d.kh - 1) + 1 || d.pad_bottom >= uint64_t(d.dil_h) * (d.kh - 1) + 1 ||
      d.pad_left >= uint64_t(d.dil_w) * (d.kw - 1) + 1 || d.pad_right >= uint64_t(d.dil_w) * (d.kw - 1) + 1)
    throw Error(where + "a pad must be smaller than the window (a window of padding only has no value)");
  if (d.out_h() == 0 || d.out_w() == 0) throw Error(where + "the window is larger than the padded input");
  check_elements("pool2d", "x", d.x_elements(), d.str());
  check_elements("pool2d", "y", d.y_elements(), d.str());
}

namespace cpu {

float activate(float v, const ConvEpilogue& ep) {
  switch (ep.act) {
    case Activation::None: return v;
    case Activation::Relu: return std::max(v, 0.f);
    case Activation::Relu6: return std::min(std::max(v, 0.f), 6.f);
    case Activation::Clip: return std::min(std::max(v, ep.clip_min), ep.clip_max);
  }
  return v;
}

namespace {

void check_spans(const char* op, std::span<const float> x, std::span<const float> w, std::span<const float> bias,
                 std::span<const float> residual, std::span<float> y, const Conv2dDims& d, const ConvEpilogue& ep) {
  check(d);
  need(op, "x", x.size(), d.x_elements());
  need(op, "the weights", w.size(), d.w_elements());
  need(op, "y", y.size(), d.y_elements());
  if (ep.bias) need(op, "bias", bias.size(), d.c_out);
  if (ep.residual) need(op, "residual", residual.size(), d.y_elements());
}

// Bias, residual and activation over y (the convolution sums already there).
void apply_epilogue(std::span<const float> bias, std::span<const float> residual, std::span<float> y,
                    const Conv2dDims& d, const ConvEpilogue& ep) {
  if (!ep.bias && !ep.residual && ep.act == Activation::None) return;
  const uint64_t plane = uint64_t(d.out_h()) * d.out_w();
  for (uint64_t nc = 0; nc < uint64_t(d.n) * d.c_out; ++nc) {
    const float b = ep.bias ? bias[at(nc % d.c_out)] : 0.f;
    for (uint64_t i = nc * plane; i < (nc + 1) * plane; ++i)
      y[at(i)] = activate(y[at(i)] + b + (ep.residual ? residual[at(i)] : 0.f), ep);
  }
}

}  // namespace

namespace {

// One output of the reference, sizes already checked.
float reference_at(std::span<const float> x, std::span<const float> w, std::span<const float> bias,
                   std::span<const float> residual, const Conv2dDims& d, const ConvEpilogue& ep, uint64_t i) {
  const uint32_t oh = d.out_h(), ow = d.out_w(), cin_g = d.c_in / d.groups, cout_g = d.c_out / d.groups;
  const uint32_t j = uint32_t(i % ow), row = uint32_t((i / ow) % oh), co = uint32_t((i / ow / oh) % d.c_out);
  const uint64_t n = i / ow / oh / d.c_out, g = co / cout_g;
  double acc = 0;
  for (uint32_t ci = 0; ci < cin_g; ++ci)
    for (uint32_t r = 0; r < d.kh; ++r) {
      int64_t ih = int64_t(row) * d.stride_h - d.pad_top + int64_t(r) * d.dil_h;
      if (ih < 0 || ih >= d.h) continue;
      for (uint32_t c = 0; c < d.kw; ++c) {
        int64_t iw = int64_t(j) * d.stride_w - d.pad_left + int64_t(c) * d.dil_w;
        if (iw < 0 || iw >= d.w) continue;
        double xv = x[at(((n * d.c_in + g * cin_g + ci) * d.h + uint64_t(ih)) * d.w + uint64_t(iw))];
        acc += xv * double(w[at(((uint64_t(co) * cin_g + ci) * d.kh + r) * d.kw + c)]);
      }
    }
  if (ep.bias) acc += bias[co];
  if (ep.residual) acc += residual[at(i)];
  return activate(static_cast<float>(acc), ep);
}

}  // namespace

float conv2d_reference_at(std::span<const float> x, std::span<const float> w, std::span<const float> bias,
                          std::span<const float> residual, const Conv2dDims& d, const ConvEpilogue& ep, uint64_t i) {
  check(d);
  need("conv2d_reference_at", "x", x.size(), d.x_elements());
  need("conv2d_reference_at", "the weights", w.size(), d.w_elements());
  if (ep.bias) need("conv2d_reference_at", "bias", bias.size(), d.c_out);
  if (ep.residual) need("conv2d_reference_at", "residual", residual.size(), d.y_elements());
  if (i >= d.y_elements())
    throw Error("wgc: conv2d_reference_at: output " + std::to_string(i) + " of " + std::to_string(d.y_elements()));
  return reference_at(x, w, bias, residual, d, ep, i);
}

void conv2d_reference(std::span<const float> x, std::span<const float> w, std::span<const float> bias,
                      std::span<const float> residual, std::span<float> y, const Conv2dDims& d,
                      const ConvEpilogue& ep) {
  check_spans("conv2d_reference", x, w, bias, residual, y, d, ep);
  for (uint64_t i = 0; i < d.y_elements(); ++i) y[at(i)] = reference_at(x, w, bias, residual, d, ep, i);
}

namespace {

// Below this many taps per output (c_in / groups * kh * kw: depthwise layers) the tap loop beats
// unfolding into a GEMM.
constexpr uint32_t kGemmMinTaps = 16;
constexpr uint32_t kPixelBlock = 256;  // pixels unfolded at a time: the buffer stays in L2

// o_i[p] += w_i * v[p] for four rows; the rows and v do not overlap (restrict: vectorises).
void axpy4(float* __restrict o0, float* __restrict o1, float* __restrict o2, float* __restrict o3,
           const float* __restrict v, float w0, float w1, float w2, float w3, uint32_t n) {
  for (uint32_t p = 0; p < n; ++p) {
    const float x = v[p];
    o0[p] += w0 * x, o1[p] += w1 * x, o2[p] += w2 * x, o3[p] += w3 * x;
  }
}

// y = conv(x, w) without the epilogue as GEMMs: per image, group and block of pixels, the
// unfolded input col[tap][pixel] times the group's weight rows, four output rows at a time, each
// tap adding a scaled col row to them (vectorises without reassociating sums).
void conv_as_gemm(std::span<const float> x, std::span<const float> w, std::span<float> y, const Conv2dDims& d) {
  const uint32_t oh = d.out_h(), ow = d.out_w(), cin_g = d.c_in / d.groups, cout_g = d.c_out / d.groups;
  const uint32_t taps = cin_g * d.kh * d.kw, pixels = oh * ow;
  const bool unpadded_1x1 = d.kh == 1 && d.kw == 1 && d.stride_h == 1 && d.stride_w == 1 && !d.pad_top && !d.pad_left &&
                            !d.pad_bottom && !d.pad_right;
  std::vector<float> col(unpadded_1x1 ? 0 : size_t(std::min(pixels, kPixelBlock)) * taps);
  std::vector<const float*> src(taps);
  for (uint32_t n = 0; n < d.n; ++n)
    for (uint32_t g = 0; g < d.groups; ++g)
      for (uint32_t p0 = 0; p0 < pixels; p0 += kPixelBlock) {
        const uint32_t np = std::min(kPixelBlock, pixels - p0);
        // The unfolded rows, or (1x1, stride 1, no padding) the input rows themselves.
        for (uint32_t t = 0; t < taps; ++t) {
          const uint32_t ci = t / (d.kh * d.kw), r = (t / d.kw) % d.kh, c = t % d.kw;
          const float* plane = &x[at((uint64_t(n) * d.c_in + g * cin_g + ci) * d.h * d.w)];
          if (unpadded_1x1) {
            src[t] = plane + p0;
            continue;
          }
          float* dst = &col[size_t(t) * np];
          src[t] = dst;
          uint32_t oy = p0 / ow, ox = p0 % ow;
          for (uint32_t p = 0; p < np; ++p) {
            int64_t iy = int64_t(oy) * d.stride_h - d.pad_top + int64_t(r) * d.dil_h;
            int64_t ix = int64_t(ox) * d.stride_w - d.pad_left + int64_t(c) * d.dil_w;
            dst[p] = iy >= 0 && iy < d.h && ix >= 0 && ix < d.w ? plane[iy * d.w + ix] : 0.f;
            if (++ox == ow) ox = 0, ++oy;
          }
        }
        float* out0 = &y[at((uint64_t(n) * d.c_out + uint64_t(g) * cout_g) * pixels + p0)];
        const float* wg = &w[at(uint64_t(g) * cout_g * taps)];
        for (uint32_t m = 0; m < cout_g; m += 4) {
          const uint32_t rows = std::min(4u, cout_g - m);
          float* o[4];
          const float* wr[4];
          for (uint32_t i = 0; i < 4; ++i) {  // rows past the end alias the last one, unused
            o[i] = out0 + size_t(m + std::min(i, rows - 1)) * pixels;
            wr[i] = wg + size_t(m + std::min(i, rows - 1)) * taps;
          }
          for (uint32_t i = 0; i < rows; ++i) std::fill(o[i], o[i] + np, 0.f);
          for (uint32_t t = 0; t < taps; ++t) {
            const float* cr = src[t];
            if (rows == 4) {
              axpy4(o[0], o[1], o[2], o[3], cr, wr[0][t], wr[1][t], wr[2][t], wr[3][t], np);
            } else {
              for (uint32_t i = 0; i < rows; ++i)
                for (uint32_t p = 0; p < np; ++p) o[i][p] += wr[i][t] * cr[p];
            }
          }
        }
      }
}

// y = conv(x, w) without the epilogue, tap by tap: each tap adds a scaled input row to an output
// row (the fast form for few taps per output).
void conv_by_taps(std::span<const float> x, std::span<const float> w, std::span<float> y, const Conv2dDims& d) {
  const uint32_t oh = d.out_h(), ow = d.out_w(), cin_g = d.c_in / d.groups, cout_g = d.c_out / d.groups;
  for (uint32_t n = 0; n < d.n; ++n)
    for (uint32_t co = 0; co < d.c_out; ++co) {
      float* out = &y[at((uint64_t(n) * d.c_out + co) * oh * ow)];
      std::fill(out, out + size_t(oh) * ow, 0.f);
      uint32_t g = co / cout_g;
      for (uint32_t ci = 0; ci < cin_g; ++ci) {
        const float* plane = &x[at((uint64_t(n) * d.c_in + g * cin_g + ci) * d.h * d.w)];
        for (uint32_t r = 0; r < d.kh; ++r)
          for (uint32_t c = 0; c < d.kw; ++c) {
            float wv = w[at(((uint64_t(co) * cin_g + ci) * d.kh + r) * d.kw + c)];
            // Output columns whose tap lands inside the row: ix = j * stride - pad + c * dil in [0, w).
            int64_t off = int64_t(c) * d.dil_w - d.pad_left;
            int64_t lo = off >= 0 ? 0 : (-off + d.stride_w - 1) / d.stride_w;
            int64_t hi =
                int64_t(d.w) - 1 - off < 0 ? 0 : std::min<int64_t>(ow, (int64_t(d.w) - 1 - off) / d.stride_w + 1);
            for (uint32_t i = 0; i < oh; ++i) {
              int64_t iy = int64_t(i) * d.stride_h - d.pad_top + int64_t(r) * d.dil_h;
              if (iy < 0 || iy >= d.h) continue;
              const float* row = plane + iy * d.w;
              float* orow = out + size_t(i) * ow;
              for (int64_t j = lo; j < hi; ++j) orow[j] += wv * row[j * d.stride_w + off];
            }
          }
      }
    }
}

}  // namespace

void conv2d(std::span<const float> x, std::span<const float> w, std::span<const float> bias,
            std::span<const float> residual, std::span<float> y, const Conv2dDims& d, const ConvEpilogue& ep) {
  check_spans("conv2d", x, w, bias, residual, y, d, ep);
  if (d.c_in / d.groups * d.kh * d.kw >= kGemmMinTaps)
    conv_as_gemm(x, w, y, d);
  else
    conv_by_taps(x, w, y, d);
  apply_epilogue(bias, residual, y, d, ep);
}

void im2col(std::span<const float> x, std::span<float> col, const Conv2dDims& d, uint32_t g) {
  check(d);
  const uint32_t oh = d.out_h(), ow = d.out_w(), cin_g = d.c_in / d.groups;
  const uint64_t pix = uint64_t(oh) * ow, cols = pix * d.n;
  need("im2col", "x", x.size(), d.x_elements());
  need("im2col", "col", col.size(), cols * cin_g * d.kh * d.kw);
  if (g >= d.groups) throw Error("wgc: im2col: group " + std::to_string(g) + " of " + std::to_string(d.groups));
  for (uint32_t ci = 0; ci < cin_g; ++ci)
    for (uint32_t r = 0; r < d.kh; ++r)
      for (uint32_t c = 0; c < d.kw; ++c) {
        float* dst = &col[at(((uint64_t(ci) * d.kh + r) * d.kw + c) * cols)];
        for (uint32_t n = 0; n < d.n; ++n) {
          const float* plane = &x[at((uint64_t(n) * d.c_in + g * cin_g + ci) * d.h * d.w)];
          for (uint32_t i = 0; i < oh; ++i) {
            int64_t ih = int64_t(i) * d.stride_h - d.pad_top + int64_t(r) * d.dil_h;
            for (uint32_t j = 0; j < ow; ++j) {
              int64_t iw = int64_t(j) * d.stride_w - d.pad_left + int64_t(c) * d.dil_w;
              bool in = ih >= 0 && ih < d.h && iw >= 0 && iw < d.w;
              dst[at(n * pix + uint64_t(i) * ow + j)] = in ? plane[ih * d.w + iw] : 0.f;
            }
          }
        }
      }
}

void fold_batchnorm(std::span<float> weights, std::span<float> bias, std::span<const float> scale,
                    std::span<const float> b, std::span<const float> mean, std::span<const float> var, float eps,
                    uint32_t c_out) {
  if (c_out == 0 || weights.size() % c_out)
    throw Error("wgc: fold_batchnorm: " + std::to_string(weights.size()) + " weights are not " + std::to_string(c_out) +
                " equal rows");
  for (auto [name, n] : {std::pair{"bias", bias.size()}, std::pair{"scale", scale.size()}, std::pair{"B", b.size()},
                         std::pair{"mean", mean.size()}, std::pair{"var", var.size()}})
    if (n != c_out)
      throw Error(std::string("wgc: fold_batchnorm: ") + name + " has " + std::to_string(n) + " values, c_out is " +
                  std::to_string(c_out));
  size_t row = weights.size() / c_out;
  for (uint32_t co = 0; co < c_out; ++co) {
    double denom = double(var[co]) + double(eps);
    if (!(denom > 0))
      throw Error("wgc: fold_batchnorm: channel " + std::to_string(co) + ": var + epsilon = " + std::to_string(denom) +
                  " is not positive");
    double s = double(scale[co]) / std::sqrt(denom);
    for (size_t i = 0; i < row; ++i) weights[co * row + i] = static_cast<float>(weights[co * row + i] * s);
    bias[co] = static_cast<float>((double(bias[co]) - double(mean[co])) * s + double(b[co]));
  }
}

void pool2d(std::span<const float> x, std::span<float> y, const Pool2dDims& d, PoolKind kind) {
  check(d);
  need("pool2d", "x", x.size(), d.x_elements());
  need("pool2d", "y", y.size(), d.y_elements());
  const uint32_t oh = d.out_h(), ow = d.out_w();
  for (uint64_t plane = 0; plane < uint64_t(d.n) * d.c; ++plane) {
    const float* in = &x[at(plane * d.h * d.w)];
    float* out = &y[at(plane * oh * ow)];
    for (uint32_t i = 0; i < oh; ++i)
      for (uint32_t j = 0; j < ow; ++j) {
        double acc = kind == PoolKind::Max ? -double(std::numeric_limits<float>::max()) : 0.0;
        uint32_t count = 0, padded = 0;
        for (uint32_t r = 0; r < d.kh; ++r) {
          int64_t ih = int64_t(i) * d.stride_h - d.pad_top + int64_t(r) * d.dil_h;
          if (ih >= int64_t(d.h) + d.pad_bottom) continue;  // past the padded input (ceil mode)
          for (uint32_t c = 0; c < d.kw; ++c) {
            int64_t iw = int64_t(j) * d.stride_w - d.pad_left + int64_t(c) * d.dil_w;
            if (iw >= int64_t(d.w) + d.pad_right) continue;
            ++padded;
            if (ih < 0 || ih >= d.h || iw < 0 || iw >= d.w) continue;
            double v = in[ih * d.w + iw];
            acc = kind == PoolKind::Max ? std::max(acc, v) : acc + v;
            ++count;
          }
        }
        if (kind == PoolKind::Average) acc /= std::max(1u, d.count_include_pad ? padded : count);
        out[size_t(i) * ow + j] = static_cast<float>(acc);
      }
  }
}

void global_average_pool(std::span<const float> x, std::span<float> y, uint32_t n, uint32_t c, uint32_t hw) {
  if (hw == 0) throw Error("wgc: global_average_pool: an empty plane (hw 0)");
  need("global_average_pool", "x", x.size(), uint64_t(n) * c * hw);
  need("global_average_pool", "y", y.size(), uint64_t(n) * c);
  for (uint64_t p = 0; p < uint64_t(n) * c; ++p) {
    double acc = 0;
    for (uint32_t i = 0; i < hw; ++i) acc += x[at(p * hw + i)];
    y[at(p)] = static_cast<float>(acc / hw);
  }
}

}  // namespace cpu
}  // namespace wgc
