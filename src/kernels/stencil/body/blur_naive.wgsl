// Separable Gaussian blur, naive: entry points `horizontal` and `vertical`, one thread per pixel
// (and channel), 2r+1 reads of global memory each. Not a kernel on its own: included after
// `alias V = ...;`.
@group(0) @binding(0) var<storage, read> src: array<V>;
@group(0) @binding(1) var<storage, read> wts: array<f32>;  // 2r+1 normalized weights
@group(0) @binding(2) var<storage, read_write> dst: array<V>;
struct Params { w: u32, h: u32, c: u32, r: u32 }
@group(0) @binding(3) var<uniform> p: Params;

override WG_X: u32 = 16;
override WG_Y: u32 = 16;

//!include "stencil/body/common.wgsl"

@compute @workgroup_size(WG_X, WG_Y)
fn horizontal(@builtin(global_invocation_id) g: vec3<u32>) {
  if (g.x >= p.w || g.y >= p.h) { return; }
  let r = i32(p.r);
  var acc = V(0.0);
  for (var k = -r; k <= r; k++) {
    acc += wts[u32(k + r)] * src[clamped_index(i32(g.x) + k, i32(g.y), g.z)];
  }
  dst[(g.y * p.w + g.x) * p.c + g.z] = acc;
}

@compute @workgroup_size(WG_X, WG_Y)
fn vertical(@builtin(global_invocation_id) g: vec3<u32>) {
  if (g.x >= p.w || g.y >= p.h) { return; }
  let r = i32(p.r);
  var acc = V(0.0);
  for (var k = -r; k <= r; k++) {
    acc += wts[u32(k + r)] * src[clamped_index(i32(g.x), i32(g.y) + k, g.z)];
  }
  dst[(g.y * p.w + g.x) * p.c + g.z] = acc;
}
