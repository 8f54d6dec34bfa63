// Depthwise convolution, register-blocked: each invocation computes a block of COLS outputs along
// a row by ROWS outputs down a column of one plane, with no workgroup memory and no barriers. It
// walks the IN_ROWS input rows of its block once, top to bottom: each row's IN_COLS values are
// loaded once into registers and added into every output row that uses it, so each input value is
// read once per invocation (neighbouring blocks' halos come from the cache). With the loops fully
// unrolled (every bound is an override constant) the loads of all rows are independent and can be
// in flight together, which a memory-bound stencil needs to approach the copy bandwidth; the
// tiled and rows kernels issued theirs a few at a time (docs/cnn.md).
// The layer's sizes are override constants (L_*), so that the index arithmetic (divisions by
// blocks per row, strips per plane and channels) compiles to multiplications by constants; one
// pipeline per layer shape.
// VEC4: rows of x and y read and written as aligned vec4s (stride 1 along W, w and out_w multiples
// of 4, COLS a multiple of 4; the host checks): a row of the block is a few 16-byte loads and
// COLS / 4 16-byte stores. X4 is x bound a second time, as a vec4 array (read-only bindings may
// alias); y is bound once, as a vec4 array written a component at a time where not VEC4 (its
// buffer and binding are whole vec4s).
// SHFL (VEC4, COLS == 4, a 3-column window starting one column left of the block: 3x3 with
// pad_left 1): an invocation loads only its own vec4 of each input row; the column left of it is
// the last of the left neighbour's vec4, the one right of it the first of the right neighbour's,
// taken by subgroup shuffles (conv/depthwise_reg_lanes.wgsl, with `enable subgroups;` prepended by
// the host, entry point main_sg): those columns of 4 rows in one vec4, one shuffle up and one down
// per 4 rows, outside any loop. Whether the lanes beside hold blocks i - 1 and i + 1 of the same
// strip is checked once by shuffling the block index (nothing is assumed about how invocations map
// to lanes); where they do not (a subgroup's first and last lanes), the column is loaded from
// memory, by loads that do not wait for the shuffles. Every invocation reaches the shuffles: those
// past the last block compute a clamped one and store nothing.
// Stores: each output row as soon as its last input row is added (only KH rows of accumulators
// live at a time), except under SHFL, where the block is stored at the end (both measured best on
// the H200, docs/history/pruned.md).
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
override L_CIN: u32 = 1u;  // p.c_in, p.c_out, p.h, p.w, p.oh, p.ow, p.pad_top as constants
override L_COUT: u32 = 1u;
override L_H: u32 = 1u;
override L_W: u32 = 1u;
override L_OH: u32 = 1u;
override L_OW: u32 = 1u;
override L_PAD_T: u32 = 0u;
override SHFL: bool = false;
var<private> sg_lane: u32;  // SHFL: the invocation's subgroup lane and the subgroup's size (main_sg)
var<private> sg_size: u32;
//!include "conv/window.wgsl"
override IN_ROWS: u32 = (ROWS - 1u) * SH + (KH - 1u) * DH + 1u;
override IN_COLS: u32 = (COLS - 1u) * SW + (KW - 1u) * DW + 1u;
// VEC4: a row's first needed column lies OFF columns into the first of NB aligned blocks.
override BLK0: u32 = (PAD_L + 3u) / 4u;
override OFF: u32 = 4u * BLK0 - PAD_L;
override NB: u32 = (OFF + IN_COLS + 3u) / 4u;
// Register arrays (function-scope arrays need constant sizes): the host keeps COLS * ROWS,
// IN_COLS and KH * KW within these (kMaxReg* in ops/conv.cpp).
const MAX_OUT = 64u;
const MAX_IN_COLS = 32u;
const MAX_TAPS = 25u;
const MAX_SHFL_ROWS = 8u;  // SHFL: the host keeps IN_ROWS within it (kMaxShflRows)

// SHFL: a block's input rows, its own vec4 and the columns left (x) and right (y) of it.
struct ShflRows {
  own: array<vec4<f32>, MAX_SHFL_ROWS>,
  side: array<vec2<f32>, MAX_SHFL_ROWS>,
}

