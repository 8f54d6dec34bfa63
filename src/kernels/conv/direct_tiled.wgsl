// Direct convolution with the input tile in workgroup memory: a workgroup computes a TILE_W x
// TILE_H tile of output pixels (one invocation each) for COB output channels of one group. Per
// step it stages CIB input channels of the tile plus halo and their COB x CIB filters in
// workgroup memory; each invocation keeps its COB sums in registers, so every staged input value
// is used COB x KH x KW times from fast memory.
//!include "conv/bindings.wgsl"

override TILE_W: u32 = 16u;
override TILE_H: u32 = 8u;
override COB: u32 = 8u;  // at most 16 (the accumulator array)
override CIB: u32 = 4u;
//!include "conv/window.wgsl"
override IN_H: u32 = (TILE_H - 1u) * SH + (KH - 1u) * DH + 1u;
override IN_W: u32 = (TILE_W - 1u) * SW + (KW - 1u) * DW + 1u;
override THREADS: u32 = TILE_W * TILE_H;

var<workgroup> tile: array<f32, CIB * IN_H * IN_W>;
var<workgroup> wts: array<f32, COB * CIB * KH * KW>;

@compute @workgroup_size(THREADS)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) tid: u32) {
  let tiles_w = (p.ow + TILE_W - 1u) / TILE_W;
  let tiles = tiles_w * ((p.oh + TILE_H - 1u) / TILE_H);
  let cblocks = (p.cout_g + COB - 1u) / COB;
  let blk = wid.x + wid.y * nwg.x;  // uniform: the early return keeps the barriers uniform
  if (blk >= p.n * p.groups * cblocks * tiles) { return; }
  let t = blk % tiles;  // tiles vary fastest: neighbours share filters
  let cb = (blk / tiles) % cblocks;
  let g = (blk / (tiles * cblocks)) % p.groups;
  let img = blk / (tiles * cblocks * p.groups);
  let oy0 = (t / tiles_w) * TILE_H;
  let ox0 = (t % tiles_w) * TILE_W;
  let m0 = cb * COB;  // first output channel within the group
  let ty = tid / TILE_W;
  let tx = tid % TILE_W;
  let iy0 = i32(oy0 * SH) - i32(p.pad_top);
  let ix0 = i32(ox0 * SW) - i32(p.pad_left);
  let xbase = (img * p.c_in + g * p.cin_g) * p.h * p.w;

  var acc: array<f32, 16>;
  for (var ci0 = 0u; ci0 < p.cin_g; ci0 += CIB) {
    for (var i = tid; i < CIB * IN_H * IN_W; i += THREADS) {
      let ci = ci0 + i / (IN_H * IN_W);
      let iy = iy0 + i32((i / IN_W) % IN_H);
      let ix = ix0 + i32(i % IN_W);
      var v = 0.0;
      if (ci < p.cin_g && iy >= 0 && iy < i32(p.h) && ix >= 0 && ix < i32(p.w)) {
        v = X[xbase + (ci * p.h + u32(iy)) * p.w + u32(ix)];
      }
      tile[i] = v;
    }
    for (var i = tid; i < COB * CIB * KH * KW; i += THREADS) {
      let o = i / (CIB * KH * KW);
      let ci = ci0 + (i / (KH * KW)) % CIB;
      var v = 0.0;
      if (m0 + o < p.cout_g && ci < p.cin_g) {
        v = Wt[((g * p.cout_g + m0 + o) * p.cin_g + ci) * KH * KW + i % (KH * KW)];
      }
      wts[i] = v;
    }
    workgroupBarrier();
    for (var ci = 0u; ci < CIB; ci++) {
      for (var r = 0u; r < KH; r++) {
        for (var c = 0u; c < KW; c++) {
          let xv = tile[(ci * IN_H + ty * SH + r * DH) * IN_W + tx * SW + c * DW];
          for (var o = 0u; o < COB; o++) { acc[o] = fma(xv, wts[((o * CIB + ci) * KH + r) * KW + c], acc[o]); }
        }
      }
    }
    workgroupBarrier();
  }

  let oy = oy0 + ty;
  let ox = ox0 + tx;
  if (oy >= p.oh || ox >= p.ow) { return; }
  for (var o = 0u; o < COB; o++) {
    if (m0 + o >= p.cout_g) { break; }
    let co = g * p.cout_g + m0 + o;
    let yi = ((img * p.c_out + co) * p.oh + oy) * p.ow + ox;
    Y[yi] = epilogue(acc[o], co, yi);
  }
}
