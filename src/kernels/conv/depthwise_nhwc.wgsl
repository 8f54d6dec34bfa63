// Depthwise convolution on NHWC tensors (an experiment beside the NCHW kernels, docs/cnn.md): x
// [n][h][w][c], y and the residual [n][out_h][out_w][c], the filter [kh][kw][c], c a multiple of
// 4, channel multiplier 1. An invocation computes 4 channels of a block of COLS pixels along a row
// by ROWS down a column: each input pixel's 4 channels are one 16-byte load, every byte of which
// is used (NCHW's vec4 rows load whole blocks for a column or two of halo), and neighbouring
// invocations take neighbouring channels, so a subgroup's loads are contiguous.
@group(0) @binding(0) var<storage, read> X4: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> W4: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> Bias4: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> Res4: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> Y4: array<vec4<f32>>;
//!include "conv/params.wgsl"
@group(0) @binding(5) var<uniform> p: Params;

override COLS: u32 = 4u;
override ROWS: u32 = 2u;
override THREADS: u32 = 128u;
override HAS_BIAS: bool = false;
override HAS_RESIDUAL: bool = false;
override ACT: u32 = 0u;  // as conv/epilogue.wgsl's
//!include "conv/window.wgsl"
override IN_ROWS: u32 = (ROWS - 1u) * SH + (KH - 1u) * DH + 1u;
override IN_COLS: u32 = (COLS - 1u) * SW + (KW - 1u) * DW + 1u;
// Register arrays (constant sizes): the host keeps COLS * ROWS and IN_COLS within these.
const MAX_OUT = 16u;
const MAX_IN_COLS = 32u;

@compute @workgroup_size(THREADS)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let c4 = p.c_in / 4u;
  let blocks_w = (p.ow + COLS - 1u) / COLS;
  let strips = (p.oh + ROWS - 1u) / ROWS;
  let i = gid.x + gid.y * nwg.x * THREADS;
  let q = i % c4;  // the channels 4q .. 4q + 3
  var rest = i / c4;
  let ox0 = (rest % blocks_w) * COLS;
  rest /= blocks_w;
  let oy0 = (rest % strips) * ROWS;
  let n = rest / strips;
  if (n >= p.n) { return; }
  var acc = array<vec4<f32>, MAX_OUT>();
  let iy0 = i32(oy0 * SH) - i32(p.pad_top);
  let ix0 = i32(ox0 * SW) - i32(p.pad_left);
  for (var r = 0u; r < IN_ROWS; r++) {
    let iy = iy0 + i32(r);
    var v = array<vec4<f32>, MAX_IN_COLS>();  // zeros: the padding
    if (iy >= 0 && iy < i32(p.h)) {
      let row = (n * p.h + u32(iy)) * p.w;
      for (var c = 0u; c < IN_COLS; c++) {
        let ix = ix0 + i32(c);
        if (ix >= 0 && ix < i32(p.w)) { v[c] = X4[(row + u32(ix)) * c4 + q]; }
      }
    }
    // This input row feeds output row o through filter row kr where o * SH + kr * DH == r.
    for (var o = 0u; o < ROWS; o++) {
      if (o * SH > r) { break; }
      let dr = r - o * SH;
      if (dr % DH != 0u || dr / DH >= KH) { continue; }
      let kr = dr / DH;
      for (var kc = 0u; kc < KW; kc++) {
        let tap = W4[(kr * KW + kc) * c4 + q];
        for (var oc = 0u; oc < COLS; oc++) {
          acc[o * COLS + oc] = fma(v[oc * SW + kc * DW], tap, acc[o * COLS + oc]);
        }
      }
    }
  }
  var bias = vec4<f32>(0.0);
  if (HAS_BIAS) { bias = Bias4[q]; }
  for (var o = 0u; o < ROWS; o++) {
    let oy = oy0 + o;
    if (oy >= p.oh) { break; }
    for (var oc = 0u; oc < COLS; oc++) {
      let ox = ox0 + oc;
      if (ox >= p.ow) { break; }
      let yi = ((n * p.oh + oy) * p.ow + ox) * c4 + q;
      var y = acc[o * COLS + oc] + bias;
      if (HAS_RESIDUAL) { y += Res4[yi]; }
      if (ACT == 1u) { y = max(y, vec4<f32>(0.0)); }
      if (ACT == 2u) { y = min(max(y, vec4<f32>(p.clip_min)), vec4<f32>(p.clip_max)); }
      Y4[yi] = y;
    }
  }
}
