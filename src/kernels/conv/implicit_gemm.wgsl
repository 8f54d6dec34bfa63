// Implicit-GEMM convolution: per group, C[m][col] = sum_k A[m][k] * B[k][col] with
// m = output channel, col = (image, output pixel), k = (ci, r, c), where A is the weights in
// WT[group][k][m] layout (weights_kxm.wgsl) and B is gathered from x on the fly (no im2col
// buffer; zeros in the padding). Register-tiled like the SGEMM (matmul/regtile_main.wgsl): a
// workgroup computes a BM x BN block of C through BK-deep tiles in workgroup memory, each
// invocation a TM x 8 block in registers, read from workgroup memory as vec4s. The epilogue is
// applied on the way out to y (NCHW). POINTWISE: 1x1, stride 1, no padding (B is x_n itself).
@group(0) @binding(0) var<storage, read> X: array<f32>;
@group(0) @binding(1) var<storage, read> WT: array<f32>;
@group(0) @binding(2) var<storage, read> Bias: array<f32>;
@group(0) @binding(3) var<storage, read> Res: array<f32>;
@group(0) @binding(4) var<storage, read_write> Y: array<f32>;
//!include "conv/params.wgsl"
@group(0) @binding(5) var<uniform> p: Params;  // aux0: blocks along m
//!include "conv/epilogue.wgsl"

// The host (ops/conv.cpp, gemm_tile_error) keeps these consistent: BM a multiple of 8 * TM (so
// THREADS is a multiple of BN: each invocation loads one column of B), BN of 8, and BM * BK and
// BK * BN multiples of THREADS with at most 16 of each per invocation.
override BM: u32 = 64u;
override BN: u32 = 128u;
override BK: u32 = 8u;
override TM: u32 = 8u;  // rows per invocation: 8 (two vec4s BM / 2 apart) or 4
const TN = 8u;          // columns per invocation: two vec4s BN / 2 apart
override THREADS: u32 = (BM / TM) * (BN / TN);
override KH: u32 = 3u;
override KW: u32 = 3u;
override POINTWISE: bool = false;
// Issue the next tile's global loads right after the barrier, before this tile's math, so that
// their latency hides behind it (as the vec4-prefetch SGEMM rung does).
override PREFETCH: bool = false;
override NA: u32 = BM * BK / THREADS;  // A values loaded per invocation per tile
override NB: u32 = BK * BN / THREADS;  // B values likewise

var<workgroup> As: array<vec4<f32>, BK * BM / 4u>;  // [k][m/4]
var<workgroup> Bs: array<vec4<f32>, BK * BN / 4u>;  // [k][col/4]

// Per invocation: the loads of one tile (NA values of A, NB of B), and where they come from.
var<private> ra: array<f32, 16>;
var<private> rb: array<f32, 16>;
struct Loader {
  tid: u32,
  m0: u32,     // first row of the block
  a_base: u32, // the group's weights in WT
  col_ok: bool,
  pix: u32,    // this invocation's column of B: output pixel in its image,
  xbase: u32,  // the image's (and group's) first input plane,
  iy0: i32,    // and where its window starts
  ix0: i32,
}
var<private> ld: Loader;

fn load_tile(k0: u32) {
  let M = p.cout_g;
  let K = p.cin_g * KH * KW;
  for (var j = 0u; j < NA; j++) {
    let i = ld.tid + j * THREADS;
    let m = ld.m0 + i % BM;
    let k = k0 + i / BM;
    ra[j] = select(0.0, WT[ld.a_base + min(k, K - 1u) * M + min(m, M - 1u)], m < M && k < K);
  }
  for (var j = 0u; j < NB; j++) {
    let k = k0 + ld.tid / BN + j * (THREADS / BN);
    var v = 0.0;
    if (ld.col_ok && k < K) {
      if (POINTWISE) {
        v = X[ld.xbase + k * p.h * p.w + ld.pix];
      } else {
        let rs = k % (KH * KW);
        let iy = ld.iy0 + i32((rs / KW) * p.dil_h);
        let ix = ld.ix0 + i32((rs % KW) * p.dil_w);
        if (iy >= 0 && iy < i32(p.h) && ix >= 0 && ix < i32(p.w)) {
          v = X[ld.xbase + (k / (KH * KW)) * p.h * p.w + u32(iy) * p.w + u32(ix)];
        }
      }
    }
    rb[j] = v;
  }
}

