#include "ops/conv.h"

#include "cpu/conv.h"
#include "gpu/kernel.h"
#include "ops/matmul.h"
#include "util/error.h"
#include "util/knobs.h"

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <string>

namespace wgc {
namespace {

constexpr uint32_t kElementWg = 256;    // one-invocation-per-element kernels (direct, transforms, im2col)
constexpr uint32_t kMaxCob = 16;        // direct_tiled.wgsl's accumulator array
constexpr uint32_t kMaxRowsTaps = 25;   // depthwise_rows.wgsl's and depthwise_reg.wgsl's filter registers
constexpr uint32_t kMaxRegOut = 64;     // depthwise_reg.wgsl's accumulators (dwr_cols * dwr_rows)
constexpr uint32_t kMaxRegInCols = 32;  // and its input row registers
constexpr uint32_t kMaxRegPlanes = 4;   // and its planes per invocation (dwr_planes)
constexpr uint32_t kMaxStageLoads = 8;  // depthwise_reg.wgsl's staged loads per invocation
constexpr uint32_t kMaxShflRows = 8;    // and its input rows with the halo from the lanes beside (dwr_shfl)
constexpr uint32_t kMaxNhwcOut = 16;    // depthwise_nhwc.wgsl's accumulators (dwn_cols * dwn_rows)
constexpr uint64_t kMaxKSlices = 64;    // split K: partial sums kept per output at most,
constexpr uint64_t kMaxSplitFloats = uint64_t(1) << 24;  // and in all

using Constants = std::vector<std::pair<std::string, double>>;

// The tensors of one call; bias and residual are the caller's, or a dummy when unused. w is in
// the layout of the version that runs (weight_layout).
struct Operands {
  Tensor x, w, bias, res, y;
};

// How a version reads the weights: ONNX order, the GEMM kernels' WT[group][k][m]
// (weights_kxm.wgsl; k ordered (tap, channel) for the NHWC kernel), or Winograd's
// UT[16][c_in][c_out] (winograd_weights.wgsl).
enum class WeightLayout { Onnx, KxM, KxMTapMajor, Winograd2, Winograd4 };
WeightLayout weight_layout(Conv2dVersion v) {
  if (v == Conv2dVersion::ImplicitGemm || v == Conv2dVersion::Pointwise) return WeightLayout::KxM;
  if (v == Conv2dVersion::Winograd2x2) return WeightLayout::Winograd2;
  if (v == Conv2dVersion::Winograd4x4) return WeightLayout::Winograd4;
  return WeightLayout::Onnx;
}
// Winograd F(tile x tile, 3x3): tile 2 or 4 outputs per side, alpha = tile + 2 inputs per side,
// alpha^2 GEMMs.
uint32_t winograd_alpha(uint32_t tile) { return tile + 2; }
uint64_t weight_elements(WeightLayout l, const Conv2dDims& d) {
  if (l == WeightLayout::Winograd2 || l == WeightLayout::Winograd4) {
    uint64_t a = winograd_alpha(l == WeightLayout::Winograd2 ? 2 : 4);
    return a * a * d.c_in * d.c_out;
  }
  return d.w_elements();
}

Params conv_params(const Conv2dDims& d, const ConvEpilogue& ep, uint32_t aux0 = 0, uint32_t aux1 = 0,
                   uint32_t aux2 = 0) {
  float lo = ep.clip_min, hi = ep.clip_max;
  if (ep.act == Activation::Relu6) lo = 0, hi = 6;
  return Params(d.n, d.c_in, d.h, d.w, d.c_out, d.out_h(), d.out_w(), d.groups, d.kh, d.kw, d.stride_h, d.stride_w,
                d.dil_h, d.dil_w, d.pad_top, d.pad_left, d.c_in / d.groups, d.c_out / d.groups, lo, hi, aux0, aux1,
                aux2, 0u);
}

Constants epilogue_constants(const ConvEpilogue& ep) {
  uint32_t act = ep.act == Activation::None ? 0 : ep.act == Activation::Relu ? 1 : 2;
  return {{"HAS_BIAS", ep.bias ? 1 : 0}, {"HAS_RESIDUAL", ep.residual ? 1 : 0}, {"ACT", act}};
}

// A kernel with the epilogue's constants and more.
Kernel kernel(const Context& ctx, const char* file, const ConvEpilogue& ep, const Constants& more = {}) {
  Constants c = epilogue_constants(ep);
  c.insert(c.end(), more.begin(), more.end());
  return compile(ctx, embedded_kernel(file, c));
}

// The kernel size, stride and dilation as override constants (unrolled tap loops).
Constants window_constants(const Conv2dDims& d) {
  return {{"KH", d.kh}, {"KW", d.kw}, {"SH", d.stride_h}, {"SW", d.stride_w}, {"DH", d.dil_h}, {"DW", d.dil_w}};
}

std::string where(const Conv2dDims& d) { return "wgc: conv2d " + d.str() + ": "; }

void need(const Tensor& t, uint64_t elems, const char* name, const Conv2dDims& d) {
  if (!t) throw Error(where(d) + name + " is an empty tensor");
  if (t.dtype() != DType::F32) throw Error(where(d) + name + " must be f32, got " + std::string(to_string(t.dtype())));
  if (t.capacity() < elems * 4)
    throw Error(where(d) + name + " holds " + std::to_string(t.capacity() / 4) + " floats, needs " +
                std::to_string(elems));
}

Operands operands(const Context& ctx, const Tensor& x, const Tensor& w, uint64_t w_elems, const Tensor& bias,
                  const Tensor& residual, const Tensor& y, const Conv2dDims& d, const ConvEpilogue& ep) {
  check(d);
  need(x, d.x_elements(), "x", d);
  need(w, w_elems, "the weights", d);
  need(y, d.y_elements(), "y", d);
  if (ep.bias) need(bias, d.c_out, "bias", d);
  if (ep.residual) need(residual, d.y_elements(), "residual", d);
  if (y.buffer() == x.buffer() || y.buffer() == w.buffer() || (ep.bias && y.buffer() == bias.buffer()) ||
      (ep.residual && y.buffer() == residual.buffer()))
    throw Error(where(d) + "y must not share a buffer with x, the weights, the bias or the residual");
  Tensor dummy;
  if (!ep.bias || !ep.residual) dummy = make_tensor(ctx, {4});
  return {x, w, ep.bias ? bias : dummy, ep.residual ? residual : dummy, y};
}

Conv2dVersion resolve(const Context& ctx, Conv2dVersion v, const Conv2dDims& d) {
  if (v == Conv2dVersion::Auto) return choose_conv2d(ctx, d);
  if (!supports(ctx, v, d)) throw Error(where(d) + "version " + std::string(to_string(v)) + " cannot run these dims");
  return v;
}

// --- weight transforms ---------------------------------------------------------------------

// Records the ONNX-order weights w into `out` in layout l (nothing to do for Onnx).
void record_weight_transform(Batch& b, WeightLayout l, const Tensor& w, const Tensor& out, const Conv2dDims& d) {
  const Context& ctx = b.context();
  if (l == WeightLayout::KxM || l == WeightLayout::KxMTapMajor) {
    uint32_t k = d.c_in / d.groups * d.kh * d.kw;
    b.dispatch(compile(ctx, embedded_kernel("conv/weights_kxm.wgsl", {{"TAP_MAJOR", l == WeightLayout::KxMTapMajor}})),
               {w, out}, Params(d.c_out, d.c_out / d.groups, k, d.kh * d.kw),
               groups_1d(ctx, ceil_div(d.w_elements(), kElementWg)));
  } else if (l == WeightLayout::Winograd2 || l == WeightLayout::Winograd4) {
    Kernel k =
        compile(ctx, embedded_kernel("conv/winograd_weights.wgsl", {{"TILE", l == WeightLayout::Winograd2 ? 2 : 4}}));
    b.dispatch(k, {w, out}, Params(d.c_out, d.c_in), groups_1d(ctx, ceil_div(uint64_t(d.c_out) * d.c_in, kElementWg)));
  }
}

// --- the versions (o.w in the version's layout) ----------------------------------------------

void record_direct(Batch& b, const Operands& o, const Conv2dDims& d, const ConvEpilogue& ep) {
  const Context& ctx = b.context();
  b.dispatch(kernel(ctx, "conv/direct.wgsl", ep), {o.x, o.w, o.bias, o.res, o.y}, conv_params(d, ep),
             groups_1d(ctx, ceil_div(d.y_elements(), kElementWg)));
}

// DirectTiled's workgroup memory: tiled_cin input planes of the tile with its halo, and their
// filters for tiled_cout output channels (the knobs are >= 1: supports checks).
uint64_t direct_tile_bytes(const Conv2dDims& d) {
  const ConvTuning& t = conv2d_tuning();
  uint64_t in_h = uint64_t(t.tiled_h - 1) * d.stride_h + uint64_t(d.kh - 1) * d.dil_h + 1;
  uint64_t in_w = uint64_t(t.tiled_w - 1) * d.stride_w + uint64_t(d.kw - 1) * d.dil_w + 1;
  return 4 * (t.tiled_cin * in_h * in_w + uint64_t(t.tiled_cout) * t.tiled_cin * d.kh * d.kw);
}

void record_direct_tiled(Batch& b, const Operands& o, const Conv2dDims& d, const ConvEpilogue& ep) {
  const Context& ctx = b.context();
  const ConvTuning& t = conv2d_tuning();
  Constants c = window_constants(d);
  c.insert(c.end(), {{"TILE_W", t.tiled_w}, {"TILE_H", t.tiled_h}, {"COB", t.tiled_cout}, {"CIB", t.tiled_cin}});
  uint64_t tiles = uint64_t(ceil_div(d.out_w(), t.tiled_w)) * ceil_div(d.out_h(), t.tiled_h);
  uint64_t blocks = uint64_t(d.n) * d.groups * ceil_div(d.c_out / d.groups, t.tiled_cout) * tiles;
  b.dispatch(kernel(ctx, "conv/direct_tiled.wgsl", ep, c), {o.x, o.w, o.bias, o.res, o.y}, conv_params(d, ep),
             groups_1d(ctx, blocks));
}

// Per group: im2col into a [k][n * pixels] buffer, the project's SGEMM (ops/matmul.h) with the
// group's weight rows (copied out when there are several groups), then gemm_scatter.wgsl writes
// y through the epilogue. The buffers are reused by every group (dispatches run in order).
void record_im2col_gemm(Batch& b, const Operands& o, const Conv2dDims& d, const ConvEpilogue& ep) {
  const Context& ctx = b.context();
  uint32_t cout_g = d.c_out / d.groups, k = d.c_in / d.groups * d.kh * d.kw;
  uint32_t cols = d.n * d.out_h() * d.out_w();
  Tensor col = make_tensor(ctx, {k, cols}), c = make_tensor(ctx, {cout_g, cols});
  Tensor wg = d.groups == 1 ? o.w : make_tensor(ctx, {cout_g, k});
  Kernel unfold = compile(ctx, embedded_kernel("conv/im2col.wgsl"));
  Kernel scatter = kernel(ctx, "conv/gemm_scatter.wgsl", ep);
  for (uint32_t g = 0; g < d.groups; ++g) {
    b.dispatch(unfold, {o.x, col}, conv_params(d, ep, g), groups_1d(ctx, ceil_div(uint64_t(k) * cols, kElementWg)));
    if (d.groups > 1) b.copy(o.w, uint64_t(g) * cout_g * k * 4, wg, 0, uint64_t(cout_g) * k * 4);
    matmul(b, wg, col, c, MatmulDims{cout_g, cols, k, false});
    b.dispatch(scatter, {c, o.bias, o.res, o.y}, conv_params(d, ep, g),
               groups_1d(ctx, ceil_div(uint64_t(cout_g) * cols, kElementWg)));
  }
}

struct GemmTile {
  uint32_t bm, bn, bk, tm;
  bool prefetch;
};

// How the implicit GEMM reads x: NCHW (any window), NCHW 1x1 unpadded stride 1 (rows of x as they
// are), NHWC (vec4s of 4 channels).
enum class GemmInput { Nchw, NchwPointwise, Nhwc };

// What is wrong with a tile on this device (empty: nothing); see conv/gemm_main.wgsl.
std::string gemm_tile_error(const Context& ctx, GemmTile t, GemmInput in = GemmInput::Nchw) {
  if (t.tm != 4 && t.tm != 8) return "TM must be 4 or 8";
  if (t.bm == 0 || t.bn == 0 || t.bk == 0 || t.bm % (8 * t.tm) || t.bn % 8)
    return "BM must be a multiple of 8 * TM and BN of 8";
  uint32_t threads = t.bm / t.tm * (t.bn / 8);
  if (t.bm * t.bk % threads || t.bk * t.bn % threads || t.bm * t.bk / threads > 16 || t.bk * t.bn / threads > 16)
    return "each invocation must load a whole number, at most 16, of A and of B values per tile";
  if (in == GemmInput::Nhwc && (t.bk % 4 || t.bk * t.bn / 4 % threads || t.bk * t.bn / 4 / threads > 4))
    return "NHWC loads B as vec4s: BK a multiple of 4, BK * BN / 4 a multiple of the invocations, at most 4 each";
  const Limits& lim = ctx.limits();
  if (threads > lim.max_compute_invocations_per_workgroup)
    return std::to_string(threads) + " invocations exceed the device's " +
           std::to_string(lim.max_compute_invocations_per_workgroup);
  if (4ull * t.bk * (t.bm + t.bn) > lim.max_compute_workgroup_storage_size)
    return "the tiles exceed the device's workgroup memory";
  return "";
}

// The tile for a GEMM of m rows (per group) by n columns: the knobs, narrowed for few rows or a
// grid too small to fill the GPU (ConvTuning).
GemmTile gemm_tile(GemmTile t, uint32_t m, uint64_t n, uint32_t groups) {
  if (m <= 32 && t.bm == 64 && t.tm == 8) t.bm = 32, t.tm = 4;
  auto blocks = [&](uint32_t bn) { return uint64_t(ceil_div(m, t.bm)) * ceil_div(n, bn) * groups; };
  while (t.bn > 32 && blocks(t.bn) < conv2d_tuning().igemm_min_workgroups && 8ull * t.tm * t.bk / (t.bn / 2) <= 16 &&
         (8ull * t.tm * t.bk) % (t.bn / 2) == 0)
    t.bn /= 2;
  return t;
}

GemmTile igemm_tile(const Conv2dDims& d) {
  const ConvTuning& k = conv2d_tuning();
  return gemm_tile({k.igemm_bm, k.igemm_bn, k.igemm_bk, k.igemm_tm, k.igemm_prefetch != 0}, d.c_out / d.groups,
                   uint64_t(d.n) * d.out_h() * d.out_w(), d.groups);
}

// Split K: how many slices of how many k each, when the grid has fewer workgroups than
// igemm_min_workgroups and K is long enough to give each slice igemm_split_k values (0: never).
// A 960 -> 160 1x1 layer at 7x7, batch 1, is 6 workgroups of a 960-long loop without it.
struct KSplit {
  uint32_t slices = 1, chunk = 0;
};
KSplit k_split(const Conv2dDims& d, GemmTile t, uint64_t blocks, GemmInput in) {
  const ConvTuning& k = conv2d_tuning();
  uint32_t K = d.c_in / d.groups * d.kh * d.kw;
  if (in == GemmInput::Nhwc || !k.igemm_split_k || blocks >= k.igemm_min_workgroups || K < 2 * k.igemm_split_k)
    return {};
  uint64_t want = std::min<uint64_t>(ceil_div(k.igemm_min_workgroups, blocks), K / k.igemm_split_k);
  want = std::min<uint64_t>({want, kMaxKSlices, kMaxSplitFloats / std::max<uint64_t>(d.y_elements(), 1)});
  if (want < 2) return {};
  uint32_t chunk = uint32_t(uint64_t(ceil_div(ceil_div(K, want), t.bk)) * t.bk);
  uint32_t slices = ceil_div(K, chunk);
  if (slices < 2) return {};
  return {slices, chunk};
}

void record_implicit_gemm(Batch& b, const Operands& o, const Conv2dDims& d, const ConvEpilogue& ep, GemmInput in,
                          GemmTile t) {
  const Context& ctx = b.context();
  if (std::string e = gemm_tile_error(ctx, t, in); !e.empty())
    throw Error("wgc: conv2d tuning: GEMM tile " + std::to_string(t.bm) + "x" + std::to_string(t.bn) + "x" +
                std::to_string(t.bk) + " TM " + std::to_string(t.tm) + ": " + e);
  uint32_t mblocks = ceil_div(d.c_out / d.groups, t.bm);
  uint64_t nblocks = ceil_div(uint64_t(d.n) * d.out_h() * d.out_w(), t.bn);
  KSplit split = k_split(d, t, mblocks * nblocks * d.groups, in);
  Groups g = groups_1d(ctx, mblocks * nblocks);
  g.z = d.groups * split.slices;
  Constants c{{"BM", t.bm},
              {"BN", t.bn},
              {"BK", t.bk},
              {"TM", t.tm},
              {"KH", d.kh},
              {"KW", d.kw},
              {"PREFETCH", t.prefetch},
              {"KSPLIT", split.slices}};
  if (in != GemmInput::Nhwc) c.push_back({"POINTWISE", in == GemmInput::NchwPointwise});
  Kernel k = kernel(ctx, in == GemmInput::Nhwc ? "conv/implicit_gemm_nhwc.wgsl" : "conv/implicit_gemm.wgsl", ep, c);
  if (split.slices == 1) {
    b.dispatch(k, {o.x, o.w, o.bias, o.res, o.y}, conv_params(d, ep, mblocks), g);
    return;
  }
  uint64_t total = d.y_elements();
  Tensor part = make_tensor(ctx, {int64_t(total * split.slices)});
  b.dispatch(k, {o.x, o.w, o.bias, o.res, part}, conv_params(d, ep, mblocks, split.chunk, uint32_t(total)), g);
  b.dispatch(kernel(ctx, "conv/splitk_reduce.wgsl", ep), {part, o.bias, o.res, o.y},
             conv_params(d, ep, 0, split.slices, uint32_t(total)), groups_1d(ctx, ceil_div(total, kElementWg)));
}

// The output tiles of a Winograd layer: tiles_w per row.
struct WinogradTiles {
  uint32_t tiles_w, per_image;
  uint64_t total;
};
WinogradTiles winograd_tiles(const Conv2dDims& d, uint32_t tile) {
  uint32_t tw = ceil_div(d.out_w(), tile), th = ceil_div(d.out_h(), tile);
  return {tw, tw * th, uint64_t(tw) * th * d.n};
}

// The alpha^2 GEMMs M[xi] = U[xi] x V[xi] as one grouped 1x1 convolution: alpha^2 groups of
// c_in -> c_out over an "image" of 1 x tiles pixels.
Conv2dDims winograd_gemm(const Conv2dDims& d, uint32_t tile) {
  uint32_t a2 = winograd_alpha(tile) * winograd_alpha(tile);
  Conv2dDims g;
  g.n = 1, g.c_in = a2 * d.c_in, g.h = uint32_t(winograd_tiles(d, tile).total), g.w = 1, g.c_out = a2 * d.c_out;
  g.groups = a2;
  return g;
}
GemmTile winograd_gemm_tile(const Conv2dDims& d, uint32_t tile) {
  const ConvTuning& k = conv2d_tuning();
  uint32_t a = winograd_alpha(tile);
  return gemm_tile({k.wino_bm, k.wino_bn, k.wino_bk, k.wino_tm, k.wino_prefetch != 0}, d.c_out,
                   winograd_tiles(d, tile).total, a * a);
}

// Input transform, the alpha^2 GEMMs, output transform with the epilogue (conv/winograd_*.wgsl).
void record_winograd(Batch& b, const Operands& o, const Conv2dDims& d, const ConvEpilogue& ep, uint32_t tile) {
  const Context& ctx = b.context();
  WinogradTiles wt = winograd_tiles(d, tile);
  uint32_t tiles = uint32_t(wt.total), a2 = winograd_alpha(tile) * winograd_alpha(tile);
  Tensor v = make_tensor(ctx, {a2, d.c_in, tiles}), m = make_tensor(ctx, {a2, d.c_out, tiles});
  b.dispatch(compile(ctx, embedded_kernel("conv/winograd_input.wgsl", {{"TILE", tile}})), {o.x, v},
             conv_params(d, ep, wt.tiles_w, wt.per_image),
             groups_1d(ctx, ceil_div(uint64_t(d.c_in) * tiles, kElementWg)));
  record_implicit_gemm(b, {v, o.w, o.bias, o.res, m}, winograd_gemm(d, tile), {}, GemmInput::NchwPointwise,
                       winograd_gemm_tile(d, tile));
  b.dispatch(kernel(ctx, "conv/winograd_output.wgsl", ep, {{"TILE", tile}}), {m, o.bias, o.res, o.y},
             conv_params(d, ep, wt.tiles_w, wt.per_image),
             groups_1d(ctx, ceil_div(uint64_t(d.c_out) * tiles, kElementWg)));
}

// Depthwise: the output tile per workgroup, cut to the plane.
struct DepthwiseTile {
  uint32_t h, w;
  uint64_t bytes;  // workgroup memory: the input tile with halo, and the filter
};
// The knobs are the largest tile; the plane is cut into equal tiles no larger (56 wide with a
// 64-wide knob: one tile of whole rows, where 32 made two of which the second was 3/4 empty).
DepthwiseTile depthwise_tile(const Conv2dDims& d) {
  const ConvTuning& t = conv2d_tuning();
  uint32_t th = ceil_div(d.out_h(), ceil_div(d.out_h(), std::max(t.dw_tile_h, 1u)));
  uint32_t tw = ceil_div(d.out_w(), ceil_div(d.out_w(), std::max(t.dw_tile_w, 1u)));
  uint64_t in_h = uint64_t(th - 1) * d.stride_h + uint64_t(d.kh - 1) * d.dil_h + 1;
  uint64_t in_w = uint64_t(tw - 1) * d.stride_w + uint64_t(d.kw - 1) * d.dil_w + 1;
  return {th, tw, 4 * (in_h * in_w + uint64_t(d.kh) * d.kw)};
}

void record_depthwise_rows(Batch& b, const Operands& o, const Conv2dDims& d, const ConvEpilogue& ep) {
  const Context& ctx = b.context();
  uint32_t rows = conv2d_tuning().dw_rows, threads = conv2d_tuning().dw_threads;
  Constants c = window_constants(d);
  c.insert(c.end(), {{"ROWS", rows}, {"THREADS", threads}});
  uint64_t invocations = uint64_t(d.n) * d.c_out * ceil_div(d.out_h(), rows) * d.out_w();
  b.dispatch(kernel(ctx, "conv/depthwise_rows.wgsl", ep, c), {o.x, o.w, o.bias, o.res, o.y}, conv_params(d, ep),
             groups_1d(ctx, ceil_div(invocations, threads)));
}

// DepthwiseReg's block: whether it fits the kernel's registers, and whether rows move as vec4s.
struct RegBlock {
  bool fits, vec4;
};
RegBlock reg_block(const Conv2dDims& d) {
  const ConvTuning& t = conv2d_tuning();
  uint64_t in_cols = uint64_t(t.dwr_cols - 1) * d.stride_w + uint64_t(d.kw - 1) * d.dil_w + 1;
  uint64_t planes = t.dwr_planes;  // the registers hold every plane's block, row and taps
  bool fits = t.dwr_cols && t.dwr_rows && planes >= 1 && planes <= kMaxRegPlanes &&
              planes * t.dwr_cols * t.dwr_rows <= kMaxRegOut && planes * in_cols <= kMaxRegInCols &&
              planes * d.kh * d.kw <= kMaxRowsTaps;
  bool vec4 = t.dwr_vec4 && t.dwr_cols % 4 == 0 && d.stride_w == 1 && d.w % 4 == 0 && d.out_w() % 4 == 0;
  return {fits, vec4};
}

// DepthwiseReg's dwr_shfl: whether the columns left and right of a block's own vec4s come from the
// lanes beside it (one plane, vec4 rows of 4 columns, a 3-column window from one column left of
// the block, at most kMaxShflRows input rows, unstaged, no grid) on an adapter with subgroups of
// one size that divides the workgroup (whole subgroups: no shuffle from a lane that does not
// exist).
bool reg_shfl(const Context& ctx, const Conv2dDims& d) {
  const ConvTuning& t = conv2d_tuning();
  const AdapterInfo& a = ctx.adapter();
  uint32_t in_rows = (t.dwr_rows - 1) * d.stride_h + (d.kh - 1) * d.dil_h + 1;
  return t.dwr_shfl && ctx.features().subgroups && a.subgroup_min_size == a.subgroup_max_size &&
         a.subgroup_min_size >= 1 && t.dwr_threads % a.subgroup_min_size == 0 && reg_block(d).vec4 && t.dwr_cols == 4 &&
         t.dwr_planes == 1 && !t.dwr_stage && !t.dwr_grid && d.pad_left == 1 && (d.kw - 1) * d.dil_w == 2 &&
         in_rows <= kMaxShflRows;
}

// DepthwiseReg staged (dwr_stage): a workgroup takes `band` strips of whole rows of a plane and
// stages their tile_rows input rows in workgroup memory.
struct RegStage {
  uint32_t band = 0;  // 0: not staged (the knob off, rows not vec4, or a row past the limits)
  uint32_t threads = 0, tile_rows = 0;
};
RegStage reg_stage(const Context& ctx, const Conv2dDims& d) {
  const ConvTuning& t = conv2d_tuning();
  if (!t.dwr_stage || !reg_block(d).vec4) return {};
  const Limits& lim = ctx.limits();
  uint32_t blocks_w = ceil_div(d.out_w(), t.dwr_cols), strips = ceil_div(d.out_h(), t.dwr_rows);
  // The largest band that dwr_threads allow, then equal bands no larger (28 strips with room for
  // 9: four bands of 7, not three of 9 and one of 1).
  uint32_t most = std::min(std::max(t.dwr_threads / blocks_w, 1u), strips);
  for (uint32_t band = ceil_div(strips, ceil_div(strips, most)); band >= 1; --band) {
    uint32_t tile_rows = (band * t.dwr_rows - 1) * d.stride_h + (d.kh - 1) * d.dil_h + 1;
    uint64_t threads = uint64_t(band) * blocks_w, vec4s = uint64_t(tile_rows) * (d.w / 4);
    if (threads <= lim.max_compute_invocations_per_workgroup && vec4s * 16 <= lim.max_compute_workgroup_storage_size &&
        ceil_div(vec4s, threads) <= kMaxStageLoads)
      return {band, band * blocks_w, tile_rows};
  }
  return {};
}

void record_depthwise_reg(Batch& b, const Operands& o, const Conv2dDims& d, const ConvEpilogue& ep) {
  const Context& ctx = b.context();
  const ConvTuning& t = conv2d_tuning();
  Constants c = window_constants(d);
  bool vec4 = reg_block(d).vec4;
  RegStage stage = reg_stage(ctx, d);
  c.insert(c.end(), {{"COLS", t.dwr_cols},
                     {"ROWS", t.dwr_rows},
                     {"THREADS", stage.band ? stage.threads : t.dwr_threads},
                     {"VEC4", vec4},
                     {"PAD_L", d.pad_left},
                     {"HALO_SCALAR", vec4 && t.dwr_halo}});
  if (stage.band)
    c.insert(c.end(), {{"STAGE", 1}, {"BAND", stage.band}, {"W4", d.w / 4}, {"TILE_ROWS", stage.tile_rows}});
  // Planes per invocation and the card-sized grid: unstaged blocks only; a layer with fewer blocks
  // than the grid's invocations gets one workgroup per dwr_threads blocks, as without it.
  uint32_t planes = stage.band ? 1 : t.dwr_planes;
  uint64_t invocations = ceil_div(uint64_t(d.n) * d.c_out, planes) * uint64_t(ceil_div(d.out_h(), t.dwr_rows)) *
                         ceil_div(d.out_w(), t.dwr_cols);
  uint32_t grid = stage.band ? 0 : uint32_t(std::min<uint64_t>(t.dwr_grid, ceil_div(invocations, t.dwr_threads)));
  bool shfl = reg_shfl(ctx, d);
  c.insert(c.end(), {{"PLANES", planes},
                     {"GRID", grid},
                     {"CHUNKED", grid && t.dwr_chunked},
                     {"EARLY", t.dwr_early == 1 || (t.dwr_early == 2 && !(shfl && t.dwr_shfl == 1))},
                     {"SHFL", shfl && t.dwr_shfl == 1}});
  if (t.dwr_shape)  // only then: the pipelines of the uniform version are shared between shapes
    c.insert(c.end(), {{"SHAPE", 1},
                       {"L_CIN", d.c_in},
                       {"L_COUT", d.c_out},
                       {"L_H", d.h},
                       {"L_W", d.w},
                       {"L_OH", d.out_h()},
                       {"L_OW", d.out_w()},
                       {"L_PAD_T", d.pad_top}});
  // y and the second binding of x as vec4 arrays: whole vec4s (buffers are: make_tensor rounds their
  // size up to 16 bytes), so that y's last elements are inside the array.
  auto as_vec4 = [](const Tensor& tensor) {
    uint64_t bytes = std::max<uint64_t>(16, (tensor.bytes() + 15) / 16 * 16);
    return Arg(tensor, 0, std::min(bytes, tensor.capacity() / 16 * 16));
  };
  uint64_t workgroups = stage.band ? uint64_t(d.n) * d.c_out * ceil_div(ceil_div(d.out_h(), t.dwr_rows), stage.band)
                                   : ceil_div(invocations, t.dwr_threads);
  // The grid walks blocks by u32 indices that may pass the last block by a grid's worth.
  if (grid && invocations + uint64_t(grid) * t.dwr_threads > 0xffffffffull)
    throw LimitError("wgc: conv2d: depthwise-reg's dwr_grid walk of " + std::to_string(invocations) +
                     " blocks exceeds the kernel's 32-bit index (" + d.str() + ")");
  // The shuffles' pipeline: subgroups enabled (their uniformity left to the kernel: invocations past
  // the last block run on, clamped), the lane functions appended; else their stand-ins.
  Constants all = epilogue_constants(ep);
  all.insert(all.end(), c.begin(), c.end());
  KernelCode code = embedded_kernel("conv/depthwise_reg.wgsl", all, shfl ? "main_sg" : "main");
  if (shfl) code.wgsl = "enable subgroups;\ndiagnostic(off, subgroup_uniformity);\n" + code.wgsl;
  code.wgsl += embedded_kernel(shfl ? "conv/depthwise_reg_lanes.wgsl" : "conv/depthwise_reg_nolanes.wgsl").wgsl;
  b.dispatch(compile(ctx, code), {o.x, o.w, o.bias, o.res, as_vec4(o.y), as_vec4(o.x)}, conv_params(d, ep),
             grid ? Groups{grid, 1, 1} : groups_1d(ctx, workgroups));
}

void record_depthwise(Batch& b, const Operands& o, const Conv2dDims& d, const ConvEpilogue& ep) {
  const Context& ctx = b.context();
  DepthwiseTile tile = depthwise_tile(d);
  Constants c = window_constants(d);
  c.insert(c.end(), {{"TILE_H", tile.h}, {"TILE_W", tile.w}, {"THREADS", conv2d_tuning().dw_threads}});
  uint64_t blocks = uint64_t(d.n) * d.c_out * ceil_div(d.out_h(), tile.h) * ceil_div(d.out_w(), tile.w);
  b.dispatch(kernel(ctx, "conv/depthwise.wgsl", ep, c), {o.x, o.w, o.bias, o.res, o.y}, conv_params(d, ep),
             groups_1d(ctx, blocks));
}

void record(Batch& b, Conv2dVersion v, const Operands& o, const Conv2dDims& d, const ConvEpilogue& ep) {
  switch (v) {
    case Conv2dVersion::Direct: return record_direct(b, o, d, ep);
    case Conv2dVersion::DirectTiled: return record_direct_tiled(b, o, d, ep);
    case Conv2dVersion::Im2colGemm: return record_im2col_gemm(b, o, d, ep);
    case Conv2dVersion::ImplicitGemm: return record_implicit_gemm(b, o, d, ep, GemmInput::Nchw, igemm_tile(d));
    case Conv2dVersion::Pointwise: return record_implicit_gemm(b, o, d, ep, GemmInput::NchwPointwise, igemm_tile(d));
    case Conv2dVersion::Winograd2x2: return record_winograd(b, o, d, ep, 2);
    case Conv2dVersion::Winograd4x4: return record_winograd(b, o, d, ep, 4);
    case Conv2dVersion::Depthwise: return record_depthwise(b, o, d, ep);
    case Conv2dVersion::DepthwiseRows: return record_depthwise_rows(b, o, d, ep);
    case Conv2dVersion::DepthwiseReg: return record_depthwise_reg(b, o, d, ep);
    case Conv2dVersion::Auto: break;
  }
  throw Error(where(d) + "no kernel for version auto");
}

}  // namespace

ConvTuning parse_conv2d_tuning(std::string_view knobs, ConvTuning t) {
  const Knob keys[] = {{"igemm_bm", &t.igemm_bm},
                       {"igemm_bn", &t.igemm_bn},
                       {"igemm_bk", &t.igemm_bk},
                       {"igemm_tm", &t.igemm_tm},
                       {"igemm_prefetch", &t.igemm_prefetch},
                       {"igemm_min_workgroups", &t.igemm_min_workgroups},
                       {"igemm_split_k", &t.igemm_split_k},
                       {"wino_bm", &t.wino_bm},
                       {"wino_bn", &t.wino_bn},
                       {"wino_bk", &t.wino_bk},
                       {"wino_tm", &t.wino_tm},
                       {"wino_prefetch", &t.wino_prefetch},
                       {"tiled_w", &t.tiled_w},
                       {"tiled_h", &t.tiled_h},
                       {"tiled_cout", &t.tiled_cout},
                       {"tiled_cin", &t.tiled_cin},
                       {"dw_tile_w", &t.dw_tile_w},
                       {"dw_tile_h", &t.dw_tile_h},
                       {"dw_threads", &t.dw_threads},
                       {"dw_rows", &t.dw_rows},
                       {"dwr_cols", &t.dwr_cols},
                       {"dwr_rows", &t.dwr_rows},
                       {"dwr_threads", &t.dwr_threads},
                       {"dwr_vec4", &t.dwr_vec4},
                       {"dwr_halo", &t.dwr_halo},
                       {"dwr_shape", &t.dwr_shape},
                       {"dwr_stage", &t.dwr_stage},
                       {"dwr_planes", &t.dwr_planes},
                       {"dwr_grid", &t.dwr_grid},
                       {"dwr_chunked", &t.dwr_chunked},
                       {"dwr_early", &t.dwr_early},
                       {"dwr_shfl", &t.dwr_shfl},
                       {"dwn_cols", &t.dwn_cols},
                       {"dwn_rows", &t.dwn_rows},
                       {"dwn_threads", &t.dwn_threads},
                       {"dw_auto", &t.dw_auto}};
  parse_knobs(knobs, keys, ',', "conv2d");
  return t;
}

namespace {
ConvTuning tuning_from_env() {
  const char* env = std::getenv("WGC_CONV_TUNING");
  try {
    return parse_conv2d_tuning(env ? env : "");
  } catch (const Error& e) {
    throw Error(std::string(e.what()) + " (in WGC_CONV_TUNING)");
  }
}

}  // namespace

ConvTuning& conv2d_tuning() {
  static ConvTuning t = tuning_from_env();
  return t;
}

void check_conv2d_tuning(const Context& ctx) {
  const ConvTuning& t = conv2d_tuning();
  std::string bad;
  auto gemm = [&](const char* name, GemmTile tile, GemmInput in) {
    if (std::string e = gemm_tile_error(ctx, tile, in); !e.empty())
      bad += std::string(bad.empty() ? "" : "; ") + name + ": " + e;
  };
  gemm("igemm_*", {t.igemm_bm, t.igemm_bn, t.igemm_bk, t.igemm_tm, t.igemm_prefetch != 0}, GemmInput::Nchw);
  gemm("wino_*", {t.wino_bm, t.wino_bn, t.wino_bk, t.wino_tm, t.wino_prefetch != 0}, GemmInput::Nchw);
  const Limits& lim = ctx.limits();
  if (!t.tiled_w || !t.tiled_h || !t.tiled_cin || !t.tiled_cout || t.tiled_cout > kMaxCob ||
      uint64_t(t.tiled_w) * t.tiled_h > lim.max_compute_invocations_per_workgroup)
    bad += std::string(bad.empty() ? "" : "; ") +
           "tiled_*: sizes must be >= 1, tiled_cout <= 16, tiled_w * tiled_h <= " +
           std::to_string(lim.max_compute_invocations_per_workgroup);
  if (!t.dw_tile_w || !t.dw_tile_h || !t.dw_threads || !t.dw_rows ||
      t.dw_threads > lim.max_compute_invocations_per_workgroup)
    bad += std::string(bad.empty() ? "" : "; ") + "dw_*: sizes and rows must be >= 1, dw_threads <= " +
           std::to_string(lim.max_compute_invocations_per_workgroup);
  if (!t.dwr_cols || !t.dwr_rows || uint64_t(t.dwr_cols) * t.dwr_rows > kMaxRegOut || t.dwr_cols > kMaxRegInCols ||
      !t.dwr_threads || t.dwr_threads > lim.max_compute_invocations_per_workgroup || t.dwr_vec4 > 1 || t.dwr_halo > 1 ||
      t.dwr_shape > 1 || t.dwr_stage > 1 || !t.dwr_planes || t.dwr_planes > kMaxRegPlanes ||
      uint64_t(t.dwr_planes) * t.dwr_cols * t.dwr_rows > kMaxRegOut ||
      t.dwr_grid > lim.max_compute_workgroups_per_dimension || t.dwr_chunked > 1 || t.dwr_early > 2 || t.dwr_shfl > 2 ||
      t.dw_auto > 4)
    bad += std::string(bad.empty() ? "" : "; ") + "dwr_*: dwr_cols and dwr_rows >= 1 with dwr_planes * dwr_cols * " +
           "dwr_rows <= " + std::to_string(kMaxRegOut) + ", dwr_planes in 1.." + std::to_string(kMaxRegPlanes) +
           ", dwr_threads in 1.." + std::to_string(lim.max_compute_invocations_per_workgroup) + ", dwr_grid in 0.." +
           std::to_string(lim.max_compute_workgroups_per_dimension) +
           ", dwr_vec4, dwr_halo, dwr_shape, dwr_stage and dwr_chunked 0 or 1; dwr_early and dwr_shfl 0..2; "
           "dw_auto 0..4";
  if (!t.dwn_cols || !t.dwn_rows || uint64_t(t.dwn_cols) * t.dwn_rows > kMaxNhwcOut || t.dwn_cols > kMaxRegInCols ||
      !t.dwn_threads || t.dwn_threads > lim.max_compute_invocations_per_workgroup)
    bad += std::string(bad.empty() ? "" : "; ") +
           "dwn_*: dwn_cols and dwn_rows >= 1 with dwn_cols * dwn_rows <= " + std::to_string(kMaxNhwcOut) +
           ", dwn_threads in 1.." + std::to_string(lim.max_compute_invocations_per_workgroup);
  if (!bad.empty()) throw Error("wgc: conv2d tuning: " + bad);
}

std::string_view to_string(Conv2dVersion v) {
  switch (v) {
    case Conv2dVersion::Auto: return "auto";
    case Conv2dVersion::Direct: return "direct";
    case Conv2dVersion::DirectTiled: return "direct-tiled";
    case Conv2dVersion::Im2colGemm: return "im2col-gemm";
    case Conv2dVersion::ImplicitGemm: return "implicit-gemm";
    case Conv2dVersion::Winograd2x2: return "winograd2x2";
    case Conv2dVersion::Winograd4x4: return "winograd4x4";
    case Conv2dVersion::Depthwise: return "depthwise";
    case Conv2dVersion::DepthwiseRows: return "depthwise-rows";
    case Conv2dVersion::DepthwiseReg: return "depthwise-reg";
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
  const Limits& lim = ctx.limits();
  // Scratch buffers (im2col's columns, Winograd's transforms) must fit one binding and u32 indexing.
  auto fits = [&](uint64_t floats) {
    return floats < std::min<uint64_t>(lim.max_storage_buffer_binding_size / 4, uint64_t(1) << 31);
  };
  const ConvTuning& t = conv2d_tuning();
  uint64_t pixels = uint64_t(d.n) * d.out_h() * d.out_w();
  switch (v) {
    case Conv2dVersion::Auto:
    case Conv2dVersion::Direct: return true;
    case Conv2dVersion::ImplicitGemm: return gemm_tile_error(ctx, igemm_tile(d)).empty();
    case Conv2dVersion::DirectTiled: {
      if (!t.tiled_w || !t.tiled_h || !t.tiled_cout || !t.tiled_cin) return false;
      return direct_tile_bytes(d) <= lim.max_compute_workgroup_storage_size && t.tiled_cout <= kMaxCob &&
             uint64_t(t.tiled_w) * t.tiled_h <= lim.max_compute_invocations_per_workgroup;
    }
    case Conv2dVersion::Im2colGemm: return fits(uint64_t(d.c_in / d.groups) * d.kh * d.kw * pixels);
    case Conv2dVersion::Pointwise: return d.pointwise() && gemm_tile_error(ctx, igemm_tile(d)).empty();
    case Conv2dVersion::Winograd2x2:
    case Conv2dVersion::Winograd4x4: {
      uint32_t tile = v == Conv2dVersion::Winograd2x2 ? 2 : 4, alpha = winograd_alpha(tile);
      return d.kh == 3 && d.kw == 3 && d.stride_h == 1 && d.stride_w == 1 && d.dil_h == 1 && d.dil_w == 1 &&
             d.groups == 1 &&
             fits(uint64_t(alpha) * alpha * std::max(d.c_in, d.c_out) * winograd_tiles(d, tile).total) &&
             gemm_tile_error(ctx, winograd_gemm_tile(d, tile)).empty();
    }
    case Conv2dVersion::DepthwiseRows:
      return d.depthwise() && d.kh * d.kw <= kMaxRowsTaps && t.dw_rows && t.dw_threads &&
             t.dw_threads <= lim.max_compute_invocations_per_workgroup;
    case Conv2dVersion::DepthwiseReg:
      return d.depthwise() && reg_block(d).fits && t.dwr_threads &&
             t.dwr_threads <= lim.max_compute_invocations_per_workgroup &&
             t.dwr_grid <= lim.max_compute_workgroups_per_dimension;
    case Conv2dVersion::Depthwise:
      return d.depthwise() && t.dw_tile_w && t.dw_tile_h && t.dw_threads &&
             depthwise_tile(d).bytes <= lim.max_compute_workgroup_storage_size &&
             t.dw_threads <= lim.max_compute_invocations_per_workgroup;
  }
  return false;
}

Conv2dVersion choose_conv2d(const Context& ctx, const Conv2dDims& d) {
  if (ctx.adapter().is_cpu()) {
    // SwiftShader (`wgc bench --ops conv2d,depthwise,winograd` on the 2-core machine, docs/cnn.md):
    // workgroup barriers are slow there, so the direct kernel beat the tiled ones (depthwise:
    // direct 32 ms vs 62 for the depthwise kernel at 32ch 56x56); 3x3 stride-1 layers ran fastest
    // as Winograd (131-159 ms vs 182 direct, 226-291 implicit GEMM at 32ch 28x28), 1x1 layers as
    // the pointwise GEMM (44 ms vs 106 direct).
    if (d.pointwise() && supports(ctx, Conv2dVersion::Pointwise, d)) return Conv2dVersion::Pointwise;
    if (supports(ctx, Conv2dVersion::Winograd2x2, d) && d.c_in >= 16 && d.c_out >= 16)
      return Conv2dVersion::Winograd2x2;
    return Conv2dVersion::Direct;
  }
  // GPUs (rules to be confirmed on the H200 with the bench's anchor layers, docs/cnn.md):
  // depthwise layers are memory-bound, and the depthwise kernel reads each input value from
  // memory once (the plane tile in workgroup memory) with coalesced rows; 1x1 layers are plain
  // GEMMs; 3x3 stride-1 layers with enough channels for the GEMMs to be compute-bound do 2.25x
  // fewer multiplications as Winograd F(2x2, 3x3); everything else is the implicit GEMM.
  // Depthwise on the H200 (`wgc bench --ops depthwise`, bench-cnn, docs/cnn.md): stride 1 runs
  // the tiled kernel (34.6% of the copy bandwidth at 144ch 56x56 N32, depthwise-rows 26.6-34%);
  // strided layers the rows kernel (the tiled one stages a 2x wider input tile, 15 loads per
  // invocation before its barrier; MobileNetV2 at batch 64 took 4.88 ms of GPU time with every
  // depthwise layer as depthwise-rows against 5.51 with them all tiled).
  // depthwise-reg (each input row loaded once into registers, vec4 rows) runs at 60.8% of the copy
  // bandwidth at that shape (H200, 2026-12-01 21:0x, main 0fb1de0), and MobileNetV2 with it at
  // stride 1 and depthwise-rows where strided (ConvTuning::dw_auto = 4, now kGpuDepthwiseRule)
  // took 11,525 -> 13,261 GPU-only img/s at batch 64 (952 -> 955 at batch 1); with its sizes as
  // pipeline constants (dwr_shape=1, session 6) 69.2% at that shape. `bench-cnn` under
  // WGC_CONV_TUNING=dw_auto=N compares the rules on a whole network.
  if (d.depthwise()) {
    const Conv2dVersion every[] = {Conv2dVersion::Auto, Conv2dVersion::Depthwise, Conv2dVersion::DepthwiseRows,
                                   Conv2dVersion::DepthwiseReg};
    uint32_t rule = conv2d_tuning().dw_auto;
    if (rule > 0 && rule < std::size(every) && supports(ctx, every[rule], d)) return every[rule];
    bool strided = d.stride_h > 1 || d.stride_w > 1;
    if (strided && supports(ctx, Conv2dVersion::DepthwiseRows, d)) return Conv2dVersion::DepthwiseRows;
    if (rule == 4 && supports(ctx, Conv2dVersion::DepthwiseReg, d)) return Conv2dVersion::DepthwiseReg;
    if (supports(ctx, Conv2dVersion::Depthwise, d)) return Conv2dVersion::Depthwise;
  }
  if (d.pointwise() && supports(ctx, Conv2dVersion::Pointwise, d)) return Conv2dVersion::Pointwise;
  if (supports(ctx, Conv2dVersion::Winograd2x2, d) && d.c_in >= 32 && d.c_out >= 32) return Conv2dVersion::Winograd2x2;
  if (supports(ctx, Conv2dVersion::ImplicitGemm, d)) return Conv2dVersion::ImplicitGemm;
  return Conv2dVersion::Direct;
}

void conv2d(Batch& batch, const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& residual, const Tensor& y,
            const Conv2dDims& d, const ConvEpilogue& ep, Conv2dVersion v) {
  const Context& ctx = batch.context();
  Operands o = operands(ctx, x, w, d.w_elements(), bias, residual, y, d, ep);
  v = resolve(ctx, v, d);
  WeightLayout l = weight_layout(v);
  if (l != WeightLayout::Onnx) {
    o.w = make_tensor(ctx, {int64_t(weight_elements(l, d))});
    record_weight_transform(batch, l, w, o.w, d);
  }
  record(batch, v, o, d, ep);
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
  v = resolve(ctx, v, d);
  PreparedConv p{d, v, make_tensor(ctx, {int64_t(weights.size())}, weights), {}};
  if (WeightLayout l = weight_layout(v); l != WeightLayout::Onnx) {
    Tensor t = make_tensor(ctx, {int64_t(weight_elements(l, d))});
    Batch b(ctx);
    record_weight_transform(b, l, p.weights, t, d);
    b.run();
    p.weights = t;
  }
  if (!bias.empty()) p.bias = make_tensor(ctx, {int64_t(bias.size())}, bias);
  return p;
}

void conv2d(Batch& batch, const PreparedConv& layer, const Tensor& x, const Tensor& residual, const Tensor& y,
            const ConvEpilogue& ep) {
  const Conv2dDims& d = layer.dims;
  if (layer.version == Conv2dVersion::Auto) throw Error(where(d) + "the prepared layer has no version (auto)");
  if (!supports(batch.context(), layer.version, d))  // the tuning may have changed since
    throw Error(where(d) + "version " + std::string(to_string(layer.version)) + " cannot run these dims");
  ConvEpilogue e = ep;
  e.bias = bool(layer.bias);
  Operands o = operands(batch.context(), x, layer.weights, weight_elements(weight_layout(layer.version), d), layer.bias,
                        residual, y, d, e);
  record(batch, layer.version, o, d, e);
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
      throw Error(where(d) + name + " holds " + std::to_string(s.size()) + " values, needs " + std::to_string(want));
    return make_tensor(ctx, {int64_t(want)}, s.first(want));
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

// --- the NHWC experiment -----------------------------------------------------------------------

bool supports_conv2d_nhwc(const Context& ctx, const Conv2dDims& d) {
  return d.c_in % 4 == 0 && (d.c_in / d.groups) % 4 == 0 &&
         gemm_tile_error(ctx, igemm_tile(d), GemmInput::Nhwc).empty();
}

Tensor prepare_conv2d_nhwc_weights(const Context& ctx, std::span<const float> w, const Conv2dDims& d) {
  check(d);
  if (w.size() != d.w_elements())
    throw Error(where(d) + std::to_string(w.size()) + " weights, needs " + std::to_string(d.w_elements()));
  Tensor onnx = make_tensor(ctx, {int64_t(w.size())}, w), t = make_tensor(ctx, {int64_t(w.size())});
  Batch b(ctx);
  record_weight_transform(b, WeightLayout::KxMTapMajor, onnx, t, d);
  b.run();
  return t;
}

void conv2d_nhwc(Batch& batch, const Tensor& x, const Tensor& prepared_w, const Tensor& bias, const Tensor& residual,
                 const Tensor& y, const Conv2dDims& d, const ConvEpilogue& ep) {
  Operands o = operands(batch.context(), x, prepared_w, d.w_elements(), bias, residual, y, d, ep);
  if (!supports_conv2d_nhwc(batch.context(), d))
    throw Error(where(d) +
                "the NHWC implicit GEMM needs c_in and c_in / groups to be multiples of 4 (and a tile that "
                "loads B as vec4s)");
  record_implicit_gemm(batch, o, d, ep, GemmInput::Nhwc, igemm_tile(d));
}

bool supports_depthwise_nhwc(const Context& ctx, const Conv2dDims& d) {
  const ConvTuning& t = conv2d_tuning();
  uint64_t in_cols = uint64_t(t.dwn_cols - 1) * d.stride_w + uint64_t(d.kw - 1) * d.dil_w + 1;
  return d.depthwise() && d.c_out == d.c_in && d.c_in % 4 == 0 && t.dwn_cols && t.dwn_rows &&
         uint64_t(t.dwn_cols) * t.dwn_rows <= kMaxNhwcOut && in_cols <= kMaxRegInCols && t.dwn_threads &&
         t.dwn_threads <= ctx.limits().max_compute_invocations_per_workgroup;
}

Tensor prepare_depthwise_nhwc_weights(const Context& ctx, std::span<const float> w, const Conv2dDims& d) {
  check(d);
  if (w.size() != d.w_elements())
    throw Error(where(d) + std::to_string(w.size()) + " weights, needs " + std::to_string(d.w_elements()));
  const uint64_t taps = uint64_t(d.kh) * d.kw;
  std::vector<float> t(w.size());  // [c][1][kh][kw] -> [kh][kw][c]
  for (uint64_t c = 0; c < d.c_out; ++c)
    for (uint64_t k = 0; k < taps; ++k) t[k * d.c_out + c] = w[c * taps + k];
  return make_tensor(ctx, {int64_t(t.size())}, t);
}

void depthwise_nhwc(Batch& batch, const Tensor& x, const Tensor& prepared_w, const Tensor& bias, const Tensor& residual,
                    const Tensor& y, const Conv2dDims& d, const ConvEpilogue& ep) {
  const Context& ctx = batch.context();
  Operands o = operands(ctx, x, prepared_w, d.w_elements(), bias, residual, y, d, ep);
  if (!supports_depthwise_nhwc(ctx, d))
    throw Error(where(d) +
                "the NHWC depthwise kernel needs a depthwise convolution with multiplier 1, c_in a multiple of 4 "
                "and a block (dwn_*) that fits its registers");
  const ConvTuning& t = conv2d_tuning();
  Constants c = window_constants(d);
  c.insert(c.end(), {{"COLS", t.dwn_cols}, {"ROWS", t.dwn_rows}, {"THREADS", t.dwn_threads}});
  uint64_t invocations =
      uint64_t(d.n) * (d.c_in / 4) * ceil_div(d.out_h(), t.dwn_rows) * ceil_div(d.out_w(), t.dwn_cols);
  batch.dispatch(kernel(ctx, "conv/depthwise_nhwc.wgsl", ep, c), {o.x, o.w, o.bias, o.res, o.y}, conv_params(d, ep),
                 groups_1d(ctx, ceil_div(invocations, t.dwn_threads)));
}

}  // namespace wgc
