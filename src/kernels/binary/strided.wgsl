// out[n] = a[walk a offset] op b[walk b offset] over the broadcast output shape (ONNX
// multidirectional broadcasting: stride 0 where an operand is broadcast), one element per
// invocation.
//!include "copy/walk.wgsl"
//!include "binary/op.wgsl"
@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<uniform> p: Walk;

override WG: u32 = 256u;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let n = walk_index(wid, nwg, lid, WG);
  if (n >= p.count) { return; }
  let o = walk_offsets(p, n);
  out[n] = apply(a[o.x], b[o.y]);
}
