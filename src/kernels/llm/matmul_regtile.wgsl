// Matrix-matrix (prefill, n tokens), register-tiled: y[t, y_off + r] = sum_k W[row0 + r, k] x[t, k]
// (+ bias) (+ y), the same op as matmul_tiled.wgsl. A workgroup computes BM tokens x BN weight
// rows; each of its (BM / 8) * (BN / 8) invocations keeps 8 tokens x 8 rows in registers, as two
// vec4 halves BM / 2 and BN / 2 apart (the layout of matmul/regtile_main.wgsl, which keeps the
// workgroup-memory reads of neighbouring invocations on different banks). Per BK step the x tile
// and the W tile (dequantized once per tile, a quad at a time with w_quad) are stored k-major,
// As[k][m/4] and Bs[k][n/4], so that the inner product (matmul/regtile_step.wgsl, shared with the
// SGEMM) reads both operands as vec4s.
// x is read as vec4s where x_stride % 4 == 0 (else, and at the end of a row, element by element).
// Preceded by a prelude (ops/llm/llm_ops.cpp: BM, BN, BK as constants, or as override constants
// for A/B runs; RT_PREFETCH; RT_DB; RT_WPT and RT_XPT, the W and x quads each invocation loads per
// tile),
// common.wgsl and a weights/*.wgsl file (bindings 0, 1).
@group(0) @binding(2) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;
//!include "llm/linear_params.wgsl"
// BM, BN: multiples of 8; BK: a multiple of 4; RT_TN: weight rows per invocation, 8 (the SGEMM's
// 8 x 8 tile) or 4 (8 x 4, acc[i * 2] only); NT = (BM / 8) * (BN / RT_TN) invocations per
// workgroup (ops/llm/llm_ops.cpp checks the limits); KQ = BK / 4 quads per row of a tile; AS, BS:
// vec4s per buffer of the x and W tiles (BK * BM / 4, BK * BN / 4).

// RT_DB: two buffers of each (the next tile stored into the other one after this tile's math: one
// barrier per tile), else one.
var<workgroup> As: array<vec4<f32>, select(1u, 2u, RT_DB) * AS>;  // x tile, [buffer][k][m/4]
var<workgroup> Bs: array<vec4<f32>, select(1u, 2u, RT_DB) * BS>;  // W tile, [buffer][k][n/4]

fn xq(i4: u32) -> vec4<f32> { return vec4<f32>(0.0); }  // unused here (w_chunk needs it)

// x[t, k .. k + 3] (k % 4 == 0), zero past the tokens and the row.
fn load_x4(t: u32, k: u32) -> vec4<f32> {
  if (t >= p.n || k >= p.cols) { return vec4<f32>(0.0); }
  let i = t * p.x_stride + k;
  if ((p.x_stride & 3u) == 0u && k + 3u < p.cols) { return x[i / 4u]; }
  var v = vec4<f32>(0.0);
  for (var j = 0u; j < 4u; j++) {
    if (k + j < p.cols) { v[j] = x[(i + j) / 4u][(i + j) & 3u]; }
  }
  return v;
}
// W[row0 + r, k .. k + 3] (k % 4 == 0), zero past the rows and the row (rows are zero padded to
// a whole quad where cols % 4 != 0, and there x is zero).
fn load_w4(r: u32, k: u32) -> vec4<f32> {
  if (r >= p.rows || k >= p.cols) { return vec4<f32>(0.0); }
  return w_quad(p.row0 + r, k / 4u);
}

// The output, y[t, r0 .. r0 + 3] = v (+ bias) (+ y) (store_acc, store_rows).
//!include "llm/batched_store.wgsl"

// Quad e of the W tile (row e / KQ, quad e % KQ) and of the x tile, for this step's k0.
fn fetch_w(n0: u32, k0: u32, e: u32) -> vec4<f32> { return load_w4(n0 + e / KQ, k0 + (e % KQ) * 4u); }
fn fetch_x(m0: u32, k0: u32, e: u32) -> vec4<f32> { return load_x4(m0 + e / KQ, k0 + (e % KQ) * 4u); }
// Store them transposed into buffer buf: Bs[k][n], As[k][m].
fn put_w(buf: u32, e: u32, v: vec4<f32>) {
  let r = e / KQ;
  let q = (e % KQ) * 4u;
  for (var j = 0u; j < 4u; j++) { Bs[buf * BS + (q + j) * (BN / 4u) + r / 4u][r % 4u] = v[j]; }
}
fn put_x(buf: u32, e: u32, v: vec4<f32>) {
  let m = e / KQ;
  let q = (e % KQ) * 4u;
  for (var j = 0u; j < 4u; j++) { As[buf * AS + (q + j) * (BM / 4u) + m / 4u][m % 4u] = v[j]; }
}

