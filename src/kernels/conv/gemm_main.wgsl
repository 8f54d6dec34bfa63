// Body of the implicit-GEMM convolution (included by implicit_gemm.wgsl, which gathers B from
// NCHW tensors): per group g (the grid's z), C[m][col] = sum_k A[m][k] *
// B[k][col] with m = output channel, col = (image, output pixel), k = (input channel, tap) in the
// includer's order. A is the weights in WT[group][k][m] layout (weights_kxm.wgsl); B is
// gathered from x on the fly by the includer (no im2col buffer). Register-tiled like the SGEMM
// (matmul/regtile_main.wgsl): a workgroup computes a BM x BN block of C through BK-deep tiles
// in workgroup memory, each invocation a TM x 8 block in registers, read as vec4s.
//
// The includer declares X, WT, Bias, Res, Y, p (conv/params.wgsl, aux0: blocks along m) and the
// epilogue, KH and KW, and provides:
//   init_b(tid, col, col_ok, g)  where this invocation's column of B (it always loads the same
//                                one: THREADS is a multiple of BN) reads x from
//   load_b(k0)                   its B values of the tile at k0 into registers
//   stage_b(tid)                 those registers into Bs[k][col]
//   y_index(col, co)             where output channel co of column col goes in y
//   y_co_stride()                y_index(col, co + 1) - y_index(col, co)
// Split K (KSPLIT > 1, for grids too small to fill the GPU: few output pixels, long K): the grid's z
// is group * KSPLIT + slice, each slice sums k in [slice * p.aux1, +p.aux1) (a multiple of BK) and
// writes its raw sums to Y[slice * p.aux2 + y_index] (Y is then a scratch buffer);
// splitk_reduce.wgsl adds the slices and applies the epilogue.
// The host (ops/conv.cpp, gemm_tile_error) keeps the constants consistent: BM a multiple of
// 8 * TM (so THREADS is a multiple of BN), BN of 8, BM * BK and BK * BN multiples of THREADS
// with at most 16 values of each per invocation.
override BM: u32 = 64u;
override BN: u32 = 128u;
override BK: u32 = 8u;
override TM: u32 = 8u;  // rows per invocation: 8 (two vec4s BM / 2 apart) or 4
const TN = 8u;          // columns per invocation: two vec4s BN / 2 apart
override THREADS: u32 = (BM / TM) * (BN / TN);
// Issue the next tile's global loads right after the barrier, before this tile's math, so that
// their latency hides behind it (as the vec4-prefetch SGEMM rung does).
override PREFETCH: bool = false;
override NA: u32 = BM * BK / THREADS;  // A values loaded per invocation per tile
override KSPLIT: u32 = 1u;

var<workgroup> As: array<vec4<f32>, BK * BM / 4u>;  // [k][m/4]
var<workgroup> Bs: array<vec4<f32>, BK * BN / 4u>;  // [k][col/4]

var<private> ra: array<f32, 16>;  // this invocation's A values of the next tile
struct ABlock {
  tid: u32,
  m0: u32,    // first row of the block
  base: u32,  // the group's weights in WT
}
var<private> la: ABlock;

fn load_a(k0: u32) {
  let M = p.cout_g;
  let K = p.cin_g * KH * KW;
  for (var j = 0u; j < NA; j++) {
    let i = la.tid + j * THREADS;
    let m = la.m0 + i % BM;
    let k = k0 + i / BM;
    ra[j] = select(0.0, WT[la.base + min(k, K - 1u) * M + min(m, M - 1u)], m < M && k < K);
  }
}

fn load_tile(k0: u32) {
  load_a(k0);
  load_b(k0);
}

@compute @workgroup_size(THREADS)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) tid: u32) {
  let blk = wid.x + wid.y * nwg.x;  // m blocks vary fastest: workgroups running together share columns of B
  let m0 = (blk % p.aux0) * BM;
  let n0 = (blk / p.aux0) * BN;
  let g = wid.z / KSPLIT;
  let slice = wid.z % KSPLIT;
  let M = p.cout_g;
  let N = p.n * p.oh * p.ow;
  let K = p.cin_g * KH * KW;
  var k_begin = 0u;
  var k_end = K;
  if (KSPLIT > 1u) {
    k_begin = slice * p.aux1;
    k_end = min(K, k_begin + p.aux1);
  }
  la = ABlock(tid, m0, g * K * M);
  init_b(tid, min(n0 + tid % BN, N - 1u), n0 + tid % BN < N, g);

  let tm = tid / (BN / TN);
  let tn = tid % (BN / TN);
  var acc: array<vec4<f32>, 16>;  // acc[i * 2 + j]: row i of TM, column half j

  if (PREFETCH) { load_tile(k_begin); }
  for (var k0 = k_begin; k0 < k_end; k0 += BK) {
    if (!PREFETCH) { load_tile(k0); }
    for (var j = 0u; j < NA; j++) {
      let i = tid + j * THREADS;
      As[(i / BM) * (BM / 4u) + (i % BM) / 4u][i % 4u] = ra[j];
    }
    stage_b(tid);
    workgroupBarrier();
    if (PREFETCH && k0 + BK < k_end) { load_tile(k0 + BK); }
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
      let ycol = y_index(cn, 0u);  // the column's divisions once, not per row
      for (var i = 0u; i < TM; i++) {
        let m = m0 + select(tm * 4u + i, BM / 2u + tm * 4u + (i - 4u), i >= 4u);
        if (m >= M) { continue; }
        let co = g * M + m;
        let yi = ycol + co * y_co_stride();
        if (KSPLIT > 1u) {
          Y[slice * p.aux2 + yi] = acc[i * 2u + j][c];
        } else {
          Y[yi] = epilogue(acc[i * 2u + j][c], co, yi);
        }
      }
    }
  }
}
