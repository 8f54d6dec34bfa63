// Implicit-GEMM convolution of NHWC tensors (x [n][h][w][c_in], y [n][oh][ow][c_out];
// conv/gemm_main.wgsl): k = (r, c, ci), so consecutive k are consecutive channels of one input
// pixel and B loads as vec4s (c_in / groups a multiple of 4). The experiment behind docs/cnn.md's
// section on why NCHW: the layout the library uses is NCHW; this rung is measured, not used by Auto.
@group(0) @binding(0) var<storage, read> X: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> WT: array<f32>;
@group(0) @binding(2) var<storage, read> Bias: array<f32>;
@group(0) @binding(3) var<storage, read> Res: array<f32>;
@group(0) @binding(4) var<storage, read_write> Y: array<f32>;
//!include "conv/params.wgsl"
@group(0) @binding(5) var<uniform> p: Params;  // aux0: blocks along m
//!include "conv/epilogue.wgsl"

override KH: u32 = 3u;
override KW: u32 = 3u;

// This invocation's B vec4s of a tile (4 channels each), and where its column reads x.
var<private> rb: array<vec4<f32>, 4>;
struct BColumn {
  ok: bool,
  col: u32,    // within the block
  img: u32,
  chan: u32,   // the group's first input channel
  iy0: i32,    // where the window starts
  ix0: i32,
}
var<private> lb: BColumn;

fn init_b(tid: u32, col: u32, ok: bool, g: u32) {
  let P = p.oh * p.ow;
  let pix = col % P;
  lb = BColumn(ok, tid % BN, col / P, g * p.cin_g, i32((pix / p.ow) * p.stride_h) - i32(p.pad_top),
               i32((pix % p.ow) * p.stride_w) - i32(p.pad_left));
}

override NBV: u32 = BK * BN / 4u / THREADS;  // vec4s of B per invocation per tile

fn load_b(k0: u32) {
  let K = p.cin_g * KH * KW;
  for (var j = 0u; j < NBV; j++) {
    let k = k0 + (la.tid / BN + j * (THREADS / BN)) * 4u;
    var v = vec4<f32>(0.0);
    if (lb.ok && k < K) {
      let tap = k / p.cin_g;
      let iy = lb.iy0 + i32((tap / KW) * p.dil_h);
      let ix = lb.ix0 + i32((tap % KW) * p.dil_w);
      if (iy >= 0 && iy < i32(p.h) && ix >= 0 && ix < i32(p.w)) {
        v = X[(((lb.img * p.h + u32(iy)) * p.w + u32(ix)) * p.c_in + lb.chan + k % p.cin_g) / 4u];
      }
    }
    rb[j] = v;
  }
}

fn stage_b(tid: u32) {
  for (var j = 0u; j < NBV; j++) {
    let kl = (tid / BN + j * (THREADS / BN)) * 4u;
    for (var e = 0u; e < 4u; e++) { Bs[(kl + e) * (BN / 4u) + lb.col / 4u][lb.col % 4u] = rb[j][e]; }
  }
}

fn y_index(col: u32, co: u32) -> u32 { return col * p.c_out + co; }
fn y_co_stride() -> u32 { return 1u; }

//!include "conv/gemm_main.wgsl"
