// vec4-db2 with the last wave split along k (stream-K for the tail): where the blocks of C do not
// fill whole waves of SKW workgroups (SKW: the adapter's multiprocessors, one 512-invocation
// workgroup each), the first dp blocks run one workgroup each as in regtile_db.wgsl, and the last
// `tail` blocks' k tiles are shared evenly by SKW more workgroups, so that the last wave takes
// tail / SKW of a block's time instead of a whole one. Those write their partial blocks to W
// (two per workgroup at most: a range shorter than a block touches two), which
// matmul/sk_fixup.wgsl adds into C.
@group(0) @binding(0) var<storage, read> A: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> B: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> C: array<f32>;
@group(0) @binding(3) var<storage, read_write> W: array<vec4<f32>>;
// tiles_n: blocks along n (row-major block order); dp: blocks done whole; tail: the blocks after
// them; skw: the workgroups that share the tail's k tiles.
struct Params { M: u32, N: u32, K: u32, trans_b: u32, tiles_n: u32, dp: u32, tail: u32, skw: u32 }
@group(0) @binding(4) var<uniform> p: Params;
//!include "matmul/vec4_loads.wgsl"
//!include "matmul/vec4_store.wgsl"

//!include "matmul/regtile_db_tile.wgsl"

// The blocks done whole in a copy of regtile_db.wgsl's main of their own (1), or in the loop
// that also does the tail's shares (0).
override SK_SPLIT: bool = false;

// Workgroup j's share of the tail's k tiles (tail blocks x k tiles each, block-major).
fn sk_range(j: u32, kt: u32) -> vec2<u32> {
  let total = p.tail * kt;
  return vec2<u32>(j * total / p.skw, (j + 1u) * total / p.skw);
}

@compute @workgroup_size(THREADS)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) tid: u32) {
  let pid = wid.x + wid.y * nwg.x;
  let whole = pid < p.dp;  // a block of its own (else a share of the tail)
  if (!whole && (p.tail == 0u || pid >= p.dp + p.skw)) { return; }
  let lane = tid % 32u;
  let warp = tid / 32u;
  let tn = (warp % (NTN / WN)) * WN + lane % WN;
  let tm = (warp / (NTN / WN)) * (32u / WN) + lane / WN;
  if (SK_SPLIT && whole) {
    // regtile_db.wgsl's main, word for word but the block's place, so that the driver may
    // compile these blocks as it does there.
    let m0 = (pid / p.tiles_n) * BM;
    let n0 = (pid % p.tiles_n) * BN;
    var acc: array<vec4<f32>, 16>;
    var next = fetch_next(tid, m0, n0, 0u);
    put_next(0u, tid, next);
    if (FETCH_PRE) { next = fetch_next(tid, m0, n0, BK); }
    workgroupBarrier();
    var buf = 0u;
    for (var k0 = 0u; k0 < p.K; k0 += BK) {
      if (!FETCH_PRE) { next = fetch_next(tid, m0, n0, k0 + BK); }
      for (var k = 0u; k < BK; k++) {
        let f = frag(buf, k, tm, tn);
//!include "matmul/regtile_fma.wgsl"
      }
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
    return;
  }
  let kt = (p.K + BK - 1u) / BK;  // k tiles per block
  let j = pid - p.dp;
  var it = 0u;  // the next k tile of this workgroup's share (tail blocks x kt, block-major)
  var end = 0u;
  if (!whole) {
    let r = sk_range(j, kt);
    it = r.x;
    end = r.y;
  }
  for (var seg = 0u; seg < 2u; seg++) {
    if (!whole && it >= end) { break; }
    var t = pid;  // the block and its k tiles [kb, ke)
    var kb = 0u;
    var ke = kt;
    if (!whole) {
      t = p.dp + it / kt;
      kb = it % kt;
      ke = min(kt, kb + end - it);
      it += ke - kb;
    }
    let m0 = (t / p.tiles_n) * BM;
    let n0 = (t % p.tiles_n) * BN;
    var acc = array<vec4<f32>, 16>();  // acc[i*2 + j]: row i of 8, column half j

    // regtile_db.wgsl's k loop over [kb, ke). The buffers are free: the previous segment's last
    // barrier came after its last reads.
    var next = fetch_next(tid, m0, n0, kb * BK);
    put_next(0u, tid, next);
    if (FETCH_PRE) { next = fetch_next(tid, m0, n0, (kb + 1u) * BK); }
    workgroupBarrier();
    var buf = 0u;
    for (var k0 = kb * BK; k0 < ke * BK; k0 += BK) {
      if (!FETCH_PRE) { next = fetch_next(tid, m0, n0, k0 + BK); }
      for (var k = 0u; k < BK; k++) {
        let f = frag(buf, k, tm, tn);
//!include "matmul/regtile_fma.wgsl"
      }
      buf ^= 1u;
      put_next(buf, tid, next);
      if (FETCH_PRE) { next = fetch_next(tid, m0, n0, k0 + 2u * BK); }
      workgroupBarrier();
    }

    // W's block (j, seg): BM rows of BN / 4 vec4s.
    let w0 = (j * 2u + seg) * (BM * BN / 4u);
    for (var i = 0u; i < 8u; i++) {
      let r = select(tm * 4u + i, BM / 2u + tm * 4u + (i - 4u), i >= 4u);
      for (var h = 0u; h < 2u; h++) {
        if (whole) {
          if (m0 + r < p.M) { store4(m0 + r, n0 + h * (BN / 2u) + tn * 4u, acc[i * 2u + h]); }
        } else {
          W[w0 + r * (BN / 4u) + h * (BN / 8u) + tn] = acc[i * 2u + h];
        }
      }
    }
    if (whole) { break; }
  }
}
