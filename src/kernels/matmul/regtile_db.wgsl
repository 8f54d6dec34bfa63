// vec4-db2: vec4-db's schedule (8 x 8 of C per invocation in regtile_fma.wgsl's arrays, the next
// tile's global loads issued before this tile's math, two workgroup-memory buffers: one barrier
// per tile) with what vec4-db fixes as override constants (ops/matmul.cpp, MatmulTuning):
// - BM x BN blocks (64, 128, 256 or 512 each; BM * BN / 64 invocations), so that more, smaller
//   workgroups share an SM's barriers, or fewer, larger ones read less per FMA;
// - WN, the invocations of one 32-lane warp side by side along n (the rest, 32 / WN, along m).
//   vec4-db's layout is WN = BN / 8: a warp is 2 x 16 invocations and reads 16 distinct vec4s of
//   B per step (two wavefronts); WN 8 (4 x 8) or 4 (8 x 4) make every read one wavefront;
// - GROUP_M, the workgroup order (grouped_order.wgsl);
// - BK (8 or 16), A_SKEW (A's tile padded so its transposed stores are conflict-free),
//   FETCH_PRE and TRANS_B: session 10's candidates (matmul/regtile_db_tile.wgsl, shared with
//   regtile_db_sk.wgsl, the same with the last wave split along k).
// Needs K % 4 == 0 and, unless B is transposed, N % 4 == 0. Measured on the H200 (session 9,
// docs/benchmarks.md), TFLOP/s at 4096^3: vec4-db 38.9; this kernel with vec4-db's blocks and
// warps 41.0-41.2 (the unguarded next-tile loads), WN 8 41.8, 256 x 128 blocks 43.5-43.6 and with
// WN 8 44.0; session 10: that with A_SKEW 44.7 (Auto's; 45.1 at 8192^3). Lost: 64-row blocks
// (36.0-38.2), 64 x 64 (28.2), 128 x 256 (31.0), 512 x 64 (36.7), GROUP_M 8 (40.0); BK 16
// (31.4), FETCH_PRE (35.8), TRANS_B fixed (35.1): every change to the k loop's surroundings lost
// ~20% (the driver's 128 registers); 8 x 16 per invocation (2.3: local memory), a k loop with
// its trip count hidden (32.7-37.5), reads a step ahead (35.2) and earlier stores (34.7-35.0)
// were tried here and dropped.
@group(0) @binding(0) var<storage, read> A: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> B: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> C: array<f32>;
struct Params { M: u32, N: u32, K: u32, trans_b: u32 }
@group(0) @binding(3) var<uniform> p: Params;
//!include "matmul/vec4_loads.wgsl"
//!include "matmul/vec4_store.wgsl"
//!include "matmul/grouped_order.wgsl"

//!include "matmul/regtile_db_tile.wgsl"

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
  if (FETCH_PRE) { next = fetch_next(tid, m0, n0, BK); }
  workgroupBarrier();
  var buf = 0u;  // the buffer this tile is in
  for (var k0 = 0u; k0 < p.K; k0 += BK) {
    // The next tile (zeros past K: no branch) in flight during this tile's math.
    if (!FETCH_PRE) { next = fetch_next(tid, m0, n0, k0 + BK); }
    for (var k = 0u; k < BK; k++) {
      let f = frag(buf, k, tm, tn);
//!include "matmul/regtile_fma.wgsl"
    }
    // Into the other buffer: its last readers finished the previous tile before the barrier
    // that ended it.
    buf ^= 1u;
    put_next(buf, tid, next);
    if (FETCH_PRE) { next = fetch_next(tid, m0, n0, k0 + 2u * BK); }
    workgroupBarrier();
  }

  for (var i = 0u; i < 8u; i++) {
    let m = m0 + select(tm * 4u + i, BM / 2u + tm * 4u + (i - 4u), i >= 4u);
    if (m >= p.M) { continue; }
    for (var j = 0u; j < 2u; j++) {
      store4(m, n0 + j * (BN / 2u) + tn * 4u, acc[i * 2u + j]);
    }
  }
}
