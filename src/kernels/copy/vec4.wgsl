// Strided copy of vec4s: the walk's innermost dimension is contiguous in both tensors and every
// offset and stride a multiple of 4 (ops/tensor_ops.cpp passes the walk in vec4 units), so each
// invocation moves 16 bytes with one load and one store.
//!include "copy/walk.wgsl"
@group(0) @binding(0) var<storage, read> src: array<vec4<u32>>;  // 32-bit words, bits unchanged (f32 or i32)
@group(0) @binding(1) var<storage, read_write> dst: array<vec4<u32>>;
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
