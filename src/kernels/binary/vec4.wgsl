// As strided.wgsl, four outputs per invocation: the walk runs over the output in vec4 units (the
// innermost extent is a multiple of 4), so the index arithmetic is paid once per four elements
// and the store is one vec4. a5 / b5 are the operands' innermost strides (1, or 0 when broadcast
// along it), in elements; the walk's other strides are in elements too.
//!include "copy/walk.wgsl"
//!include "binary/op.wgsl"
@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<vec4<f32>>;
@group(0) @binding(3) var<uniform> p: Walk;

override WG: u32 = 256u;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let n = walk_index(wid, nwg, lid, WG);
  if (n >= p.count) { return; }
  // p.e5 counts vec4s; element offsets step by 4 * stride per vec4 of the innermost dim.
  var w = p;
  w.a5 = 4 * p.a5;
  w.b5 = 4 * p.b5;
  let o = walk_offsets(w, n);
  let x = vec4<f32>(a[o.x], a[o.x + p.a5], a[o.x + 2 * p.a5], a[o.x + 3 * p.a5]);
  let y = vec4<f32>(b[o.y], b[o.y + p.b5], b[o.y + 2 * p.b5], b[o.y + 3 * p.b5]);
  out[n] = vec4<f32>(apply(x.x, y.x), apply(x.y, y.y), apply(x.z, y.z), apply(x.w, y.w));
}
