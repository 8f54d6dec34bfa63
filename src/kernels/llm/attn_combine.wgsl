// Combines flash-decoding partials [n][n_heads][n_splits][HD + 2] (acc, m, l) into
// o[t * o_stride + o_off + h * HD + d]: one workgroup of HD * SP invocations per (token, head);
// invocation (j, d) merges splits j, j + SP, .. (attn_merge.wgsl's merge_strided), then
// invocation (0, d) merges the SP results in j order the same way (SP = 1 adds exactly as
// merge_splits; more run the splits' loads side by side). Preceded by common.wgsl.
@group(0) @binding(0) var<storage, read> part: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
struct P {
  n: u32,
  n_heads: u32,
  n_splits: u32,
  head_dim: u32,
  o_stride: u32,
  o_off: u32,
}
@group(0) @binding(2) var<uniform> p: P;
override HD: u32 = 128;  // p.head_dim
override SP: u32 = 1;
var<workgroup> lanes: array<vec3<f32>, HD * SP>;  // each invocation's (max, sum of weights, weighted sum)
//!include "llm/attn_merge.wgsl"

@compute @workgroup_size(HD * SP)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
  let th = wg_linear(wid, nwg);  // t * n_heads + h
  if (th >= p.n * p.n_heads) { return; }
  let d = lid % HD;
  let j = lid / HD;
  let r = merge_strided(th * p.n_splits * (HD + 2u), j, SP, p.n_splits, HD, d);
  var o = r.z / r.y;
  if (SP > 1u) {
    lanes[lid] = r;
    workgroupBarrier();
    if (j != 0u) { return; }
    var m = -3.0e38;
    for (var k = 0u; k < SP; k++) { m = max(m, lanes[k * HD + d].x); }
    var l = 0.0;
    var a = 0.0;
    for (var k = 0u; k < SP; k++) {
      let q = lanes[k * HD + d];
      let f = exp(q.x - m);
      l += f * q.y;
      a += f * q.z;
    }
    o = a / l;
  }
  out[(th / p.n_heads) * p.o_stride + p.o_off + (th % p.n_heads) * HD + d] = o;
}
