// Depthwise convolution, register-blocked: each invocation computes a block of COLS outputs along
// a row by ROWS outputs down a column of one plane, with no workgroup memory and no barriers (but
// see STAGE below). It
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
// HALO_SCALAR (with VEC4): of a row's aligned blocks, those wholly inside the block's input columns
// are vec4 loads and those only partly needed (the halo at each end: one column each side for a
// 3x3) are scalar loads of the needed columns: half the registers per row (6 floats instead of 12
// for 4 outputs of a 3x3) and a third of the bytes through L1.
// STAGE (with VEC4): a workgroup computes whole rows of a band of one plane, staging the band's
// input rows in workgroup memory first (each input value loaded from memory once per band, by
// coalesced vec4 loads, instead of once per block with the halos from the cache); the blocks then
// read their rows from there.
// SHAPE: the layer's sizes as override constants instead of uniforms, so that the index arithmetic
// (divisions by blocks per row, strips per plane and channels) compiles to multiplications by
// constants; one pipeline per layer shape.
// PLANES (unstaged): an invocation computes its block in PLANES consecutive planes, their rows
// loaded together (more independent loads in flight per invocation, fewer invocations).
// EARLY: each output row stored as soon as its last input row is added (only KH rows of
// accumulators live at a time, so tall blocks, which load fewer halo rows per output, fit the
// registers), instead of the whole block at the end.
// GRID (unstaged): a grid of GRID workgroups sized to the card instead of one invocation per block:
// each invocation walks blocks in a fixed order, so no workgroup is launched per block and there
// is no ragged last wave; CHUNKED gives each workgroup an equal contiguous run of THREADS-block
// units (neighbouring strips on one SM), else the walk strides by the whole grid.
// SHFL (unstaged, one plane, VEC4, COLS == 4, a 3-column window starting one column left of the
// block: 3x3 with pad_left 1): an invocation loads only its own vec4 of each input row; the
// column left of it is the last of the left neighbour's vec4, the one right of it the first of the
// right neighbour's, taken by subgroup shuffles (conv/depthwise_reg_lanes.wgsl, with `enable
// subgroups;` prepended by the host, entry point main_sg): those columns of 4 rows in one vec4, one
// shuffle up and one down per 4 rows, outside any loop. Whether the lanes beside hold blocks
// i - 1 and i + 1 of the same strip is checked once by shuffling the block index (nothing is
// assumed about how invocations map to lanes); where they do not (a subgroup's first and last
// lanes), the column is loaded from memory, by loads that do not wait for the shuffles. Every
// invocation reaches the shuffles: those past the last block compute a clamped one and store
// nothing.
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
override HALO_SCALAR: bool = false;
override SHAPE: bool = false;
override L_CIN: u32 = 1u;  // with SHAPE: p.c_in, p.c_out, p.h, p.w, p.oh, p.ow, p.pad_top
override L_COUT: u32 = 1u;
override L_H: u32 = 1u;
override L_W: u32 = 1u;
override L_OH: u32 = 1u;
override L_OW: u32 = 1u;
override L_PAD_T: u32 = 0u;
override PLANES: u32 = 1u;
override GRID: u32 = 0u;
override EARLY: bool = false;
override CHUNKED: bool = false;
override GRID1: u32 = max(GRID, 1u);  // a divisor even where GRID == 0 (the code is compiled anyway)
override STAGE: bool = false;
override SHFL: bool = false;
var<private> sg_lane: u32;  // SHFL: the invocation's subgroup lane and the subgroup's size (main_sg)
var<private> sg_size: u32;
override BAND: u32 = 1u;       // STAGE: strips per workgroup; THREADS == blocks per row * BAND
override W4: u32 = 1u;         // STAGE: w / 4
override TILE_ROWS: u32 = 1u;  // STAGE: the input rows of a band, (BAND * ROWS - 1) * SH + (KH - 1) * DH + 1
var<workgroup> tile: array<vec4<f32>, TILE_ROWS * W4>;
override STAGE_LOADS: u32 = (TILE_ROWS * W4 + THREADS - 1u) / THREADS;  // per invocation
//!include "conv/window.wgsl"
override IN_ROWS: u32 = (ROWS - 1u) * SH + (KH - 1u) * DH + 1u;
override IN_COLS: u32 = (COLS - 1u) * SW + (KW - 1u) * DW + 1u;
// VEC4: a row's first needed column lies OFF columns into the first of NB aligned blocks.
override BLK0: u32 = (PAD_L + 3u) / 4u;
override OFF: u32 = 4u * BLK0 - PAD_L;
override NB: u32 = (OFF + IN_COLS + 3u) / 4u;
// Register arrays (function-scope arrays need constant sizes): the host keeps PLANES * COLS * ROWS,
// PLANES * IN_COLS, PLANES * KH * KW and PLANES within these (kMaxReg* in ops/conv.cpp).
const MAX_OUT = 64u;
const MAX_IN_COLS = 32u;
const MAX_TAPS = 25u;
const MAX_PLANES = 4u;
const MAX_STAGE_LOADS = 8u;  // STAGE: the host keeps STAGE_LOADS within it (kMaxStageLoads)
const MAX_SHFL_ROWS = 8u;    // SHFL: the host keeps IN_ROWS within it (kMaxShflRows)

