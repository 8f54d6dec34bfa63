// The argmax over a matvec's per-workgroup candidates (matvec_argmax.wgsl: p.count of them, each
// the best of its rows): out_id[0] = the best id (argmax_better.wgsl's order, so the same id as
// topk.wgsl's argmax of the logits), and x = the embedding table's row of it (embedding.wgsl's
// values; ids past p.rows give zeros): the next decode step's input, without an embedding pass.
// One workgroup. Preceded by common.wgsl and the table's weights/*.wgsl file (bindings 0, 1).
@group(0) @binding(2) var<storage, read> am_v: array<f32>;
@group(0) @binding(3) var<storage, read> am_i: array<u32>;
@group(0) @binding(4) var<storage, read_write> out_id: array<u32>;
@group(0) @binding(5) var<storage, read_write> x: array<f32>;
struct P {
  count: u32,  // candidates
  cols: u32,   // the table's columns
  rows: u32,   // the table's rows (vocabulary)
}
@group(0) @binding(6) var<uniform> p: P;
override WG: u32 = 256;  // power of two
//!include "llm/argmax_better.wgsl"

fn xq(i4: u32) -> vec4<f32> { return vec4<f32>(0.0); }  // unused (w_chunk needs it)

var<workgroup> rv: array<f32, WG>;
var<workgroup> ri: array<u32, WG>;

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32) {
  var bv = 0.0;
  var bi = 0xffffffffu;
  for (var i = lid; i < p.count; i += WG) {
    if (better(am_v[i], am_i[i], bv, bi)) {
      bv = am_v[i];
      bi = am_i[i];
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
  let id = ri[0];
  if (lid == 0u) { out_id[0] = id; }
  w_setup(p.cols);
  for (var q = lid; q < (p.cols + 3u) / 4u; q += WG) {
    var v = vec4<f32>(0.0);
    if (id < p.rows) { v = w_quad(id, q); }
    for (var j = 0u; j < 4u; j++) {
      let k = 4u * q + j;
      if (k < p.cols) { x[k] = v[j]; }
    }
  }
}
