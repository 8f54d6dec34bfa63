// vec4-db2: vec4-db's schedule (8 x 8 of C per invocation in regtile_step.wgsl's arrays, the next
// tile's global loads issued before this tile's math, two workgroup-memory buffers: one barrier
// per tile) with what vec4-db fixes as override constants (ops/matmul.cpp, MatmulTuning):
// - BM x BN blocks (64, 128, 256 or 512 each; BM * BN / 64 invocations), so that more, smaller
//   workgroups share an SM's barriers, or fewer, larger ones read less per FMA;
// - WN, the invocations of one 32-lane warp side by side along n (the rest, 32 / WN, along m).
//   vec4-db's layout is WN = BN / 8: a warp is 2 x 16 invocations and reads 16 distinct vec4s of
//   B per step (two wavefronts); WN 8 (4 x 8) or 4 (8 x 4) make every read one wavefront;
// - GROUP_M, the workgroup order (grouped_order.wgsl).
// Needs K % 4 == 0 and, unless B is transposed, N % 4 == 0.
//!include "matmul/regtile_db_tiles.wgsl"

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

  var pa0 = fetch_a(tid, m0, 0u);
  var pb0 = fetch_b(tid, n0, 0u);
  var pa1 = vec4<f32>(0.0);
  var pb1 = vec4<f32>(0.0);
  if (A2) { pa1 = fetch_a(tid + THREADS, m0, 0u); }
  if (B2) { pb1 = fetch_b(tid + THREADS, n0, 0u); }
  put_a(0u, tid, pa0);
  put_b(0u, tid, pb0);
  if (A2) { put_a(0u, tid + THREADS, pa1); }
  if (B2) { put_b(0u, tid + THREADS, pb1); }
  workgroupBarrier();
  var buf = 0u;  // the buffer this tile is in
  for (var k0 = 0u; k0 < p.K; k0 += BK) {
    // The next tile (zeros past K: no branch) in flight during this tile's math.
    pa0 = fetch_a(tid, m0, k0 + BK);
    pb0 = fetch_b(tid, n0, k0 + BK);
    if (A2) { pa1 = fetch_a(tid + THREADS, m0, k0 + BK); }
    if (B2) { pb1 = fetch_b(tid + THREADS, n0, k0 + BK); }
    let rt_a = buf * AS;
    let rt_b = buf * BS;
    if (KU == 0u) {
//!include "matmul/regtile_step.wgsl"
    } else {
      for (var kk = 0u; kk < BK + (p.trans_b >> 31u); kk += KU) {  // trans_b is 0 or 1
        for (var k = kk; k < kk + KU; k++) {
//!include "matmul/regtile_kstep.wgsl"
        }
      }
    }
    // Into the other buffer: its last readers finished the previous tile before the barrier
    // that ended it.
    buf ^= 1u;
    put_a(buf, tid, pa0);
    put_b(buf, tid, pb0);
    if (A2) { put_a(buf, tid + THREADS, pa1); }
    if (B2) { put_b(buf, tid + THREADS, pb1); }
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
