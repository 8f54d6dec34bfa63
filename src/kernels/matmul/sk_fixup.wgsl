// The tail blocks of matmul/regtile_db_sk.wgsl: each the sum of the partial blocks its k tiles'
// workgroups left in W (two or three: a workgroup's share is shorter than a block), into C.
// One workgroup per tail block.
@group(0) @binding(0) var<storage, read> W: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> C: array<f32>;
struct Params { M: u32, N: u32, K: u32, trans_b: u32, tiles_n: u32, dp: u32, tail: u32, skw: u32 }
@group(0) @binding(2) var<uniform> p: Params;
//!include "matmul/vec4_store.wgsl"

override BM: u32 = 128u;
override BN: u32 = 128u;
override BK: u32 = 8u;
const THREADS = 256u;

@compute @workgroup_size(THREADS)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
  let tb = wid.x;  // the tail block
  let t = p.dp + tb;
  let m0 = (t / p.tiles_n) * BM;
  let n0 = (t % p.tiles_n) * BN;
  let kt = (p.K + BK - 1u) / BK;
  let total = p.tail * kt;
  let lo = tb * kt;  // this block's k tiles in the tail's order
  let hi = lo + kt;
  // The workgroups whose shares [j * total / skw, (j + 1) * total / skw) overlap [lo, hi).
  var jlo = p.skw;
  var jhi = 0u;
  for (var j = 0u; j < p.skw; j++) {
    let b = j * total / p.skw;
    let e = (j + 1u) * total / p.skw;
    if (b < e && e > lo && b < hi) {
      jlo = min(jlo, j);
      jhi = max(jhi, j + 1u);
    }
  }
  for (var v = tid; v < BM * BN / 4u; v += THREADS) {
    let r = v / (BN / 4u);
    if (m0 + r >= p.M) { continue; }
    var s = vec4<f32>(0.0);
    for (var j = jlo; j < jhi; j++) {
      // Its first segment is in the block where its share starts, the second in the next.
      let seg = tb - (j * total / p.skw) / kt;
      s += W[(j * 2u + seg) * (BM * BN / 4u) + v];
    }
    store4(m0 + r, n0 + (v % (BN / 4u)) * 4u, s);
  }
}
