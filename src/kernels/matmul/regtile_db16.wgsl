// vec4-db2 with 8 x 16 of C per invocation (MatmulTuning::tn = 16): regtile_db.wgsl's schedule,
// its knobs and tile loads (regtile_db_tiles.wgsl, TN = 16: (BM / 8) * (BN / 16) invocations),
// with four vec4 columns BN / 4 apart per invocation: per k, 2 vec4s of A and 4 of B for 128
// FMAs, twice the 8 x 8 tile's FMAs per workgroup-memory read. The accumulators are two arrays of
// 16 vec4s indexed by constants once the row loop is unrolled (acc<j / 2>[i * 2 + j % 2]), the
// size and form of regtile_step.wgsl's that the driver keeps in registers: one array of 32 vec4s
// (acc[i * 4 + j]) ran at 2.3 TFLOP/s on the H200 (local memory, session 9 run A), and session 8's
// named-register version of this tile (regtile_wide.wgsl) at 26-30.
//!include "matmul/regtile_db_tiles.wgsl"

@compute @workgroup_size(THREADS)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) tid: u32) {
  let blk = grouped_block(wid, nwg, GROUP_M);
  let m0 = blk.x * BM;
  let n0 = blk.y * BN;
  let lane = tid % 32u;
  let warp = tid / 32u;
  let tn = (warp % (NTN / WN)) * WN + lane % WN;
  let tm = (warp / (NTN / WN)) * (32u / WN) + lane / WN;
  var acc0: array<vec4<f32>, 16>;  // acc0[i*2 + j]: row i of 8, column quarter j (0, 1)
  var acc1: array<vec4<f32>, 16>;  // acc1[i*2 + j]: column quarter 2 + j

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
  var buf = 0u;
  for (var k0 = 0u; k0 < p.K; k0 += BK) {
    pa0 = fetch_a(tid, m0, k0 + BK);
    pb0 = fetch_b(tid, n0, k0 + BK);
    if (A2) { pa1 = fetch_a(tid + THREADS, m0, k0 + BK); }
    if (B2) { pb1 = fetch_b(tid + THREADS, n0, k0 + BK); }
    if (KU == 0u) {
      for (var k = 0u; k < BK; k++) {
//!include "matmul/regtile_db16_kstep.wgsl"
      }
    } else {  // KU: the k loop's form (regtile_db_tiles.wgsl)
      for (var kk = 0u; kk < BK + (p.trans_b >> 31u); kk += KU) {  // trans_b is 0 or 1
        for (var k = kk; k < kk + KU; k++) {
//!include "matmul/regtile_db16_kstep.wgsl"
        }
      }
    }
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
      store4(m, n0 + j * (BN / 4u) + tn * 4u, acc0[i * 2u + j]);
      store4(m, n0 + (j + 2u) * (BN / 4u) + tn * 4u, acc1[i * 2u + j]);
    }
  }
}
