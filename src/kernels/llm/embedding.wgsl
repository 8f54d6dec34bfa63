// out[t, k] = W[ids[t], k] for t < n, k < cols: one invocation per 4 elements. Preceded by
// common.wgsl and a weights/*.wgsl file (bindings 0, 1).
@group(0) @binding(2) var<storage, read> ids: array<u32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
struct P {
  n: u32,
  cols: u32,
  out_stride: u32,  // elements between tokens of out
  rows: u32,        // vocabulary size: ids past it give zero rows
}
@group(0) @binding(4) var<uniform> p: P;
override WG: u32 = 256;

fn xq(i4: u32) -> vec4<f32> { return vec4<f32>(0.0); }  // unused (w_chunk needs it)

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
  let nq = (p.cols + 3u) / 4u;
  let g = wg_linear(wid, nwg) * WG + lid;
  if (g >= p.n * nq) { return; }
  let t = g / nq;
  let q = g % nq;
  w_setup(p.cols);
  let id = ids[t];
  var v = vec4<f32>(0.0);
  if (id < p.rows) { v = w_quad(id, q); }
  for (var j = 0u; j < 4u; j++) {
    let k = 4u * q + j;
    if (k < p.cols) { out[t * p.out_stride + k] = v[j]; }
  }
}