// SHFL: the IN_ROWS input rows from iy0 on of block i at column ox0 of the plane at xbase. Call in
// uniform control flow.
fn shfl_rows(xbase: u32, iy0: i32, ox0: u32, i: u32) -> ShflRows {
  var out: ShflRows;
  let blk = ox0 / 4u;
  let w4 = L_W / 4u;
  let left_i = index_left(i);
  let right_i = index_right(i);
  let left_ok = sg_lane != 0u && blk != 0u && left_i == i - 1u;
  let right_ok = sg_lane + 1u < sg_size && ox0 + COLS < L_OW && right_i == i + 1u;
  var mem: array<vec2<f32>, MAX_SHFL_ROWS>;  // the side columns from memory where not from a lane
  for (var r = 0u; r < IN_ROWS; r++) {
    let iy = iy0 + i32(r);
    let in_rows = iy >= 0 && iy < i32(L_H);
    let row = xbase + u32(max(iy, 0)) * L_W;
    out.own[r] = vec4<f32>(0.0);
    mem[r] = vec2<f32>(0.0);
    if (in_rows && blk < w4) { out.own[r] = X4[row / 4u + blk]; }
    if (!left_ok && in_rows && blk >= 1u && blk - 1u < w4) { mem[r].x = X[row + 4u * blk - 1u]; }
    if (!right_ok && in_rows && blk + 1u < w4) { mem[r].y = X[row + 4u * blk + 4u]; }
  }
  let o = out.own;
  let l0 = lane_left4(vec4<f32>(o[0].w, o[1].w, o[2].w, o[3].w));
  let r0 = lane_right4(vec4<f32>(o[0].x, o[1].x, o[2].x, o[3].x));
  var l1 = vec4<f32>(0.0);
  var r1 = vec4<f32>(0.0);
  if (IN_ROWS > 4u) {
    l1 = lane_left4(vec4<f32>(o[4].w, o[5].w, o[6].w, o[7].w));
    r1 = lane_right4(vec4<f32>(o[4].x, o[5].x, o[6].x, o[7].x));
  }
  for (var r = 0u; r < IN_ROWS; r++) {
    let l = select(l1[r % 4u], l0[r % 4u], r < 4u);
    let rr = select(r1[r % 4u], r0[r % 4u], r < 4u);
    out.side[r] = vec2<f32>(select(mem[r].x, l, left_ok), select(mem[r].y, rr, right_ok));
  }
  return out;
}

// The block of outputs at (ox0, oy0) in plane `plane` (n * c_out + co). SHFL: i the block's index,
// live whether to store it (invocations past the last block compute a clamped one).
fn block(plane: u32, ox0: u32, oy0: u32, i: u32, live: bool) {
  let co = plane % L_COUT;
  let xbase = depthwise_x_base_of(plane, L_CIN, L_COUT, L_H * L_W);
  var taps: array<f32, MAX_TAPS>;
  for (var t = 0u; t < KH * KW; t++) { taps[t] = Wt[co * KH * KW + t]; }
  var bias = 0.0;
  if (HAS_BIAS) { bias = Bias[co]; }
  var acc = array<f32, MAX_OUT>();
  let iy0 = i32(oy0 * SH) - i32(L_PAD_T);
  let ix0 = i32(ox0 * SW) - i32(PAD_L);
  let w4 = i32(L_W / 4u);
  var sh: ShflRows;
  if (SHFL) { sh = shfl_rows(xbase, iy0, ox0, i); }
  for (var r = 0u; r < IN_ROWS; r++) {
    let iy = iy0 + i32(r);
    // Zeros (the padding), stored explicitly: a declaration without an initializer inside a loop
    // kept the last iteration's values on SwiftShader.
    var v = array<f32, MAX_IN_COLS>();
    if (SHFL) {
      v[0] = sh.side[r].x;
      for (var e = 0u; e < 4u; e++) { v[1u + e] = sh.own[r][e]; }
      v[5] = sh.side[r].y;
    } else if (iy >= 0 && iy < i32(L_H)) {
      let row = xbase + u32(iy) * L_W;
      if (VEC4) {
        // Blocks wholly inside or outside the row (w % 4 == 0, aligned row starts).
        let b0 = i32(ox0 / 4u) - i32(BLK0);
        for (var b = 0u; b < NB; b++) {
          let blk = b0 + i32(b);
          var q = vec4<f32>(0.0);
          if (blk >= 0 && blk < w4) { q = X4[row / 4u + u32(blk)]; }
          // Block b holds the row's columns c = 4b + e - OFF; the block needs 0 <= c < IN_COLS.
          for (var e = 0u; e < 4u; e++) {
            let c = i32(b * 4u + e) - i32(OFF);
            if (c >= 0 && c < i32(IN_COLS)) { v[u32(c)] = q[e]; }
          }
        }
      } else {
        for (var c = 0u; c < IN_COLS; c++) {
          let ix = ix0 + i32(c);
          if (ix >= 0 && ix < i32(L_W)) { v[c] = X[row + u32(ix)]; }
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
          let a = o * COLS + oc;
          acc[a] = fma(v[oc * SW + kc * DW], taps[kr * KW + kc], acc[a]);
        }
      }
    }
    if (!SHFL) {
      // The output rows whose last input row this was: stored now, their accumulators dead.
      for (var o = 0u; o < ROWS; o++) {
        if (o * SH + (KH - 1u) * DH != r) { continue; }
        store_row(plane, oy0 + o, ox0, row_of(acc, o), bias);
      }
    }
  }
  if (SHFL && live) {
    for (var o = 0u; o < ROWS; o++) { store_row(plane, oy0 + o, ox0, row_of(acc, o), bias); }
  }
}

