// Reduction, grid-stride over vec4s: a grid of G workgroups (G <= the per-dimension limit, all in
// x) walks the data with four independent vec4 loads in flight per invocation per step, keeps a
// vec4 accumulator, then reduces the workgroup with a tree in workgroup memory: out[g] is the
// partial of workgroup g, times scale. The host runs it once over the data and once, with one
// workgroup, over the G partials.
// The input binding is sized in whole vec4s (ops/reduce.cpp rounds it up to 16 bytes); lanes of
// the partial last vec4 past n count as the identity.
//!include "reduce/common.wgsl"
@group(0) @binding(0) var<storage, read> xs: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

override WG: u32 = 256;  // a power of two
const U: u32 = 4u;       // vec4 loads in flight per invocation per step

var<workgroup> sh: array<f32, WG>;

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
  let g = wid.x;
  let stride = nwg.x * WG;
  let tid = g * WG + lid;
  let full = p.n >> 2u;
  let ident = bitcast<f32>(p.identity);
  var acc = vec4<f32>(ident);
  var i = tid;
  while (full >= U * stride && i < full - (U - 1u) * stride) {
    let a0 = xs[i];
    let a1 = xs[i + stride];
    let a2 = xs[i + 2u * stride];
    let a3 = xs[i + 3u * stride];
    acc = combine4(acc, combine4(combine4(a0, a1), combine4(a2, a3)));
    i += U * stride;
  }
  for (; i < full; i += stride) { acc = combine4(acc, xs[i]); }
  if (tid == 0u && (p.n & 3u) != 0u) {
    let keep = vec4<u32>(0u, 1u, 2u, 3u) < vec4<u32>(p.n & 3u);
    acc = combine4(acc, select(vec4<f32>(ident), xs[full], keep));
  }
  sh[lid] = lanes(acc);
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (lid < s) { sh[lid] = combine(sh[lid], sh[lid + s]); }
    workgroupBarrier();
  }
  if (lid == 0u) { out[g] = sh[0] * p.scale; }
}
