// The second half of a split-K implicit GEMM (conv/gemm_main.wgsl): y[i] = epilogue(sum over the
// slices of Part[slice * total + i]), one invocation per output of an NCHW y.
@group(0) @binding(0) var<storage, read> Part: array<f32>;
@group(0) @binding(1) var<storage, read> Bias: array<f32>;
@group(0) @binding(2) var<storage, read> Res: array<f32>;
@group(0) @binding(3) var<storage, read_write> Y: array<f32>;
//!include "conv/params.wgsl"
@group(0) @binding(4) var<uniform> p: Params;  // aux1: slices, aux2: total outputs
//!include "conv/epilogue.wgsl"

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * nwg.x * 256u;
  if (i >= p.aux2) { return; }
  var v = 0.0;
  for (var s = 0u; s < p.aux1; s++) { v += Part[s * p.aux2 + i]; }
  let co = (i / (p.oh * p.ow)) % p.c_out;
  Y[i] = epilogue(v, co, i);
}
