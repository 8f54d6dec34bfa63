// After the im2col GEMM of group aux0: C[m][n * oh * ow + pixel] (the group's output channels)
// to y[n][aux0 * cout_g + m][pixel] through the epilogue. One invocation per element of y's
// group slice, pixels fastest.
@group(0) @binding(0) var<storage, read> C: array<f32>;
@group(0) @binding(1) var<storage, read> Bias: array<f32>;
@group(0) @binding(2) var<storage, read> Res: array<f32>;
@group(0) @binding(3) var<storage, read_write> Y: array<f32>;
//!include "conv/params.wgsl"
@group(0) @binding(4) var<uniform> p: Params;
//!include "conv/epilogue.wgsl"

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let P = p.oh * p.ow;
  let i = (wid.x + wid.y * nwg.x) * 256u + lid;
  if (i >= p.n * p.cout_g * P) { return; }
  let pix = i % P;
  let m = (i / P) % p.cout_g;
  let img = i / (P * p.cout_g);
  let co = p.aux0 * p.cout_g + m;
  let yi = (img * p.c_out + co) * P + pix;
  Y[yi] = epilogue(C[m * p.n * P + img * P + pix], co, yi);
}
