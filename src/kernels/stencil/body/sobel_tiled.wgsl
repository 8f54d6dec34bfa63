// Sobel, tiled: a workgroup loads its tile plus a one-pixel halo into workgroup memory together,
// then each thread computes ROWS output pixels (rows lid.y, lid.y + WG_Y, ...) from there.
// Tile: WG_X x (WG_Y * ROWS) outputs. Not a kernel on its own: included after `alias V = ...;`.
@group(0) @binding(0) var<storage, read> src: array<V>;
@group(0) @binding(1) var<storage, read_write> dst: array<V>;
struct Params { w: u32, h: u32, c: u32 }
@group(0) @binding(2) var<uniform> p: Params;

override WG_X: u32 = 16;
override WG_Y: u32 = 16;
override ROWS: u32 = 1;
override TILE_N: u32 = (WG_X + 2u) * (WG_Y * ROWS + 2u);

//!include "stencil/body/common.wgsl"

var<workgroup> tile: array<V, TILE_N>;

@compute @workgroup_size(WG_X, WG_Y)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let tw = WG_X + 2u;
  let th = WG_Y * ROWS;
  let x0 = i32(wid.x * WG_X) - 1;
  let y0 = i32(wid.y * th) - 1;
  let ch = wid.z;
  for (var i = li; i < TILE_N; i += WG_X * WG_Y) {
    tile[i] = src[clamped_index(x0 + i32(i % tw), y0 + i32(i / tw), ch)];
  }
  workgroupBarrier();
  let gx = wid.x * WG_X + lid.x;
  for (var r = 0u; r < ROWS; r++) {
    let ly = lid.y + r * WG_Y;
    let gy = wid.y * th + ly;
    if (gx < p.w && gy < p.h) {
      let b = ly * tw + lid.x;  // top-left of the 3x3 neighbourhood
      dst[(gy * p.w + gx) * p.c + ch] = sobel_mag(tile[b], tile[b + 1u], tile[b + 2u],
                                                  tile[b + tw], tile[b + tw + 2u],
                                                  tile[b + 2u * tw], tile[b + 2u * tw + 1u], tile[b + 2u * tw + 2u]);
    }
  }
}
