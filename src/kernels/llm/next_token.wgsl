// The argmax's last pass, and what the next one-token step reads from it, in one workgroup: the
// best of `count` candidates (values, with ids = their index when flags & 1 == 0, else from the
// ids binding; select_order.wgsl's order, as topk.wgsl) goes to out_id[0], its embedding row
// (zero past the table's rows, as embedding.wgsl) to x[0 .. cols), and the position words
// pos[0], pos[1] (position, cache row) go up by one. The next decode step then starts with its
// first layer: no embedding dispatch before it, no position upload (a copy) before its submit.
// Preceded by common.wgsl, a weights/*.wgsl file (bindings 0, 1) and select_order.wgsl.
@group(0) @binding(2) var<storage, read> vals: array<f32>;
@group(0) @binding(3) var<storage, read> ids: array<u32>;
@group(0) @binding(4) var<storage, read_write> out_id: array<u32>;
@group(0) @binding(5) var<storage, read_write> pos: array<u32>;
@group(0) @binding(6) var<storage, read_write> x: array<f32>;
struct P {
  count: u32,  // candidates (at most a workgroup's CH of topk.wgsl: the host reduces to that)
  flags: u32,  // 1: ids from the ids binding
  cols: u32,   // the embedding row's length
  rows: u32,   // the table's rows: a best id past them gives a zero row
}
@group(0) @binding(7) var<uniform> p: P;
override WG: u32 = 256;  // power of two

var<workgroup> rv: array<f32, WG>;
var<workgroup> ri: array<u32, WG>;

fn xq(i4: u32) -> vec4<f32> { return vec4<f32>(0.0); }  // unused (w_chunk needs it)

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32) {
  var bv = 0.0;
  var bi = 0xffffffffu;
  for (var i = lid; i < p.count; i += WG) {
    var id = i;
    if ((p.flags & 1u) != 0u) { id = ids[i]; }
    let v = vals[i];
    if (better(v, id, bv, bi)) {
      bv = v;
      bi = id;
    }
  }
  rv[lid] = bv;
  ri[lid] = bi;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s /= 2u) {
    if (lid < s && better(rv[lid + s], ri[lid + s], rv[lid], ri[lid])) {
      rv[lid] = rv[lid + s];
      ri[lid] = ri[lid + s];
    }
    workgroupBarrier();
  }
  let best = ri[0];
  if (lid == 0u) {
    out_id[0] = best;
    pos[0] = pos[0] + 1u;
    pos[1] = pos[1] + 1u;
  }
  w_setup(p.cols);
  let nq = (p.cols + 3u) / 4u;
  for (var q = lid; q < nq; q += WG) {
    var v = vec4<f32>(0.0);
    if (best < p.rows) { v = w_quad(best, q); }
    for (var j = 0u; j < 4u; j++) {
      let k = 4u * q + j;
      if (k < p.cols) { x[k] = v[j]; }
    }
  }
}
