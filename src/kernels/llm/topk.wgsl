// One pass of top-k selection: workgroup w takes entries [w * CH, (w + 1) * CH) of the input
// (values, with ids = their index when flags & 1 == 0, else from the ids binding), and writes
// its k best (value descending, id ascending on ties; NaN never beats a number) to
// out_v/out_i[w * k .. w * k + k). Chained passes shrink the candidates to k (k = 1: argmax).
// Preceded by select_order.wgsl (better).
// Rows (workgroup z): row z reads from z * in_stride and writes from z * out_stride.
@group(0) @binding(0) var<storage, read> vals: array<f32>;
@group(0) @binding(1) var<storage, read> ids: array<u32>;
@group(0) @binding(2) var<storage, read_write> out_v: array<f32>;
@group(0) @binding(3) var<storage, read_write> out_i: array<u32>;
struct P {
  count: u32,  // input entries (per row)
  k: u32,
  flags: u32,  // 1: ids from the ids binding
  in_stride: u32,
  out_stride: u32,
}
@group(0) @binding(4) var<uniform> p: P;
override WG: u32 = 256;  // power of two
override CH: u32 = 2048; // entries per workgroup, a multiple of WG

var<workgroup> sv: array<f32, CH>;
var<workgroup> si: array<u32, CH>;  // id, or 0xffffffff: empty / taken
var<workgroup> rv: array<f32, WG>;
var<workgroup> ri: array<u32, WG>;
var<workgroup> rp: array<u32, WG>;  // position in sv

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
  let w = wid.x + wid.y * nwg.x;
  let base = w * CH;
  let ib = wid.z * p.in_stride;
  let ob = wid.z * p.out_stride + w * p.k;
  for (var i = lid; i < CH; i += WG) {
    let g = base + i;
    var v = 0.0;
    var id = 0xffffffffu;
    if (g < p.count) {
      v = vals[ib + g];
      id = g;
      if ((p.flags & 1u) != 0u) { id = ids[ib + g]; }
    }
    sv[i] = v;
    si[i] = id;
  }
  workgroupBarrier();
  for (var round = 0u; round < p.k; round++) {
    var bv = 0.0;
    var bi = 0xffffffffu;
    var bp = 0u;
    for (var i = lid; i < CH; i += WG) {
      if (better(sv[i], si[i], bv, bi)) {
        bv = sv[i];
        bi = si[i];
        bp = i;
      }
    }
    rv[lid] = bv;
    ri[lid] = bi;
    rp[lid] = bp;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s /= 2u) {
      if (lid < s && better(rv[lid + s], ri[lid + s], rv[lid], ri[lid])) {
        rv[lid] = rv[lid + s];
        ri[lid] = ri[lid + s];
        rp[lid] = rp[lid + s];
      }
      workgroupBarrier();
    }
    if (lid == 0u) {
      out_v[ob + round] = rv[0];
      out_i[ob + round] = ri[0];
      if (ri[0] != 0xffffffffu) { si[rp[0]] = 0xffffffffu; }
    }
    workgroupBarrier();
  }
}