@compute @workgroup_size(THREADS)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) tid: u32) {
  let blk = wid.x + wid.y * nwg.x;  // m blocks vary fastest: workgroups running together share columns of B
  let m0 = (blk % p.aux0) * BM;
  let n0 = (blk / p.aux0) * BN;
  let g = wid.z;
  let M = p.cout_g;
  let P = p.oh * p.ow;
  let N = p.n * P;
  let K = p.cin_g * KH * KW;

  let bcol = tid % BN;
  let col = min(n0 + bcol, N - 1u);
  let pix = col % P;
  ld = Loader(tid, m0, g * K * M, n0 + bcol < N, pix, ((col / P) * p.c_in + g * p.cin_g) * p.h * p.w,
              i32((pix / p.ow) * p.stride_h) - i32(p.pad_top), i32((pix % p.ow) * p.stride_w) - i32(p.pad_left));

  let tm = tid / (BN / TN);
  let tn = tid % (BN / TN);
  var acc: array<vec4<f32>, 16>;  // acc[i * 2 + j]: row i of TM, column half j

  if (PREFETCH) { load_tile(0u); }
  for (var k0 = 0u; k0 < K; k0 += BK) {
    if (!PREFETCH) { load_tile(k0); }
    for (var j = 0u; j < NA; j++) {
      let i = tid + j * THREADS;
      As[(i / BM) * (BM / 4u) + (i % BM) / 4u][i % 4u] = ra[j];
    }
    for (var j = 0u; j < NB; j++) {
      let kl = tid / BN + j * (THREADS / BN);
      Bs[kl * (BN / 4u) + bcol / 4u][bcol % 4u] = rb[j];
    }
    workgroupBarrier();
    if (PREFETCH && k0 + BK < K) { load_tile(k0 + BK); }
  for (var k = 0u; k < BK; k++) {
      let b0 = Bs[k * (BN / 4u) + tn];
      let b1 = Bs[k * (BN / 4u) + tn + BN / 8u];
      let a0 = As[k * (BM / 4u) + tm];
      for (var i = 0u; i < 4u; i++) {
        acc[i * 2u] = fma(vec4<f32>(a0[i]), b0, acc[i * 2u]);
        acc[i * 2u + 1u] = fma(vec4<f32>(a0[i]), b1, acc[i * 2u + 1u]);
      }
      if (TM == 8u) {
        let a1 = As[k * (BM / 4u) + tm + BM / 8u];
        for (var i = 0u; i < 4u; i++) {
          acc[8u + i * 2u] = fma(vec4<f32>(a1[i]), b0, acc[8u + i * 2u]);
          acc[9u + i * 2u] = fma(vec4<f32>(a1[i]), b1, acc[9u + i * 2u]);
        }
      }
    }
    workgroupBarrier();
  }

  for (var j = 0u; j < 2u; j++) {
    for (var c = 0u; c < 4u; c++) {
      let cn = n0 + j * (BN / 2u) + tn * 4u + c;
      if (cn >= N) { continue; }
      let out_base = (cn / P) * p.c_out * P + cn % P;
      for (var i = 0u; i < TM; i++) {
        let m = m0 + select(tm * 4u + i, BM / 2u + tm * 4u + (i - 4u), i >= 4u);
        if (m >= M) { continue; }
        let co = g * M + m;
        let yi = out_base + co * P;
        Y[yi] = epilogue(acc[i * 2u + j][c], co, yi);
      }
    }
  }
}
