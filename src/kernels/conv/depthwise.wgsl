// Depthwise convolution (groups == c_in, c_out = c_in * multiplier): a workgroup computes a
// TILE_H x TILE_W tile of one output plane. It stages the input tile with its halo in workgroup
// memory (coalesced row loads, zeros in the padding) and the plane's filter, then each
// invocation computes outputs from there. Kernel size, stride and dilation are override
// constants so the tap loops unroll.
//!include "conv/bindings.wgsl"
//!include "conv/depthwise_plane.wgsl"

override TILE_H: u32 = 16u;
override TILE_W: u32 = 32u;
override THREADS: u32 = 128u;
//!include "conv/window.wgsl"
override IN_H: u32 = (TILE_H - 1u) * SH + (KH - 1u) * DH + 1u;
override IN_W: u32 = (TILE_W - 1u) * SW + (KW - 1u) * DW + 1u;
const LOADS = 8u;

var<workgroup> tile: array<f32, IN_H * IN_W>;
var<workgroup> taps: array<f32, KH * KW>;

@compute @workgroup_size(THREADS)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) tid: u32) {
  let tiles_w = (p.ow + TILE_W - 1u) / TILE_W;
  let tiles_h = (p.oh + TILE_H - 1u) / TILE_H;
  let blk = wid.x + wid.y * nwg.x;  // uniform: the early return keeps the barrier uniform
  if (blk >= p.n * p.c_out * tiles_h * tiles_w) { return; }
  let plane = blk / (tiles_h * tiles_w);  // n * c_out + co
  let oy0 = ((blk % (tiles_h * tiles_w)) / tiles_w) * TILE_H;
  let ox0 = (blk % tiles_w) * TILE_W;
  let co = plane % p.c_out;
  let xbase = depthwise_x_base(plane);
  let iy0 = i32(oy0 * SH) - i32(p.pad_top);
  let ix0 = i32(ox0 * SW) - i32(p.pad_left);

  // LOADS loads per invocation issued together before any is stored. One at a time, each waited
  // for before the next, is the likely reason this kernel stayed near 1/3 of the copy bandwidth
  // at every tile size on the H200 (docs/history/benchmarks-cnn.md).
  for (var i0 = tid; i0 < IN_H * IN_W; i0 += LOADS * THREADS) {
    var v: array<f32, LOADS>;
    for (var j = 0u; j < LOADS; j++) {
      let i = i0 + j * THREADS;
      let iy = iy0 + i32(i / IN_W);
      let ix = ix0 + i32(i % IN_W);
      v[j] = 0.0;
      if (i < IN_H * IN_W && iy >= 0 && iy < i32(p.h) && ix >= 0 && ix < i32(p.w)) {
        v[j] = X[xbase + u32(iy) * p.w + u32(ix)];
      }
    }
    for (var j = 0u; j < LOADS; j++) {
      if (i0 + j * THREADS < IN_H * IN_W) { tile[i0 + j * THREADS] = v[j]; }
    }
  }
  for (var i = tid; i < KH * KW; i += THREADS) { taps[i] = Wt[co * KH * KW + i]; }
  workgroupBarrier();

  for (var i = tid; i < TILE_H * TILE_W; i += THREADS) {
    let ty = i / TILE_W;
    let tx = i % TILE_W;
    let oy = oy0 + ty;
    let ox = ox0 + tx;
    if (oy >= p.oh || ox >= p.ow) { continue; }
    var acc = 0.0;
    for (var r = 0u; r < KH; r++) {
      let row = (ty * SH + r * DH) * IN_W + tx * SW;
      for (var c = 0u; c < KW; c++) { acc = fma(tile[row + c * DW], taps[r * KW + c], acc); }
    }
    let yi = (plane * p.oh + oy) * p.ow + ox;
    Y[yi] = epilogue(acc, co, yi);
  }
}
