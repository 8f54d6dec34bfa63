// vec4-db2: vec4-db's schedule (8 x 8 of C per invocation in regtile_fma.wgsl's arrays, the next
// tile's global loads issued before this tile's math, two workgroup-memory buffers: one barrier
// per tile) with what vec4-db fixes as override constants (ops/matmul.cpp, MatmulTuning):
// - BM x BN blocks (64, 128, 256 or 512 each; BM * BN / 64 invocations), so that more, smaller
//   workgroups share an SM's barriers, or fewer, larger ones read less per FMA;
// - WN, the invocations of one 32-lane warp side by side along n (the rest, 32 / WN, along m).
//   vec4-db's layout is WN = BN / 8: a warp is 2 x 16 invocations and reads 16 distinct vec4s of
//   B per step (two wavefronts); WN 8 (4 x 8) or 4 (8 x 4) make every read one wavefront;
// - GROUP_M, the workgroup order (grouped_order.wgsl);
// - BK (8 or 16), A_SKEW (A's tile padded so its transposed stores are conflict-free), and
//   TWO_TILES (two tiles per k-loop iteration).
// Needs K % 4 == 0 and, unless B is transposed, N % 4 == 0. Measured on the H200 (session 9,
// docs/history/benchmarks-kernels.md), TFLOP/s at 4096^3: vec4-db 38.9; this kernel with vec4-db's blocks and
// warps 41.0-41.2 (the unguarded next-tile loads), WN 8 41.8, 256 x 128 blocks 43.5-43.6 and with
// WN 8 44.0; session 10: that with A_SKEW 44.7; session 12: that with TWO_TILES 45.6-45.8 (Auto's;
// 43.4 at 2048^3, 45.9 at 8192^3; at 128 x 128 it lost). Lost: 64-row blocks
// (36.0-38.2), 64 x 64 (28.2), 128 x 256 (31.0), 512 x 64 (36.7), GROUP_M 8 (40.0); BK 16
// (31.4); every change to the k loop's surroundings lost ~20% (the driver's 128 registers) or
// tied, and was removed (docs/history/pruned.md).
@group(0) @binding(0) var<storage, read> A: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> B: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> C: array<f32>;
struct Params { M: u32, N: u32, K: u32, trans_b: u32 }
@group(0) @binding(3) var<uniform> p: Params;
//!include "matmul/vec4_loads.wgsl"
//!include "matmul/vec4_store.wgsl"
//!include "matmul/grouped_order.wgsl"

override BM: u32 = 128u;
override BN: u32 = 128u;
override BK: u32 = 8u;                    // k per tile: 8 or 16 (BM, BN >= 8 * BK)
override KQ: u32 = BK / 4u;               // vec4s along k per row of an A (or transposed B) tile
override GROUP_M: u32 = 1u;               // block-rows walked together (1: row-major)
override NTN: u32 = BN / 8u;              // invocations along n
override THREADS: u32 = (BM / 8u) * NTN;  // along m: BM / 8
override WN: u32 = NTN;                   // a divisor of NTN and of 32, with BM * WN % 256 == 0
// vec4s added to As after each 4 rows of k (0, or 8 / KQ): put_a's scalar stores of one warp
// then fall in 32 distinct banks (without it the KQ k-quads of a row share a bank).
override A_SKEW: u32 = 0u;
// The k loop takes two tiles an iteration, each buffer's index a constant; a tile of zeros past K
// where K is not a multiple of 2 * BK (45.8 TFLOP/s at 4096^3: Auto's with 256-row blocks; at
// 128 x 128 it lost).
override TWO_TILES: bool = false;
override AN: u32 = BK * BM / 4u;          // vec4s of an A tile: [k][m / 4]
override AS: u32 = AN + KQ * A_SKEW;      // vec4s per A buffer
override BS: u32 = BK * BN / 4u;          // vec4s per B buffer: [k][n / 4]
// A tile holds BK * 16 / BN (B: BK * 16 / BM) vec4s per invocation: a second load where that is 2.
override A2: bool = AN > THREADS;
override B2: bool = BS > THREADS;
var<workgroup> As: array<vec4<f32>, 2u * AS>;
var<workgroup> Bs: array<vec4<f32>, 2u * BS>;

// The vec4 of As (in a buffer) that starts row k: k * BM / 4, skewed per k-quad.
fn a_row(k: u32) -> u32 { return k * (BM / 4u) + (k / 4u) * A_SKEW; }

fn b_trans() -> bool { return p.trans_b != 0u; }

// vec4 number idx of the tile at k0 (zeros past the matrices, and past the tile where a tile has
// fewer vec4s than invocations): A row idx / KQ, k's (idx % KQ) * 4 ..; B row k = idx / (BN / 4),
// columns (idx % (BN / 4)) * 4 .., or transposed: row n = idx / KQ, k's (idx % KQ) * 4 ...
fn fetch_a(idx: u32, m0: u32, k0: u32) -> vec4<f32> {
  if (idx >= AN) { return vec4<f32>(0.0); }
  return load_a4(m0 + idx / KQ, k0 + (idx % KQ) * 4u);
}
fn fetch_b(idx: u32, n0: u32, k0: u32) -> vec4<f32> {
  if (idx >= BS) { return vec4<f32>(0.0); }
  if (b_trans()) { return load_bt4(n0 + idx / KQ, k0 + (idx % KQ) * 4u); }
  return load_b4(k0 + idx / (BN / 4u), n0 + (idx % (BN / 4u)) * 4u);
}

