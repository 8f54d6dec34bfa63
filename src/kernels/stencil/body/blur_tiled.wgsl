// Separable Gaussian blur, tiled: entry points `horizontal` and `vertical`. A workgroup loads its
// tile plus an R-pixel halo along the pass direction into workgroup memory together, then each
// thread computes PER outputs along that direction (lid + k * WG). The radius R is an override
// (one pipeline per radius); the halo must fit workgroup memory (the host checks).
// Horizontal tile: (WG_X * PER) x WG_Y outputs; vertical: WG_X x (WG_Y * PER).
// Not a kernel on its own: included after `alias V = ...;`.
@group(0) @binding(0) var<storage, read> src: array<V>;
@group(0) @binding(1) var<storage, read> wts: array<f32>;  // 2R+1 normalized weights
@group(0) @binding(2) var<storage, read_write> dst: array<V>;
struct Params { w: u32, h: u32, c: u32, r: u32 }
@group(0) @binding(3) var<uniform> p: Params;

override WG_X: u32 = 16;
override WG_Y: u32 = 16;
override PER: u32 = 1;
override R: u32 = 1;
override H_N: u32 = (WG_X * PER + 2u * R) * WG_Y;
override V_N: u32 = WG_X * (WG_Y * PER + 2u * R);

//!include "stencil/body/common.wgsl"

var<workgroup> htile: array<V, H_N>;
var<workgroup> vtile: array<V, V_N>;

@compute @workgroup_size(WG_X, WG_Y)
fn horizontal(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
              @builtin(local_invocation_index) li: u32) {
  let tw = WG_X * PER;
  let rw = tw + 2u * R;  // a tile row with its halo
  let x0 = i32(wid.x * tw) - i32(R);
  let y0 = i32(wid.y * WG_Y);
  let ch = wid.z;
  for (var i = li; i < H_N; i += WG_X * WG_Y) {
    htile[i] = src[clamped_index(x0 + i32(i % rw), y0 + i32(i / rw), ch)];
  }
  workgroupBarrier();
  let gy = wid.y * WG_Y + lid.y;
  for (var q = 0u; q < PER; q++) {
    let lx = lid.x + q * WG_X;
    let gx = wid.x * tw + lx;
    if (gx < p.w && gy < p.h) {
      let b = lid.y * rw + lx;
      var acc = V(0.0);
      for (var k = 0u; k <= 2u * R; k++) { acc += wts[k] * htile[b + k]; }
      dst[(gy * p.w + gx) * p.c + ch] = acc;
    }
  }
}

@compute @workgroup_size(WG_X, WG_Y)
fn vertical(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
            @builtin(local_invocation_index) li: u32) {
  let th = WG_Y * PER;
  let x0 = i32(wid.x * WG_X);
  let y0 = i32(wid.y * th) - i32(R);
  let ch = wid.z;
  for (var i = li; i < V_N; i += WG_X * WG_Y) {
    vtile[i] = src[clamped_index(x0 + i32(i % WG_X), y0 + i32(i / WG_X), ch)];
  }
  workgroupBarrier();
  let gx = wid.x * WG_X + lid.x;
  for (var q = 0u; q < PER; q++) {
    let ly = lid.y + q * WG_Y;
    let gy = wid.y * th + ly;
    if (gx < p.w && gy < p.h) {
      var acc = V(0.0);
      for (var k = 0u; k <= 2u * R; k++) { acc += wts[k] * vtile[(ly + k) * WG_X + lid.x]; }
      dst[(gy * p.w + gx) * p.c + ch] = acc;
    }
  }
}
