// Depthwise convolution, register-blocked, halos through subgroup shuffles: depthwise_reg.wgsl's
// VEC4 path (stride 1 along W, widths multiples of 4, COLS a multiple of 4), but an invocation
// loads only its own COLS / 4 aligned vec4 blocks of each input row; the blocks left and right of
// them (the filter's halo) are its neighbours' own blocks, taken with subgroupShuffle. So each
// input vec4 is read once per row strip instead of once per block that needs it (3x for 3x3
// with 4-wide blocks), and the loads are the row's contiguous vec4s. A neighbour that is not in
// the subgroup, or in another row strip, is checked by shuffling its block index too (nothing is
// assumed about how invocations map to subgroups); the block is then loaded from memory.
// Everything up to the shuffles runs in uniform control flow: invocations past the last output
// take part with zeros.
enable subgroups;
@group(0) @binding(0) var<storage, read> X: array<f32>;
@group(0) @binding(1) var<storage, read> Wt: array<f32>;
@group(0) @binding(2) var<storage, read> Bias: array<f32>;
@group(0) @binding(3) var<storage, read> Res: array<f32>;
@group(0) @binding(4) var<storage, read_write> Y4: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read> X4: array<vec4<f32>>;
//!include "conv/params.wgsl"
@group(0) @binding(6) var<uniform> p: Params;
//!include "conv/depthwise_plane.wgsl"
//!include "conv/epilogue.wgsl"

override COLS: u32 = 4u;  // a multiple of 4
override ROWS: u32 = 4u;
override THREADS: u32 = 128u;
override VEC4: bool = true;  // always (the host picks this kernel for vec4 layouts only)
override PAD_L: u32 = 1u;
//!include "conv/window.wgsl"
override IN_ROWS: u32 = (ROWS - 1u) * SH + (KH - 1u) * DH + 1u;
override IN_COLS: u32 = (COLS - 1u) + (KW - 1u) * DW + 1u;
override BLK0: u32 = (PAD_L + 3u) / 4u;
override OFF: u32 = 4u * BLK0 - PAD_L;
override NB: u32 = (OFF + IN_COLS + 3u) / 4u;
override CB: u32 = COLS / 4u;  // own blocks per row
const MAX_OUT = 64u;
const MAX_IN_COLS = 32u;
const MAX_TAPS = 25u;
const MAX_CB = 8u;

@compute @workgroup_size(THREADS)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(subgroup_invocation_id) lane: u32, @builtin(subgroup_size) sg_size: u32) {
  let blocks_w = (p.ow + COLS - 1u) / COLS;
  let strips = (p.oh + ROWS - 1u) / ROWS;
  let i = gid.x + gid.y * nwg.x * THREADS;
  let col = i % blocks_w;
  let ox0 = col * COLS;
  let rest = i / blocks_w;
  let oy0 = (rest % strips) * ROWS;
  let live = rest / strips < p.n * p.c_out;
  let plane = min(rest / strips, p.n * p.c_out - 1u);  // n * c_out + co
  let co = plane % p.c_out;
  let xbase = depthwise_x_base(plane);
  var taps: array<f32, MAX_TAPS>;
  for (var t = 0u; t < KH * KW; t++) { taps[t] = Wt[co * KH * KW + t]; }
  var acc = array<f32, MAX_OUT>();
  let iy0 = i32(oy0 * SH) - i32(p.pad_top);
  let w4 = i32(p.w / 4u);
  let own0 = i32(ox0 / 4u);  // the first own block's index in the row
  for (var r = 0u; r < IN_ROWS; r++) {
    let iy = iy0 + i32(r);
    let in_rows = live && iy >= 0 && iy < i32(p.h);
    let row4 = (xbase + u32(max(iy, 0)) * p.w) / 4u;
    var own: array<vec4<f32>, MAX_CB>;
    for (var k = 0u; k < CB; k++) {
      own[k] = vec4<f32>(0.0);
      if (in_rows && own0 + i32(k) < w4) { own[k] = X4[row4 + u32(own0) + k]; }
    }
    var v = array<f32, MAX_IN_COLS>();
    for (var b = 0u; b < NB; b++) {
      // Block b of the window is block e of this invocation's own run: a neighbour's (d != 0)
      // when e is outside 0 .. CB - 1.
      let e = i32(b) - i32(BLK0);
      let d = select(e / i32(CB), (e - i32(CB) + 1) / i32(CB), e < 0);  // floor(e / CB)
      let k = u32(e - d * i32(CB));
      var q = own[k];
      if (d != 0) {
        let src = i32(lane) + d;
        let theirs = subgroupShuffle(own[k], u32(clamp(src, 0, i32(sg_size) - 1)));
        let their_i = subgroupShuffle(i, u32(clamp(src, 0, i32(sg_size) - 1)));
        let same_strip = i32(col) + d >= 0 && i32(col) + d < i32(blocks_w);
        let blk = own0 + e;
        if (src >= 0 && src < i32(sg_size) && same_strip && their_i == u32(i32(i) + d)) {
          q = theirs;
        } else {
          q = vec4<f32>(0.0);
          if (in_rows && blk >= 0 && blk < w4) { q = X4[row4 + u32(blk)]; }
        }
      }
      for (var c4 = 0u; c4 < 4u; c4++) {
        let c = i32(b * 4u + c4) - i32(OFF);
        if (c >= 0 && c < i32(IN_COLS)) { v[c] = q[c4]; }
      }
    }
    // This input row feeds output row o through filter row kr where o * SH + kr * DH == r.
    for (var o = 0u; o < ROWS; o++) {
      if (o * SH > r) { break; }
      let dr = r - o * SH;
      if (dr % DH != 0u || dr / DH >= KH) { continue; }
      let kr = dr / DH;
      for (var oc = 0u; oc < COLS; oc++) {
        for (var kc = 0u; kc < KW; kc++) {
          acc[o * COLS + oc] = fma(v[oc + kc * DW], taps[kr * KW + kc], acc[o * COLS + oc]);
        }
      }
    }
  }
  if (!live) { return; }
  for (var o = 0u; o < ROWS; o++) {
    let oy = oy0 + o;
    if (oy >= p.oh) { break; }
    let yrow = (plane * p.oh + oy) * p.ow;
    for (var q = 0u; q < COLS / 4u; q++) {
      let ox = ox0 + 4u * q;
      if (ox >= p.ow) { break; }  // out_w % 4 == 0: whole blocks in or out
      let yi = yrow + ox;
      let a = o * COLS + 4u * q;
      Y4[yi / 4u] = vec4<f32>(epilogue(acc[a], co, yi), epilogue(acc[a + 1u], co, yi + 1u),
                              epilogue(acc[a + 2u], co, yi + 2u), epilogue(acc[a + 3u], co, yi + 3u));
    }
  }
}
