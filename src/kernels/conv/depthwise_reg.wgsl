// Depthwise convolution, register-blocked: each invocation computes a block of COLS outputs along
// a row by ROWS outputs down a column of one plane, with no workgroup memory and no barriers. It
// walks the IN_ROWS input rows of its block once, top to bottom: each row's IN_COLS values are
// loaded once into registers and added into every output row that uses it, so each input value is
// read once per invocation (neighbouring blocks' halos come from the cache). With the loops fully
// unrolled (every bound is an override constant) the loads of all rows are independent and can be
// in flight together, which a memory-bound stencil needs to approach the copy bandwidth; the
// tiled and rows kernels issued theirs a few at a time (docs/cnn.md).
// VEC4: rows of x and y read and written as aligned vec4s (stride 1 along W, w and out_w multiples
// of 4, COLS a multiple of 4; the host checks): a row of the block is a few 16-byte loads and
// COLS / 4 16-byte stores. X4 is x bound a second time, as a vec4 array (read-only bindings may
// alias); y is bound once, as a vec4 array written a component at a time where not VEC4 (its
// buffer and binding are whole vec4s).
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

override COLS: u32 = 4u;
override ROWS: u32 = 4u;
override THREADS: u32 = 128u;
override VEC4: bool = false;
override PAD_L: u32 = 1u;  // p.pad_left, as a constant: which vec4 blocks a row needs
//!include "conv/window.wgsl"
override IN_ROWS: u32 = (ROWS - 1u) * SH + (KH - 1u) * DH + 1u;
override IN_COLS: u32 = (COLS - 1u) * SW + (KW - 1u) * DW + 1u;
// VEC4: a row's first needed column lies OFF columns into the first of NB aligned blocks.
override BLK0: u32 = (PAD_L + 3u) / 4u;
override OFF: u32 = 4u * BLK0 - PAD_L;
override NB: u32 = (OFF + IN_COLS + 3u) / 4u;
// Register arrays (function-scope arrays need constant sizes): the host keeps COLS * ROWS, IN_COLS
// and KH * KW within these (kMaxReg* in ops/conv.cpp).
const MAX_OUT = 64u;
const MAX_IN_COLS = 32u;
const MAX_TAPS = 25u;

@compute @workgroup_size(THREADS)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let blocks_w = (p.ow + COLS - 1u) / COLS;
  let strips = (p.oh + ROWS - 1u) / ROWS;
  let i = gid.x + gid.y * nwg.x * THREADS;
  let ox0 = (i % blocks_w) * COLS;
  let rest = i / blocks_w;
  let oy0 = (rest % strips) * ROWS;
  let plane = rest / strips;  // n * c_out + co
  if (plane >= p.n * p.c_out) { return; }
  let co = plane % p.c_out;
  let xbase = depthwise_x_base(plane);
  var taps: array<f32, MAX_TAPS>;
  for (var t = 0u; t < KH * KW; t++) { taps[t] = Wt[co * KH * KW + t]; }
  var acc = array<f32, MAX_OUT>();
  let iy0 = i32(oy0 * SH) - i32(p.pad_top);
  let ix0 = i32(ox0 * SW) - i32(p.pad_left);
  let w4 = i32(p.w / 4u);
  for (var r = 0u; r < IN_ROWS; r++) {
    let iy = iy0 + i32(r);
    // Zeros (the padding), stored explicitly: a declaration without an initializer inside a loop
    // kept the last iteration's values on SwiftShader.
    var v = array<f32, MAX_IN_COLS>();
    if (iy >= 0 && iy < i32(p.h)) {
      let row = xbase + u32(iy) * p.w;
      if (VEC4) {
        // Blocks wholly inside or outside the row (w % 4 == 0, aligned row starts).
        let b0 = i32(ox0 / 4u) - i32(BLK0);
        for (var b = 0u; b < NB; b++) {
          let blk = b0 + i32(b);
          var q = vec4<f32>(0.0);
          if (blk >= 0 && blk < w4) { q = X4[row / 4u + u32(blk)]; }
          for (var e = 0u; e < 4u; e++) {
            let c = i32(b * 4u + e) - i32(OFF);
            if (c >= 0 && c < i32(IN_COLS)) { v[c] = q[e]; }
          }
        }
      } else {
        for (var c = 0u; c < IN_COLS; c++) {
          let ix = ix0 + i32(c);
          if (ix >= 0 && ix < i32(p.w)) { v[c] = X[row + u32(ix)]; }
        }
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
          acc[o * COLS + oc] = fma(v[oc * SW + kc * DW], taps[kr * KW + kc], acc[o * COLS + oc]);
        }
      }
    }
  }
  for (var o = 0u; o < ROWS; o++) {
    let oy = oy0 + o;
    if (oy >= p.oh) { break; }
    let yrow = (plane * p.oh + oy) * p.ow;
    if (VEC4) {
      for (var q = 0u; q < COLS / 4u; q++) {
        let ox = ox0 + 4u * q;
        if (ox >= p.ow) { break; }  // out_w % 4 == 0: whole blocks in or out
        let yi = yrow + ox;
        let a = o * COLS + 4u * q;
        Y4[yi / 4u] = vec4<f32>(epilogue(acc[a], co, yi), epilogue(acc[a + 1u], co, yi + 1u),
                                epilogue(acc[a + 2u], co, yi + 2u), epilogue(acc[a + 3u], co, yi + 3u));
      }
    } else {
      for (var oc = 0u; oc < COLS; oc++) {
        let ox = ox0 + oc;
        if (ox >= p.ow) { break; }
        let yi = yrow + ox;
        Y4[yi / 4u][yi % 4u] = epilogue(acc[o * COLS + oc], co, yi);
      }
    }
  }
}
