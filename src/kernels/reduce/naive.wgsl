// Reduction, naive: one element per invocation, a tree in workgroup memory, one partial per
// workgroup (out[g] = reduce(x[g*WG .. g*WG+WG-1]) * scale). The host runs it again over the
// partials until one value is left (ceil(log_WG(n)) passes).
//!include "reduce/common.wgsl"
@group(0) @binding(0) var<storage, read> xs: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

override WG: u32 = 256;  // a power of two

var<workgroup> sh: array<f32, WG>;

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
  let g = wid.x + wid.y * nwg.x;
  if (g * WG >= max(p.n, 1u)) { return; }  // spare workgroups of a grid spilled into y
  let i = g * WG + lid;
  var v = bitcast<f32>(p.identity);
  if (i < p.n) { v = xs[i]; }
  sh[lid] = v;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (lid < s) { sh[lid] = combine(sh[lid], sh[lid + s]); }
    workgroupBarrier();
  }
  if (lid == 0u) { out[g] = sh[0] * p.scale; }
}
