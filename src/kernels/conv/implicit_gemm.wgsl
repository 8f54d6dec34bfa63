// Implicit-GEMM convolution of NCHW tensors (conv/gemm_main.wgsl): k = (ci, r, c), B gathered
// from x one value per load, consecutive invocations on consecutive output pixels (coalesced
// along a row at stride 1). POINTWISE: 1x1, stride 1, no padding (B is x_n's rows themselves).
@group(0) @binding(0) var<storage, read> X: array<f32>;
@group(0) @binding(1) var<storage, read> WT: array<f32>;
@group(0) @binding(2) var<storage, read> Bias: array<f32>;
@group(0) @binding(3) var<storage, read> Res: array<f32>;
@group(0) @binding(4) var<storage, read_write> Y: array<f32>;
//!include "conv/params.wgsl"
@group(0) @binding(5) var<uniform> p: Params;  // aux0: blocks along m
//!include "conv/epilogue.wgsl"

override KH: u32 = 3u;
override KW: u32 = 3u;
override POINTWISE: bool = false;

// This invocation's B values of a tile, and where its column reads x.
var<private> rb: array<f32, 16>;
struct BColumn {
  ok: bool,
  col: u32,    // within the block
  pix: u32,    // output pixel in its image
  xbase: u32,  // the image's (and group's) first input plane
  iy0: i32,    // where the window starts
  ix0: i32,
}
var<private> lb: BColumn;

fn init_b(tid: u32, col: u32, ok: bool, g: u32) {
  let P = p.oh * p.ow;
  let pix = col % P;
  lb = BColumn(ok, tid % BN, pix, ((col / P) * p.c_in + g * p.cin_g) * p.h * p.w,
               i32((pix / p.ow) * p.stride_h) - i32(p.pad_top), i32((pix % p.ow) * p.stride_w) - i32(p.pad_left));
}

override NB: u32 = BK * BN / THREADS;

fn load_b(k0: u32) {
  let K = p.cin_g * KH * KW;
  for (var j = 0u; j < NB; j++) {
    let k = k0 + la.tid / BN + j * (THREADS / BN);
    var v = 0.0;
    if (lb.ok && k < K) {
      if (POINTWISE) {
        v = X[lb.xbase + k * p.h * p.w + lb.pix];
      } else {
        let rs = k % (KH * KW);
        let iy = lb.iy0 + i32((rs / KW) * p.dil_h);
        let ix = lb.ix0 + i32((rs % KW) * p.dil_w);
        if (iy >= 0 && iy < i32(p.h) && ix >= 0 && ix < i32(p.w)) {
          v = X[lb.xbase + (k / (KH * KW)) * p.h * p.w + u32(iy) * p.w + u32(ix)];
        }
      }
    }
    rb[j] = v;
  }
}

fn stage_b(tid: u32) {
  for (var j = 0u; j < NB; j++) {
    let kl = tid / BN + j * (THREADS / BN);
    Bs[kl * (BN / 4u) + lb.col / 4u][lb.col % 4u] = rb[j];
  }
}

fn y_index(col: u32, co: u32) -> u32 {
  let P = p.oh * p.ow;
  return ((col / P) * p.c_out + co) * P + col % P;
}
fn y_co_stride() -> u32 { return p.oh * p.ow; }

//!include "conv/gemm_main.wgsl"