// Stores them k-major, the A tile (and a transposed B tile) transposed: S[k][row].
fn put_a(buf: u32, idx: u32, v: vec4<f32>) {
  if (idx >= AN) { return; }
  let m = idx / KQ;
  let i = buf * AS + a_row((idx % KQ) * 4u) + m / 4u;
  As[i][m % 4u] = v.x;
  As[i + BM / 4u][m % 4u] = v.y;
  As[i + 2u * (BM / 4u)][m % 4u] = v.z;
  As[i + 3u * (BM / 4u)][m % 4u] = v.w;
}
fn put_b(buf: u32, idx: u32, v: vec4<f32>) {
  if (idx >= BS) { return; }
  if (!b_trans()) {
    Bs[buf * BS + idx] = v;
    return;
  }
  let n = idx / KQ;
  let i = buf * BS + (idx % KQ) * 4u * (BN / 4u) + n / 4u;
  Bs[i][n % 4u] = v.x;
  Bs[i + BN / 4u][n % 4u] = v.y;
  Bs[i + 2u * (BN / 4u)][n % 4u] = v.z;
  Bs[i + 3u * (BN / 4u)][n % 4u] = v.w;
}

// The next tile's vec4s of one invocation, held in registers during this tile's math.
struct Next {
  a0: vec4<f32>,
  a1: vec4<f32>,
  b0: vec4<f32>,
  b1: vec4<f32>,
}
fn fetch_next(tid: u32, m0: u32, n0: u32, k0: u32) -> Next {
  var t = Next(fetch_a(tid, m0, k0), vec4<f32>(0.0), fetch_b(tid, n0, k0), vec4<f32>(0.0));
  if (A2) { t.a1 = fetch_a(tid + THREADS, m0, k0); }
  if (B2) { t.b1 = fetch_b(tid + THREADS, n0, k0); }
  return t;
}
fn put_next(buf: u32, tid: u32, t: Next) {
  put_a(buf, tid, t.a0);
  put_b(buf, tid, t.b0);
  if (A2) { put_a(buf, tid + THREADS, t.a1); }
  if (B2) { put_b(buf, tid + THREADS, t.b1); }
}

// One k step's operands: rows tm * 4 .. + 3 and BM / 2 + tm * 4 .. + 3 of A, columns tn * 4 ..
// + 3 and BN / 2 + tn * 4 .. + 3 of B, from buffer buf.
struct Frag {
  a0: vec4<f32>,
  a1: vec4<f32>,
  b0: vec4<f32>,
  b1: vec4<f32>,
}
fn frag(buf: u32, k: u32, tm: u32, tn: u32) -> Frag {
  let a = buf * AS + a_row(k) + tm;
  let b = buf * BS + k * (BN / 4u) + tn;
  return Frag(As[a], As[a + BM / 8u], Bs[b], Bs[b + BN / 8u]);
}

@compute @workgroup_size(THREADS)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) tid: u32) {
  let blk = grouped_block(wid, nwg, GROUP_M);
  let m0 = blk.x * BM;
  let n0 = blk.y * BN;
  // Warp w covers WN invocations along n and 32 / WN along m; NTN / WN warps side by side.
  let lane = tid % 32u;
  let warp = tid / 32u;
  let tn = (warp % (NTN / WN)) * WN + lane % WN;
  let tm = (warp / (NTN / WN)) * (32u / WN) + lane / WN;
  var acc: array<vec4<f32>, 16>;  // acc[i*2 + j]: row i of 8, column half j

  var next = fetch_next(tid, m0, n0, 0u);
  put_next(0u, tid, next);
  workgroupBarrier();
  if (TWO_TILES) {
    for (var k0 = 0u; k0 < p.K; k0 += 2u * BK) {
      next = fetch_next(tid, m0, n0, k0 + BK);
      for (var k = 0u; k < BK; k++) {
        let f = frag(0u, k, tm, tn);
//!include "matmul/regtile_fma.wgsl"
      }
      put_next(1u, tid, next);
      workgroupBarrier();
      next = fetch_next(tid, m0, n0, k0 + 2u * BK);
      for (var k = 0u; k < BK; k++) {
        let f = frag(1u, k, tm, tn);
//!include "matmul/regtile_fma.wgsl"
      }
      put_next(0u, tid, next);
      workgroupBarrier();
    }
  } else {
    var buf = 0u;  // the buffer this tile is in
    for (var k0 = 0u; k0 < p.K; k0 += BK) {
      // The next tile (zeros past K: no branch) in flight during this tile's math.
      next = fetch_next(tid, m0, n0, k0 + BK);
      for (var k = 0u; k < BK; k++) {
        let f = frag(buf, k, tm, tn);
//!include "matmul/regtile_fma.wgsl"
      }
      // Into the other buffer: its last readers finished the previous tile before the barrier
      // that ended it.
      buf ^= 1u;
      put_next(buf, tid, next);
      workgroupBarrier();
    }
  }

  for (var i = 0u; i < 8u; i++) {
    let m = m0 + select(tm * 4u + i, BM / 2u + tm * 4u + (i - 4u), i >= 4u);
    if (m >= p.M) { continue; }
    for (var j = 0u; j < 2u; j++) {
      store4(m, n0 + j * (BN / 2u) + tn * 4u, acc[i * 2u + j]);
    }
  }
}
