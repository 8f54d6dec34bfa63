// Weights from ONNX order W[c_out][k] (k = (ci * kh + r) * kw + c within the group) to the GEMM
// kernels' A layout WT[group][k][m] (m: output channel within the group), so that a tile of A
// loads contiguously along m. One invocation per weight.
@group(0) @binding(0) var<storage, read> W: array<f32>;
@group(0) @binding(1) var<storage, read_write> WT: array<f32>;
struct Params { c_out: u32, cout_g: u32, k: u32, taps: u32 }
@group(0) @binding(2) var<uniform> p: Params;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = (wid.x + wid.y * nwg.x) * 256u + lid;
  if (i >= p.c_out * p.k) { return; }
  let co = i / p.k;
  let k = i % p.k;
  let g = co / p.cout_g;
  WT[(g * p.k + k) * p.cout_g + co % p.cout_g] = W[i];
}
