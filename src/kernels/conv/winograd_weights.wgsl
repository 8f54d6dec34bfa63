// Winograd F(2x2, 3x3) weight transform: U = G g G^T (ALPHA x ALPHA, ALPHA = 4) for each 3x3
// filter g[co][ci], stored as UT[xi][ci][co] (xi = ALPHA * row + column of U): the A operand of
// the ALPHA^2 GEMMs, contiguous along co. One invocation per filter.
@group(0) @binding(0) var<storage, read> W: array<f32>;
@group(0) @binding(1) var<storage, read_write> UT: array<f32>;
struct Params { c_out: u32, c_in: u32 }
@group(0) @binding(2) var<uniform> p: Params;
//!include "conv/winograd_common.wgsl"

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = (wid.x + wid.y * nwg.x) * 256u + lid;
  if (i >= p.c_out * p.c_in) { return; }
  let co = i / p.c_in;
  let ci = i % p.c_in;
  let f = i * 9u;
  // Columns of G g (ALPHA x 3), then rows of (G g) G^T.
  let c0 = g3(W[f], W[f + 3u], W[f + 6u]);
  let c1 = g3(W[f + 1u], W[f + 4u], W[f + 7u]);
  let c2 = g3(W[f + 2u], W[f + 5u], W[f + 8u]);
  for (var r = 0u; r < ALPHA; r++) {
    let u = g3(c0[r], c1[r], c2[r]);
    for (var c = 0u; c < ALPHA; c++) { UT[((r * ALPHA + c) * p.c_in + ci) * p.c_out + co] = u[c]; }
  }
}