@compute @workgroup_size(NT)
fn main(@builtin(local_invocation_index) tid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
  let m0 = wid.y * BM;
  let n0 = wid.x * BN;
  let tm = tid / (BN / RT_TN);
  let tn = tid % (BN / RT_TN);
  w_setup(p.cols);
  var acc: array<vec4<f32>, 16>;  // acc[i * 2 + j]: token i of 8, row half j

  // RT_PREFETCH (and RT_DB): the next tile's quads, loaded into registers before this tile's math
  // so that their latency hides behind it (quad tid + i * NT of each tile).
  var pw: array<vec4<f32>, RT_WPT>;
  var px: array<vec4<f32>, RT_XPT>;
  if (RT_PREFETCH || RT_DB) {
    for (var i = 0u; i < RT_WPT; i++) {
      if (tid + i * NT < BN * KQ) { pw[i] = fetch_w(n0, 0u, tid + i * NT); }
    }
    for (var i = 0u; i < RT_XPT; i++) {
      if (tid + i * NT < BM * KQ) { px[i] = fetch_x(m0, 0u, tid + i * NT); }
    }
  }
  if (RT_DB) {
    for (var i = 0u; i < RT_WPT; i++) {
      if (tid + i * NT < BN * KQ) { put_w(0u, tid + i * NT, pw[i]); }
    }
    for (var i = 0u; i < RT_XPT; i++) {
      if (tid + i * NT < BM * KQ) { put_x(0u, tid + i * NT, px[i]); }
    }
    workgroupBarrier();
  }
  var buf = 0u;  // RT_DB: the buffer this tile is in
  for (var k0 = 0u; k0 < p.cols; k0 += BK) {
    let more = k0 + BK < p.cols;
    if (RT_DB) {
      if (more) {
        for (var i = 0u; i < RT_WPT; i++) {
          if (tid + i * NT < BN * KQ) { pw[i] = fetch_w(n0, k0 + BK, tid + i * NT); }
        }
        for (var i = 0u; i < RT_XPT; i++) {
          if (tid + i * NT < BM * KQ) { px[i] = fetch_x(m0, k0 + BK, tid + i * NT); }
        }
      }
    } else if (RT_PREFETCH) {
      for (var i = 0u; i < RT_WPT; i++) {
        if (tid + i * NT < BN * KQ) { put_w(0u, tid + i * NT, pw[i]); }
      }
      for (var i = 0u; i < RT_XPT; i++) {
        if (tid + i * NT < BM * KQ) { put_x(0u, tid + i * NT, px[i]); }
      }
      workgroupBarrier();
      if (more) {
        for (var i = 0u; i < RT_WPT; i++) {
          if (tid + i * NT < BN * KQ) { pw[i] = fetch_w(n0, k0 + BK, tid + i * NT); }
        }
        for (var i = 0u; i < RT_XPT; i++) {
          if (tid + i * NT < BM * KQ) { px[i] = fetch_x(m0, k0 + BK, tid + i * NT); }
        }
      }
    } else {
      for (var e = tid; e < BN * KQ; e += NT) { put_w(0u, e, fetch_w(n0, k0, e)); }
      for (var e = tid; e < BM * KQ; e += NT) { put_x(0u, e, fetch_x(m0, k0, e)); }
      workgroupBarrier();
    }
    let rt_a = buf * AS;  // regtile_step.wgsl: this tile's buffers
    let rt_b = buf * BS;
    if (RT_TN == 4u) {
      // 8 tokens x 4 rows per invocation: twice the invocations of the 8 x 8 tile for a tile
      // (more resident work where a product has few tiles), a from As as in regtile_step.wgsl.
      for (var k = 0u; k < BK; k++) {
        let a0 = As[rt_a + k * (BM / 4u) + tm];
        let a1 = As[rt_a + k * (BM / 4u) + tm + BM / 8u];
        let b0 = Bs[rt_b + k * (BN / 4u) + tn];
        let av = array<f32, 8>(a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w);
        for (var i = 0u; i < 8u; i++) { acc[i * 2u] = fma(vec4<f32>(av[i]), b0, acc[i * 2u]); }
      }
    } else {
//!include "matmul/regtile_step.wgsl"
    }
    if (RT_DB && more) {
      for (var i = 0u; i < RT_WPT; i++) {
        if (tid + i * NT < BN * KQ) { put_w(buf ^ 1u, tid + i * NT, pw[i]); }
      }
      for (var i = 0u; i < RT_XPT; i++) {
        if (tid + i * NT < BM * KQ) { put_x(buf ^ 1u, tid + i * NT, px[i]); }
      }
      buf ^= 1u;
    }
    workgroupBarrier();
  }

  if (RT_TN == 4u) {
    let ta = m0 + tm * 4u;
    let tb = m0 + BM / 2u + tm * 4u;
    let ra = n0 + tn * 4u;
    store_acc(ta, ra, acc[0]);
    store_acc(ta + 1u, ra, acc[2]);
    store_acc(ta + 2u, ra, acc[4]);
    store_acc(ta + 3u, ra, acc[6]);
    store_acc(tb, ra, acc[8]);
    store_acc(tb + 1u, ra, acc[10]);
    store_acc(tb + 2u, ra, acc[12]);
    store_acc(tb + 3u, ra, acc[14]);
  } else {
//!include "llm/regtile_store.wgsl"
  }
}