fn dim(uniform_value: u32, constant: u32) -> u32 {
  if (SHAPE) { return constant; }
  return uniform_value;
}

// SHFL: a block's input rows, its own vec4 and the columns left (x) and right (y) of it.
struct ShflRows {
  own: array<vec4<f32>, MAX_SHFL_ROWS>,
  side: array<vec2<f32>, MAX_SHFL_ROWS>,
}

// SHFL: the IN_ROWS input rows from iy0 on of block i at column ox0 of the plane at xbase. Call in
// uniform control flow.
fn shfl_rows(xbase: u32, iy0: i32, ox0: u32, h: u32, w: u32, ow: u32, i: u32) -> ShflRows {
  var out: ShflRows;
  let blk = ox0 / 4u;
  let w4 = w / 4u;
  let left_i = index_left(i);
  let right_i = index_right(i);
  let left_ok = sg_lane != 0u && blk != 0u && left_i == i - 1u;
  let right_ok = sg_lane + 1u < sg_size && ox0 + COLS < ow && right_i == i + 1u;
  var mem: array<vec2<f32>, MAX_SHFL_ROWS>;  // the side columns from memory where not from a lane
  for (var r = 0u; r < IN_ROWS; r++) {
    let iy = iy0 + i32(r);
    let in_rows = iy >= 0 && iy < i32(h);
    let row = xbase + u32(max(iy, 0)) * w;
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

// The block of outputs at (ox0, oy0) in planes plane0 .. plane0 + np - 1 (n * c_out + co); STAGE:
// one plane, its rows read from the band staged in `tile` from input row band_iy0 on. SHFL: i the
// block's index, live whether to store it (invocations past the last block compute a clamped one).
fn block(plane0: u32, np: u32, ox0: u32, oy0: u32, band_iy0: i32, i: u32, live: bool) {
  let c_out = dim(p.c_out, L_COUT);
  let h = dim(p.h, L_H);
  let w = dim(p.w, L_W);
  let pad_top = i32(dim(p.pad_top, L_PAD_T));
  var xbase: array<u32, MAX_PLANES>;
  var taps: array<f32, MAX_TAPS>;
  var bias: array<f32, MAX_PLANES>;
  for (var k = 0u; k < PLANES; k++) {
    let co = (plane0 + k) % c_out;
    xbase[k] = depthwise_x_base_of(plane0 + k, dim(p.c_in, L_CIN), c_out, h * w);
    if (k < np) {
      for (var t = 0u; t < KH * KW; t++) { taps[k * KH * KW + t] = Wt[co * KH * KW + t]; }
      bias[k] = 0.0;
      if (HAS_BIAS) { bias[k] = Bias[co]; }
    }
  }
  var acc = array<f32, MAX_OUT>();
  let iy0 = i32(oy0 * SH) - pad_top;
  let ix0 = i32(ox0 * SW) - i32(PAD_L);
  let w4 = i32(w / 4u);
  var sh: ShflRows;
  if (SHFL) { sh = shfl_rows(xbase[0], iy0, ox0, h, w, dim(p.ow, L_OW), i); }
  for (var r = 0u; r < IN_ROWS; r++) {
    let iy = iy0 + i32(r);
    // Zeros (the padding), stored explicitly: a declaration without an initializer inside a loop
    // kept the last iteration's values on SwiftShader. Plane k's columns are v[k * IN_COLS + c].
    var v = array<f32, MAX_IN_COLS>();
    if (SHFL) {
      v[0] = sh.side[r].x;
      for (var e = 0u; e < 4u; e++) { v[1u + e] = sh.own[r][e]; }
      v[5] = sh.side[r].y;
    }
    for (var k = 0u; k < PLANES; k++) {
      if (SHFL || k >= np || iy < 0 || iy >= i32(h)) { continue; }
      let row = xbase[k] + u32(iy) * w;
      let vk = k * IN_COLS;
      if (VEC4) {
        // Blocks wholly inside or outside the row (w % 4 == 0, aligned row starts).
        let b0 = i32(ox0 / 4u) - i32(BLK0);
        for (var b = 0u; b < NB; b++) {
          let blk = b0 + i32(b);
          let inside = blk >= 0 && blk < w4;
          // Block b holds the row's columns c = 4b + e - OFF; the block needs 0 <= c < IN_COLS.
          let whole = 4u * b >= OFF && 4u * b + 4u <= OFF + IN_COLS;
          if (STAGE || !HALO_SCALAR || whole) {
            var q = vec4<f32>(0.0);
            if (inside) {
              if (STAGE) {
                q = tile[u32(iy - band_iy0) * W4 + u32(blk)];
              } else {
                q = X4[row / 4u + u32(blk)];
              }
            }
            for (var e = 0u; e < 4u; e++) {
              let c = i32(b * 4u + e) - i32(OFF);
              if (c >= 0 && c < i32(IN_COLS)) { v[vk + u32(c)] = q[e]; }
            }
          } else if (inside) {
            for (var e = 0u; e < 4u; e++) {
              let c = i32(b * 4u + e) - i32(OFF);
              if (c >= 0 && c < i32(IN_COLS)) { v[vk + u32(c)] = X[row + u32(blk) * 4u + e]; }
            }
          }
        }
      } else {
        for (var c = 0u; c < IN_COLS; c++) {
          let ix = ix0 + i32(c);
          if (ix >= 0 && ix < i32(w)) { v[vk + c] = X[row + u32(ix)]; }
        }
      }
    }
    // This input row feeds output row o through filter row kr where o * SH + kr * DH == r.
    for (var o = 0u; o < ROWS; o++) {
      if (o * SH > r) { break; }
      let dr = r - o * SH;
      if (dr % DH != 0u || dr / DH >= KH) { continue; }
      let kr = dr / DH;
      for (var k = 0u; k < PLANES; k++) {
        for (var oc = 0u; oc < COLS; oc++) {
          for (var kc = 0u; kc < KW; kc++) {
            let a = (k * ROWS + o) * COLS + oc;
            acc[a] = fma(v[k * IN_COLS + oc * SW + kc * DW], taps[(k * KH + kr) * KW + kc], acc[a]);
          }
        }
      }
    }
    if (EARLY) {
      // The output rows whose last input row this was: stored now, their accumulators dead.
      for (var o = 0u; o < ROWS; o++) {
        if (o * SH + (KH - 1u) * DH != r) { continue; }
        for (var k = 0u; k < PLANES; k++) {
          if (k >= np || !live) { break; }
          store_row(plane0 + k, oy0 + o, ox0, row_of(acc, k, o), bias[k]);
        }
      }
    }
  }
  if (!EARLY) {
    // Loops bounded by constants (np <= PLANES): fully unrolled, the accumulators stay registers.
    for (var k = 0u; k < PLANES; k++) {
      if (k >= np || !live) { break; }
      for (var o = 0u; o < ROWS; o++) { store_row(plane0 + k, oy0 + o, ox0, row_of(acc, k, o), bias[k]); }
    }
  }
}

// Output row o of plane k's block, from the accumulators.
fn row_of(acc: array<f32, MAX_OUT>, k: u32, o: u32) -> array<f32, MAX_IN_COLS> {
  var vals: array<f32, MAX_IN_COLS>;
  for (var oc = 0u; oc < COLS; oc++) { vals[oc] = acc[(k * ROWS + o) * COLS + oc]; }
  return vals;
}

// The block's COLS outputs of row oy of a plane (none past the plane's last row), epilogue applied.
fn store_row(plane: u32, oy: u32, ox0: u32, vals: array<f32, MAX_IN_COLS>, bias: f32) {
  let oh = dim(p.oh, L_OH);
  let ow = dim(p.ow, L_OW);
  if (oy >= oh) { return; }
  let yrow = (plane * oh + oy) * ow;
  if (VEC4) {
    for (var q = 0u; q < COLS / 4u; q++) {
      let ox = ox0 + 4u * q;
      if (ox >= ow) { break; }  // out_w % 4 == 0: whole blocks in or out
      let yi = yrow + ox;
      let a = 4u * q;
      Y4[yi / 4u] = vec4<f32>(epilogue_biased(vals[a], bias, yi), epilogue_biased(vals[a + 1u], bias, yi + 1u),
                              epilogue_biased(vals[a + 2u], bias, yi + 2u), epilogue_biased(vals[a + 3u], bias, yi + 3u));
    }
  } else {
    for (var oc = 0u; oc < COLS; oc++) {
      let ox = ox0 + oc;
      if (ox >= ow) { break; }
      let yi = yrow + ox;
      Y4[yi / 4u][yi % 4u] = epilogue_biased(vals[oc], bias, yi);
    }
  }
}

// Unstaged block i (of groups of PLANES planes x strips x blocks per row, blocks fastest).
fn block_at(i: u32) {
  let c_out = dim(p.c_out, L_COUT);
  let blocks_w = (dim(p.ow, L_OW) + COLS - 1u) / COLS;
  let strips = (dim(p.oh, L_OH) + ROWS - 1u) / ROWS;
  let planes = p.n * c_out;
  let rest = i / blocks_w;
  let plane0 = (rest / strips) * PLANES;
  let ox0 = (i % blocks_w) * COLS;
  let oy0 = (rest % strips) * ROWS;
  if (SHFL) {  // PLANES == 1; past the last plane: the last one, not stored
    block(min(plane0, planes - 1u), 1u, ox0, oy0, 0, i, plane0 < planes);
    return;
  }
  if (plane0 >= planes) { return; }
  block(plane0, min(PLANES, planes - plane0), ox0, oy0, 0, i, true);
}

@compute @workgroup_size(THREADS)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  run(gid, nwg, wid, lid);
}

// The kernel (entry points main, and main_sg in conv/depthwise_reg_lanes.wgsl).
fn run(gid: vec3<u32>, nwg: vec3<u32>, wid: vec3<u32>, lid: u32) {
  let c_out = dim(p.c_out, L_COUT);
  let h = dim(p.h, L_H);
  let w = dim(p.w, L_W);
  let blocks_w = (dim(p.ow, L_OW) + COLS - 1u) / COLS;
  let strips = (dim(p.oh, L_OH) + ROWS - 1u) / ROWS;
  let planes = p.n * c_out;
  if (STAGE) {
    // A workgroup: BAND strips of whole rows of one plane (THREADS == blocks_w * BAND).
    let wg = wid.x + wid.y * nwg.x;
    let bands = (strips + BAND - 1u) / BAND;
    let plane = wg / bands;
    let strip0 = (wg % bands) * BAND;
    let band_iy0 = i32(strip0 * ROWS * SH) - i32(dim(p.pad_top, L_PAD_T));
    // The band's input rows, whole, into workgroup memory (zeros above and below the plane), each
    // input vec4 loaded once per band by coalesced loads: all of an invocation's loads first (a
    // constant count, so they are in flight together), then the stores.
    if (plane < planes) {
      let xbase = depthwise_x_base_of(plane, dim(p.c_in, L_CIN), c_out, h * w);
      var staged: array<vec4<f32>, MAX_STAGE_LOADS>;
      for (var j = 0u; j < STAGE_LOADS; j++) {
        let k = lid + j * THREADS;
        let iy = band_iy0 + i32(k / W4);
        staged[j] = vec4<f32>(0.0);
        if (k < TILE_ROWS * W4 && iy >= 0 && iy < i32(h)) { staged[j] = X4[xbase / 4u + u32(iy) * W4 + k % W4]; }
      }
      for (var j = 0u; j < STAGE_LOADS; j++) {
        let k = lid + j * THREADS;
        if (k < TILE_ROWS * W4) { tile[k] = staged[j]; }
      }
    }
    workgroupBarrier();
    if (plane >= planes) { return; }
    block(plane, 1u, (lid % blocks_w) * COLS, (strip0 + lid / blocks_w) * ROWS, band_iy0, 0u, true);
    return;
  }
  if (GRID == 0u) {
    block_at(gid.x + gid.y * nwg.x * THREADS);
    return;
  }
  // A grid sized to the card (GRID workgroups along x): every block once, in a fixed order.
  let blocks = ((planes + PLANES - 1u) / PLANES) * strips * blocks_w;
  if (CHUNKED) {
    // Workgroup g takes units u0 .. u1 - 1 of THREADS blocks each, the units split as evenly as
    // they go (counts differ by at most one; no product that could overflow).
    let units = (blocks + THREADS - 1u) / THREADS;
    let g = wid.x;
    let u0 = g * (units / GRID1) + min(g, units % GRID1);
    let u1 = u0 + units / GRID1 + select(0u, 1u, g < units % GRID1);
    for (var u = u0; u < u1; u++) {
      let i = u * THREADS + lid;
      if (i < blocks) { block_at(i); }
    }
  } else {
    for (var i = gid.x; i < blocks; i += GRID * THREADS) { block_at(i); }
  }
}
