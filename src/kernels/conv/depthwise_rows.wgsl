// Depthwise convolution without workgroup memory or barriers: each invocation computes ROWS
// outputs down one column of one plane, reading the taps straight from memory. Neighbouring
// invocations take neighbouring columns (coalesced loads; the taps they share hit the cache), and
// the input rows that a strip's outputs share come from the cache too. Kernel size, stride and
// dilation are override constants (unrolled tap loops); the filter goes to registers (at most 25
// taps).
//!include "conv/bindings.wgsl"
//!include "conv/depthwise_plane.wgsl"

override ROWS: u32 = 4u;
override THREADS: u32 = 128u;
//!include "conv/window.wgsl"

@compute @workgroup_size(THREADS)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let strips = (p.oh + ROWS - 1u) / ROWS;
  let i = gid.x + gid.y * nwg.x * THREADS;
  let ox = i % p.ow;
  let rest = i / p.ow;
  let oy0 = (rest % strips) * ROWS;
  let plane = rest / strips;  // n * c_out + co
  if (plane >= p.n * p.c_out) { return; }
  let co = plane % p.c_out;
  let xbase = depthwise_x_base(plane);
  var taps: array<f32, 25>;
  for (var t = 0u; t < KH * KW; t++) { taps[t] = Wt[co * KH * KW + t]; }
  let ix0 = i32(ox * SW) - i32(p.pad_left);
  for (var r = 0u; r < ROWS; r++) {
    let oy = oy0 + r;
    if (oy >= p.oh) { break; }
    let iy0 = i32(oy * SH) - i32(p.pad_top);
    var acc = 0.0;
    for (var kr = 0u; kr < KH; kr++) {
      let iy = iy0 + i32(kr * DH);
      if (iy < 0 || iy >= i32(p.h)) { continue; }
      for (var kc = 0u; kc < KW; kc++) {
        let ix = ix0 + i32(kc * DW);
        if (ix >= 0 && ix < i32(p.w)) { acc = fma(X[xbase + u32(iy) * p.w + u32(ix)], taps[kr * KW + kc], acc); }
      }
    }
    let yi = (plane * p.oh + oy) * p.ow + ox;
    Y[yi] = epilogue(acc, co, yi);
  }
}
