// Shared body of the register-tiled SGEMM (included by regtile.wgsl and regtile_vec4.wgsl, which
// provide load_a4 / load_b4 for their storage types).
// A workgroup computes a BM x BN block of C; each of its 256 invocations a TM x TN block held in
// registers. Per BK step the A block is stored transposed (As[k][m]) so that both operands of the
// inner product are read from workgroup memory as vec4s.
struct Params { M: u32, N: u32, K: u32, trans_b: u32 }
@group(0) @binding(3) var<uniform> p: Params;

const BM = 128u;
const BN = 128u;
override BK: u32 = 8u;  // k per workgroup-memory tile: a multiple of 8 (ops/matmul.cpp)
override GROUP_M: u32 = 1u;  // block-rows walked together (grouped_order.wgsl; 1: row-major)
// Issue the next tile's global loads right after the barrier, before this tile's math, so that
// their latency hides behind it (needs BK == 8: one vec4 of A and one of B per thread).
override PREFETCH: bool = false;
// Two workgroup-memory buffers (needs PREFETCH): the next tile goes into the other buffer after
// this tile's math, so one barrier per tile instead of two.
override DB: bool = false;
//!include "matmul/grouped_order.wgsl"
const TM = 8u;
const TN = 8u;
const THREADS = (BM / TM) * (BN / TN);  // 256

override AS: u32 = BK * BM / 4u;  // vec4s per buffer
override BS: u32 = BK * BN / 4u;
var<workgroup> As: array<vec4<f32>, select(1u, 2u, DB) * AS>;  // [buffer][k][m/4]
var<workgroup> Bs: array<vec4<f32>, select(1u, 2u, DB) * BS>;  // [buffer][k][n/4]

// Stores a vec4 of row `row` (of BM or BN), k .. k + 3 of the tile, transposed: S[k][row], in
// the buffer at vec4 `base`.
fn put_a(base: u32, k: u32, row: u32, v: vec4<f32>) {
  for (var j = 0u; j < 4u; j++) { As[base + (k + j) * (BM / 4u) + row / 4u][row % 4u] = v[j]; }
}
fn put_bt(base: u32, k: u32, row: u32, v: vec4<f32>) {
  for (var j = 0u; j < 4u; j++) { Bs[base + (k + j) * (BN / 4u) + row / 4u][row % 4u] = v[j]; }
}

// Loader role l of thread tid: per tile BM x BK of A and BK x BN of B, BK / 8 vec4s of each.
struct Slot {
  row: u32,  // A (and B transposed): row of the tile, with 4 k's at kq
  kq: u32,
  bk: u32,  // B: row (k) of the tile, with 4 n's at bn
  bn: u32,
}
fn slot(tid: u32, l: u32) -> Slot {
  let idx = tid + l * THREADS;
  return Slot(idx / (BK / 4u), (idx % (BK / 4u)) * 4u, idx / (BN / 4u), (idx % (BN / 4u)) * 4u);
}
fn fetch_a(s: Slot, m0: u32, k0: u32) -> vec4<f32> { return load_a4(m0 + s.row, k0 + s.kq); }
fn fetch_b(s: Slot, n0: u32, k0: u32) -> vec4<f32> {
  if (p.trans_b != 0u) { return load_bt4(n0 + s.row, k0 + s.kq); }
  return load_b4(k0 + s.bk, n0 + s.bn);
}
fn put_b(base: u32, s: Slot, v: vec4<f32>) {
  if (p.trans_b != 0u) {
    put_bt(base, s.kq, s.row, v);
  } else {
    Bs[base + s.bk * (BN / 4u) + s.bn / 4u] = v;
  }
}

@compute @workgroup_size(THREADS)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) tid: u32) {
  let blk = grouped_block(wid, nwg, GROUP_M);
  let m0 = blk.x * BM;
  let n0 = blk.y * BN;
  // Each thread owns rows {tm*4..+3, tm*4+BM/2..+3} and columns likewise: two vec4s 64 apart,
  // which keeps the workgroup-memory reads of neighbouring threads on different banks.
  let tm = tid / (BN / TN);
  let tn = tid % (BN / TN);
  var acc: array<vec4<f32>, 16>;  // acc[i*2 + j]: row i of 8, column half j

  let s0 = slot(tid, 0u);
  var pa = vec4<f32>(0.0);
  var pb = vec4<f32>(0.0);
  if (PREFETCH) {
    pa = fetch_a(s0, m0, 0u);
    pb = fetch_b(s0, n0, 0u);
  }
  if (DB) {
    put_a(0u, s0.kq, s0.row, pa);
    put_b(0u, s0, pb);
    workgroupBarrier();
  }
  var buf = 0u;  // DB: the buffer this tile is in
  for (var k0 = 0u; k0 < p.K; k0 += BK) {
    if (DB) {
      if (k0 + BK < p.K) {
        pa = fetch_a(s0, m0, k0 + BK);
        pb = fetch_b(s0, n0, k0 + BK);
      }
    } else if (PREFETCH) {
      put_a(0u, s0.kq, s0.row, pa);
      put_b(0u, s0, pb);
      workgroupBarrier();
      if (k0 + BK < p.K) {
        pa = fetch_a(s0, m0, k0 + BK);
        pb = fetch_b(s0, n0, k0 + BK);
      }
    } else {
      for (var l = 0u; l < BK / 8u; l++) {
        let s = slot(tid, l);
        put_a(0u, s.kq, s.row, fetch_a(s, m0, k0));
        put_b(0u, s, fetch_b(s, n0, k0));
      }
      workgroupBarrier();
    }
    let rt_a = buf * AS;
    let rt_b = buf * BS;
//!include "matmul/regtile_step.wgsl"
    if (DB) {
      if (k0 + BK < p.K) {
        put_a((buf ^ 1u) * AS, s0.kq, s0.row, pa);
        put_b((buf ^ 1u) * BS, s0, pb);
      }
      buf ^= 1u;
    }
    workgroupBarrier();
  }

  for (var i = 0u; i < 8u; i++) {
    let m = m0 + select(tm * 4u + i, BM / 2u + tm * 4u + (i - 4u), i >= 4u);
    if (m >= p.M) { continue; }
    for (var j = 0u; j < 2u; j++) {
      let n = n0 + j * (BN / 2u) + tn * 4u;
      store4(m, n, acc[i * 2u + j]);
    }
  }
}
