// Reduction, grid-stride over vec4s: a grid of G workgroups (G <= the per-dimension limit, all in
// x) walks the data with four independent vec4 loads in flight per invocation per step, keeps a
// vec4 accumulator, then reduces the workgroup with a tree in workgroup memory: out[g] is the
// partial of workgroup g, times scale. The host runs it once over the data and once, with one
// workgroup, over the G partials.
// The input binding is sized in whole vec4s (ops/reduce.cpp rounds it up to 16 bytes); lanes of
// the partial last vec4 past n count as the identity.
//!include "reduce/common.wgsl"
//!include "reduce/vec4_partial.wgsl"
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
  sh[lid] = thread_partial(g * WG + lid, nwg.x * WG);
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (lid < s) { sh[lid] = combine(sh[lid], sh[lid + s]); }
    workgroupBarrier();
  }
  if (lid == 0u) { out[g] = sh[0] * p.scale; }
}
