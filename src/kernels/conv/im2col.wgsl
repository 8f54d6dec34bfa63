// im2col for group aux0: col[k][n * oh * ow + pixel] with k = (ci * kh + r) * kw + c over the
// group's input channels, zeros where a tap falls in the padding (cpu::im2col is the same on the
// CPU). One invocation per element of col, columns fastest (contiguous stores).
//!include "conv/params.wgsl"
@group(0) @binding(0) var<storage, read> X: array<f32>;
@group(0) @binding(1) var<storage, read_write> Col: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let P = p.oh * p.ow;
  let cols = p.n * P;
  let i = (wid.x + wid.y * nwg.x) * 256u + lid;
  if (i >= p.cin_g * p.kh * p.kw * cols) { return; }
  let col = i % cols;
  let k = i / cols;
  let ci = p.aux0 * p.cin_g + k / (p.kh * p.kw);
  let r = (k / p.kw) % p.kh;
  let c = k % p.kw;
  let img = col / P;
  let iy = i32(((col % P) / p.ow) * p.stride_h + r * p.dil_h) - i32(p.pad_top);
  let ix = i32((col % p.ow) * p.stride_w + c * p.dil_w) - i32(p.pad_left);
  var v = 0.0;
  if (iy >= 0 && iy < i32(p.h) && ix >= 0 && ix < i32(p.w)) { v = X[((img * p.c_in + ci) * p.h + u32(iy)) * p.w + u32(ix)]; }
  Col[i] = v;
}
