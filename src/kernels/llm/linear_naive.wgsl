// y[t, y_off + r] = sum_k W[row0 + r, k] x[t, k] (+ bias[row0 + r]) (+ y[t, y_off + r]): one
// invocation per output. Preceded by common.wgsl and a weights/*.wgsl file (bindings 0, 1).
@group(0) @binding(2) var<storage, read> x: array<f32>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;
//!include "llm/linear_params.wgsl"
override WG: u32 = 64;

var<private> xt: u32;
fn xq(i4: u32) -> vec4<f32> {
  let i = 4u * i4;
  var v = vec4<f32>(0.0);
  for (var j = 0u; j < 4u; j++) {
    if (i + j < p.cols) { v[j] = x[xt + i + j]; }
  }
  return v;
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
  let g = wg_linear(wid, nwg) * WG + lid;
  if (g >= p.n * p.rows) { return; }
  let t = g / p.rows;
  let r = g % p.rows;
  w_setup(p.cols);
  xt = t * p.x_stride;
  var acc = 0.0;
  let nq = (p.cols + 3u) / 4u;
  for (var q = 0u; q < nq; q++) { acc += dot(w_quad(p.row0 + r, q), xq(q)); }
  if ((p.flags & 1u) != 0u) { acc += bias[p.row0 + r]; }
  let o = t * p.y_stride + p.y_off + r;
  if ((p.flags & 2u) != 0u) { acc += y[o]; }
  y[o] = acc;
}