// Output row o of the block, from the accumulators.
fn row_of(acc: array<f32, MAX_OUT>, o: u32) -> array<f32, MAX_IN_COLS> {
  var vals: array<f32, MAX_IN_COLS>;
  for (var oc = 0u; oc < COLS; oc++) { vals[oc] = acc[o * COLS + oc]; }
  return vals;
}

// The block's COLS outputs of row oy of a plane (none past the plane's last row), epilogue applied.
fn store_row(plane: u32, oy: u32, ox0: u32, vals: array<f32, MAX_IN_COLS>, bias: f32) {
  if (oy >= L_OH) { return; }
  let yrow = (plane * L_OH + oy) * L_OW;
  if (VEC4) {
    for (var q = 0u; q < COLS / 4u; q++) {
      let ox = ox0 + 4u * q;
      if (ox >= L_OW) { break; }  // out_w % 4 == 0: whole blocks in or out
      let yi = yrow + ox;
      let a = 4u * q;
      Y4[yi / 4u] = vec4<f32>(epilogue_biased(vals[a], bias, yi), epilogue_biased(vals[a + 1u], bias, yi + 1u),
                              epilogue_biased(vals[a + 2u], bias, yi + 2u), epilogue_biased(vals[a + 3u], bias, yi + 3u));
    }
  } else {
    for (var oc = 0u; oc < COLS; oc++) {
      let ox = ox0 + oc;
      if (ox >= L_OW) { break; }
      let yi = yrow + ox;
      Y4[yi / 4u][yi % 4u] = epilogue_biased(vals[oc], bias, yi);
    }
  }
}

@compute @workgroup_size(THREADS)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  run(gid, nwg);
}

// Block i = gid.x + gid.y * (x's invocations) of planes x strips x blocks per row, blocks fastest
// (entry points main, and main_sg in conv/depthwise_reg_lanes.wgsl).
fn run(gid: vec3<u32>, nwg: vec3<u32>) {
  let i = gid.x + gid.y * nwg.x * THREADS;
  let blocks_w = (L_OW + COLS - 1u) / COLS;
  let strips = (L_OH + ROWS - 1u) / ROWS;
  let planes = p.n * L_COUT;
  let rest = i / blocks_w;
  let plane = rest / strips;
  let ox0 = (i % blocks_w) * COLS;
  let oy0 = (rest % strips) * ROWS;
  if (SHFL) {  // past the last plane: the last one, not stored
    block(min(plane, planes - 1u), ox0, oy0, i, plane < planes);
    return;
  }
  if (plane >= planes) { return; }
  block(plane, ox0, oy0, i, true);
}
