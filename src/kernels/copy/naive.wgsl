// Strided copy, one element per invocation: dst[walk b offset] = src[walk a offset]. Transpose,
// Slice, Split, Concat's parts, Gather with constant indices and Expand are all this walk. The
// elements move as 32-bit words: f32, or the i32 of integer and bool tensors, bits unchanged.
//!include "copy/walk.wgsl"
@group(0) @binding(0) var<storage, read> src: array<u32>;
@group(0) @binding(1) var<storage, read_write> dst: array<u32>;
@group(0) @binding(2) var<uniform> p: Walk;

override WG: u32 = 256u;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let n = walk_index(wid, nwg, lid, WG);
  if (n >= p.count) { return; }
  let o = walk_offsets(p, n);
  dst[o.y] = src[o.x];
}
