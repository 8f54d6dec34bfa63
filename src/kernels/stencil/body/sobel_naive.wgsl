// Sobel, naive: one thread per pixel (and channel), eight reads of global memory each.
// Not a kernel on its own: included after `alias V = ...;`.
@group(0) @binding(0) var<storage, read> src: array<V>;
@group(0) @binding(1) var<storage, read_write> dst: array<V>;
struct Params { w: u32, h: u32, c: u32 }
@group(0) @binding(2) var<uniform> p: Params;

override WG_X: u32 = 16;
override WG_Y: u32 = 16;

//!include "stencil/body/common.wgsl"

fn ld(x: i32, y: i32, ch: u32) -> V { return src[clamped_index(x, y, ch)]; }

@compute @workgroup_size(WG_X, WG_Y)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
  if (g.x >= p.w || g.y >= p.h) { return; }
  let x = i32(g.x);
  let y = i32(g.y);
  let ch = g.z;
  dst[(g.y * p.w + g.x) * p.c + ch] = sobel_mag(ld(x - 1, y - 1, ch), ld(x, y - 1, ch), ld(x + 1, y - 1, ch),
                                                ld(x - 1, y, ch), ld(x + 1, y, ch),
                                                ld(x - 1, y + 1, ch), ld(x, y + 1, ch), ld(x + 1, y + 1, ch));
}
