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
constexpr uint32_t kMaxShflRows = 8;    // and its input rows with the halo from the lanes beside
constexpr uint64_t kMaxKSlices = 64;    // split K: partial sums kept per output at most,
constexpr uint64_t kMaxSplitFloats = uint64_t(1) << 24;  // and in all

using Constants = std::vector<std::pair<std::string, double>>;

// The tensors of one call; bias and residual are the caller's, or a dummy when unused. w is in
// the layout of the version that runs (weight_layout).
struct Operands {
  Tensor x, w, bias, res, y;
};

// How a version reads the weights: ONNX order, the GEMM kernels' WT[group][k][m]
// (weights_kxm.wgsl), or Winograd's UT[16][c_in][c_out] (winograd_weights.wgsl).
enum class WeightLayout { Onnx, KxM, Winograd };
WeightLayout weight_layout(Conv2dVersion v) {
  if (v == Conv2dVersion::ImplicitGemm || v == Conv2dVersion::Pointwise) return WeightLayout::KxM;
  if (v == Conv2dVersion::Winograd2x2) return WeightLayout::Winograd;
  return WeightLayout::Onnx;
}
// Winograd F(2x2, 3x3): kWinoTile outputs per side from kWinoAlpha inputs per side, kWinoAlpha^2
// GEMMs.
constexpr uint32_t kWinoTile = 2, kWinoAlpha = kWinoTile + 2;
uint64_t weight_elements(WeightLayout l, const Conv2dDims& d) {
  if (l == WeightLayout::Winograd) return uint64_t(kWinoAlpha) * kWinoAlpha * d.c_in * d.c_out;
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
  if (l == WeightLayout::KxM) {
    uint32_t k = d.c_in / d.groups * d.kh * d.kw;
    b.dispatch(compile(ctx, embedded_kernel("conv/weights_kxm.wgsl")), {w, out},
               Params(d.c_out, d.c_out / d.groups, k, d.kh * d.kw),
               groups_1d(ctx, ceil_div(d.w_elements(), kElementWg)));
  } else if (l == WeightLayout::Winograd) {
    Kernel k = compile(ctx, embedded_kernel("conv/winograd_weights.wgsl"));
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

// How the implicit GEMM reads x: any window, or 1x1 unpadded stride 1 (rows of x as they are).
enum class GemmInput { Nchw, NchwPointwise };

// What is wrong with a tile on this device (empty: nothing); see conv/gemm_main.wgsl.
std::string gemm_tile_error(const Context& ctx, GemmTile t) {
  if (t.tm != 4 && t.tm != 8) return "TM must be 4 or 8";
  if (t.bm == 0 || t.bn == 0 || t.bk == 0 || t.bm % (8 * t.tm) || t.bn % 8)
    return "BM must be a multiple of 8 * TM and BN of 8";
  uint32_t threads = t.bm / t.tm * (t.bn / 8);
  if (t.bm * t.bk % threads || t.bk * t.bn % threads || t.bm * t.bk / threads > 16 || t.bk * t.bn / threads > 16)
    return "each invocation must load a whole number, at most 16, of A and of B values per tile";
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
KSplit k_split(const Conv2dDims& d, GemmTile t, uint64_t blocks) {
  const ConvTuning& k = conv2d_tuning();
  uint32_t K = d.c_in / d.groups * d.kh * d.kw;
  if (!k.igemm_split_k || blocks >= k.igemm_min_workgroups || K < 2 * k.igemm_split_k) return {};
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
  if (std::string e = gemm_tile_error(ctx, t); !e.empty())
    throw Error("wgc: conv2d tuning: GEMM tile " + std::to_string(t.bm) + "x" + std::to_string(t.bn) + "x" +
                std::to_string(t.bk) + " TM " + std::to_string(t.tm) + ": " + e);
  uint32_t mblocks = ceil_div(d.c_out / d.groups, t.bm);
  uint64_t nblocks = ceil_div(uint64_t(d.n) * d.out_h() * d.out_w(), t.bn);
  KSplit split = k_split(d, t, mblocks * nblocks * d.groups);
  Groups g = groups_1d(ctx, mblocks * nblocks);
  g.z = d.groups * split.slices;
  Constants c{{"BM", t.bm},
              {"BN", t.bn},
              {"BK", t.bk},
              {"TM", t.tm},
              {"KH", d.kh},
              {"KW", d.kw},
              {"PREFETCH", t.prefetch},
              {"KSPLIT", split.slices},
              {"POINTWISE", in == GemmInput::NchwPointwise}};
  Kernel k = kernel(ctx, "conv/implicit_gemm.wgsl", ep, c);
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
WinogradTiles winograd_tiles(const Conv2dDims& d) {
  uint32_t tw = ceil_div(d.out_w(), kWinoTile), th = ceil_div(d.out_h(), kWinoTile);
  return {tw, tw * th, uint64_t(tw) * th * d.n};
}

// The 16 GEMMs M[xi] = U[xi] x V[xi] as one grouped 1x1 convolution: 16 groups of c_in -> c_out
// over an "image" of 1 x tiles pixels.
Conv2dDims winograd_gemm(const Conv2dDims& d) {
  uint32_t a2 = kWinoAlpha * kWinoAlpha;
  Conv2dDims g;
  g.n = 1, g.c_in = a2 * d.c_in, g.h = uint32_t(winograd_tiles(d).total), g.w = 1, g.c_out = a2 * d.c_out;
  g.groups = a2;
  return g;
}
GemmTile winograd_gemm_tile(const Conv2dDims& d) {
  const ConvTuning& k = conv2d_tuning();
  return gemm_tile({k.wino_bm, k.wino_bn, k.wino_bk, k.wino_tm, k.wino_prefetch != 0}, d.c_out, winograd_tiles(d).total,
                   kWinoAlpha * kWinoAlpha);
}

// Input transform, the 16 GEMMs, output transform with the epilogue (conv/winograd_*.wgsl).
void record_winograd(Batch& b, const Operands& o, const Conv2dDims& d, const ConvEpilogue& ep) {
  const Context& ctx = b.context();
  WinogradTiles wt = winograd_tiles(d);
  uint32_t tiles = uint32_t(wt.total), a2 = kWinoAlpha * kWinoAlpha;
  Tensor v = make_tensor(ctx, {a2, d.c_in, tiles}), m = make_tensor(ctx, {a2, d.c_out, tiles});
  b.dispatch(compile(ctx, embedded_kernel("conv/winograd_input.wgsl")), {o.x, v},
             conv_params(d, ep, wt.tiles_w, wt.per_image),
             groups_1d(ctx, ceil_div(uint64_t(d.c_in) * tiles, kElementWg)));
  record_implicit_gemm(b, {v, o.w, o.bias, o.res, m}, winograd_gemm(d), {}, GemmInput::NchwPointwise,
                       winograd_gemm_tile(d));
  b.dispatch(kernel(ctx, "conv/winograd_output.wgsl", ep), {m, o.bias, o.res, o.y},
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
  bool fits = t.dwr_cols && t.dwr_rows && uint64_t(t.dwr_cols) * t.dwr_rows <= kMaxRegOut && in_cols <= kMaxRegInCols &&
              d.kh * d.kw <= kMaxRowsTaps;
  bool vec4 = t.dwr_cols % 4 == 0 && d.stride_w == 1 && d.w % 4 == 0 && d.out_w() % 4 == 0;
  return {fits, vec4};
}

// Whether DepthwiseReg takes the columns left and right of a block's own vec4s from the lanes
// beside it (vec4 rows of 4 columns, a 3-column window from one column left of the block, at most
// kMaxShflRows input rows) on an adapter with subgroups of one size that divides the workgroup
// (whole subgroups: no shuffle from a lane that does not exist). H200, 144 x 56 x 56 x 32: 72.2%
// of the 1 GiB copy bandwidth against 69.8-70.2% loading them (docs/history/pruned.md).
bool reg_shfl(const Context& ctx, const Conv2dDims& d) {
  const ConvTuning& t = conv2d_tuning();
  const AdapterInfo& a = ctx.adapter();
  uint32_t in_rows = (t.dwr_rows - 1) * d.stride_h + (d.kh - 1) * d.dil_h + 1;
  return ctx.features().subgroups && a.subgroup_min_size == a.subgroup_max_size && a.subgroup_min_size >= 1 &&
         t.dwr_threads % a.subgroup_min_size == 0 && reg_block(d).vec4 && t.dwr_cols == 4 && d.pad_left == 1 &&
         (d.kw - 1) * d.dil_w == 2 && in_rows <= kMaxShflRows;
}

void record_depthwise_reg(Batch& b, const Operands& o, const Conv2dDims& d, const ConvEpilogue& ep) {
  const Context& ctx = b.context();
  const ConvTuning& t = conv2d_tuning();
  bool shfl = reg_shfl(ctx, d);
  Constants all = epilogue_constants(ep);
  Constants c = window_constants(d);
  all.insert(all.end(), c.begin(), c.end());
  // The layer's sizes as pipeline constants (index arithmetic by constants: 69.2% of the copy
  // bandwidth against 66% reading them from the uniform block, H200).
  all.insert(all.end(), {{"COLS", t.dwr_cols},
                         {"ROWS", t.dwr_rows},
                         {"THREADS", t.dwr_threads},
                         {"VEC4", reg_block(d).vec4},
                         {"PAD_L", d.pad_left},
                         {"SHFL", shfl},
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
  uint64_t invocations =
      uint64_t(d.n) * d.c_out * ceil_div(d.out_h(), t.dwr_rows) * uint64_t(ceil_div(d.out_w(), t.dwr_cols));
  // The shuffles' pipeline: subgroups enabled (their uniformity left to the kernel: invocations past
  // the last block run on, clamped), the lane functions appended; else their stand-ins.
  KernelCode code = embedded_kernel("conv/depthwise_reg.wgsl", all, shfl ? "main_sg" : "main");
  if (shfl) code.wgsl = "enable subgroups;\ndiagnostic(off, subgroup_uniformity);\n" + code.wgsl;
  code.wgsl += embedded_kernel(shfl ? "conv/depthwise_reg_lanes.wgsl" : "conv/depthwise_reg_nolanes.wgsl").wgsl;
  b.dispatch(compile(ctx, code), {o.x, o.w, o.bias, o.res, as_vec4(o.y), as_vec4(o.x)}, conv_params(d, ep),
             groups_1d(ctx, ceil_div(invocations, t.dwr_threads)));
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
    case Conv2dVersion::Winograd2x2: return record_winograd(b, o, d, ep);
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
                       {"dwr_threads", &t.dwr_threads}};
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
  auto gemm = [&](const char* name, GemmTile tile) {
    if (std::string e = gemm_tile_error(ctx, tile); !e.empty())
      bad += std::string(bad.empty() ? "" : "; ") + name + ": " + e;
  };
  gemm("igemm_*", {t.igemm_bm, t.igemm_bn, t.igemm_bk, t.igemm_tm, t.igemm_prefetch != 0});
  gemm("wino_*", {t.wino_bm, t.wino_bn, t.wino_bk, t.wino_tm, t.wino_prefetch != 0});
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
      !t.dwr_threads || t.dwr_threads > lim.max_compute_invocations_per_workgroup)
    bad += std::string(bad.empty() ? "" : "; ") +
           "dwr_*: dwr_cols and dwr_rows >= 1 with dwr_cols * dwr_rows <= " + std::to_string(kMaxRegOut) +
           ", dwr_threads in 1.." + std::to_string(lim.max_compute_invocations_per_workgroup);
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
      return d.kh == 3 && d.kw == 3 && d.stride_h == 1 && d.stride_w == 1 && d.dil_h == 1 && d.dil_w == 1 &&
             d.groups == 1 &&
             fits(uint64_t(kWinoAlpha) * kWinoAlpha * std::max(d.c_in, d.c_out) * winograd_tiles(d).total) &&
             gemm_tile_error(ctx, winograd_gemm_tile(d)).empty();
    case Conv2dVersion::DepthwiseRows:
      return d.depthwise() && d.kh * d.kw <= kMaxRowsTaps && t.dw_rows && t.dw_threads &&
             t.dw_threads <= lim.max_compute_invocations_per_workgroup;
    case Conv2dVersion::DepthwiseReg:
      return d.depthwise() && reg_block(d).fits && t.dwr_threads &&
             t.dwr_threads <= lim.max_compute_invocations_per_workgroup;
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
  // GPUs (H200: `wgc bench --ops conv2d,depthwise,winograd`, bench-cnn; docs/cnn.md): depthwise
  // layers are memory-bound: stride 1 runs depthwise-reg (72.2% of the copy bandwidth at 144ch
  // 56x56 N32, the tiled kernel 32.5%, depthwise-rows 26%), strided layers depthwise-rows (the
  // tiled kernel stages a 2x wider input tile; MobileNetV2 at batch 64 took 11,525 -> 13,261
  // GPU-only img/s with this rule against the tiled kernel at stride 1, 13,032 with depthwise-reg
  // everywhere); the tiled kernel takes what neither can run (more than 25 taps). 1x1 layers are
  // plain GEMMs; 3x3 stride-1 layers with enough channels for the GEMMs to be compute-bound do
  // 2.25x fewer multiplications as Winograd F(2x2, 3x3); everything else is the implicit GEMM.
  if (d.depthwise()) {
    bool strided = d.stride_h > 1 || d.stride_w > 1;
    if (strided && supports(ctx, Conv2dVersion::DepthwiseRows, d)) return Conv2dVersion::DepthwiseRows;
    if (supports(ctx, Conv2dVersion::DepthwiseReg, d)) return Conv2dVersion::DepthwiseReg;
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

}  // namespace wgc
