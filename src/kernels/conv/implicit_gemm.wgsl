// Implicit-GEMM convolution: per group, C[m][col] = sum_k A[m][k] * B[k][col] with
// m = output channel, col = (image, output pixel), k = (ci, r, c), where A is the weights in
// WT[group][k][m] layout (weights_kxm.wgsl) and B is gathered from x on the fly (no im2col
// buffer; zeros in the padding). Register-tiled like the SGEMM (matmul/regtile_main.wgsl): a
// workgroup computes a BM x BN block of C through BK-deep tiles in workgroup memory, each
// invocation an 8 x 8 block in registers, read from workgroup memory as vec4s. The epilogue is
// applied on the way out to y (NCHW). POINTWISE: 1x1, stride 1, no padding (B is x_n itself).
@group(0) @binding(0) var<storage, read> X: array<f32>;
@group(0) @binding(1) var<storage, read> WT: array<f32>;
@group(0) @binding(2) var<storage, read> Bias: array<f32>;
@group(0) @binding(3) var<storage, read> Res: array<f32>;
@group(0) @binding(4) var<storage, read_write> Y: array<f32>;
//!include "conv/params.wgsl"
@group(0) @binding(5) var<uniform> p: Params;  // aux0: blocks along m
//!include "conv/epilogue.wgsl"

override BM: u32 = 64u;   // a multiple of 64: THREADS >= BN, so each invocation loads one column of B
override BN: u32 = 128u;  // a multiple of 32
override BK: u32 = 8u;
override KH: u32 = 3u;
override KW: u32 = 3u;
override POINTWISE: bool = false;
const TM = 8u;
const TN = 8u;
override THREADS: u32 = (BM / TM) * (BN / TN);

var<workgroup> As: array<vec4<f32>, BK * BM / 4u>;  // [k][m/4]
var<workgroup> Bs: array<vec4<f32>, BK * BN / 4u>;  // [k][col/4]

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
  let hw = p.h * p.w;

  // This invocation's column of B for the loads: where its window starts in x.
  let bcol = tid % BN;
  let col = n0 + bcol;
  let col_ok = col < N;
  let img = min(col, N - 1u) / P;
  let pix = min(col, N - 1u) % P;
  let iy0 = i32((pix / p.ow) * p.stride_h) - i32(p.pad_top);
  let ix0 = i32((pix % p.ow) * p.stride_w) - i32(p.pad_left);
  let xbase = (img * p.c_in + g * p.cin_g) * hw;
  let a_base = g * K * M;

  let tm = tid / (BN / TN);
  let tn = tid % (BN / TN);
  var acc: array<vec4<f32>, 16>;  // acc[i * 2 + j]: row i of 8, column half j

  for (var k0 = 0u; k0 < K; k0 += BK) {
    for (var i = tid; i < BM * BK; i += THREADS) {
      let m = i % BM;
      let k = k0 + i / BM;
      var v = 0.0;
      if (m0 + m < M && k < K) { v = WT[a_base + k * M + m0 + m]; }
      As[(i / BM) * (BM / 4u) + m / 4u][m % 4u] = v;
    }
    for (var kl = tid / BN; kl < BK; kl += THREADS / BN) {
      let k = k0 + kl;
      var v = 0.0;
      if (col_ok && k < K) {
        if (POINTWISE) {
          v = X[xbase + k * hw + pix];
        } else {
          let ci = k / (KH * KW);
          let rs = k % (KH * KW);
          let iy = iy0 + i32((rs / KW) * p.dil_h);
          let ix = ix0 + i32((rs % KW) * p.dil_w);
          if (iy >= 0 && iy < i32(p.h) && ix >= 0 && ix < i32(p.w)) {
            v = X[xbase + ci * hw + u32(iy) * p.w + u32(ix)];
          }
        }
      }
      Bs[kl * (BN / 4u) + bcol / 4u][bcol % 4u] = v;
    }
    workgroupBarrier();
    for (var k = 0u; k < BK; k++) {
      let a0 = As[k * (BM / 4u) + tm];
      let a1 = As[k * (BM / 4u) + tm + BM / 8u];
      let b0 = Bs[k * (BN / 4u) + tn];
      let b1 = Bs[k * (BN / 4u) + tn + BN / 8u];
      let av = array<f32, 8>(a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w);
      for (var i = 0u; i < 8u; i++) {
        acc[i * 2u] = fma(vec4<f32>(av[i]), b0, acc[i * 2u]);
        acc[i * 2u + 1u] = fma(vec4<f32>(av[i]), b1, acc[i * 2u + 1u]);
      }
    }
    workgroupBarrier();
  }

  for (var j = 0u; j < 2u; j++) {
    for (var c = 0u; c < 4u; c++) {
      let cn = n0 + j * (BN / 2u) + tn * 4u + c;
      if (cn >= N) { continue; }
      let out_base = (cn / P) * p.c_out * P + cn % P;
      for (var i = 0u; i < 8u; i++) {
        let m = m0 + select(tm * 4u + i, BM / 2u + tm * 4u + (i - 4u), i >= 4u);
        if (m >= M) { continue; }
        let co = g * M + m;
        let yi = out_base + co * P;
        Y[yi] = epilogue(acc[i * 2u + j][c], co, yi);
      }
    }
  }
}
