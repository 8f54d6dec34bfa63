// Winograd F(2x2, 3x3) weight transform: U = G g G^T for each 3x3 filter g[co][ci], stored as
// UT[xi][ci][co] (xi = 4 * row + column of U): the A operand of the 16 GEMMs, contiguous along
// co. One invocation per filter.
@group(0) @binding(0) var<storage, read> W: array<f32>;
@group(0) @binding(1) var<storage, read_write> UT: array<f32>;
struct Params { c_out: u32, c_in: u32 }
@group(0) @binding(2) var<uniform> p: Params;

// G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1] applied to a 3-vector.
fn g3(a: f32, b: f32, c: f32) -> vec4<f32> { return vec4<f32>(a, 0.5 * (a + b + c), 0.5 * (a - b + c), c); }

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = (wid.x + wid.y * nwg.x) * 256u + lid;
  if (i >= p.c_out * p.c_in) { return; }
  let co = i / p.c_in;
  let ci = i % p.c_in;
  let f = i * 9u;
  // Columns of G g (4 x 3), then rows of (G g) G^T.
  let c0 = g3(W[f], W[f + 3u], W[f + 6u]);
  let c1 = g3(W[f + 1u], W[f + 4u], W[f + 7u]);
  let c2 = g3(W[f + 2u], W[f + 5u], W[f + 8u]);
  for (var r = 0u; r < 4u; r++) {
    let u = g3(c0[r], c1[r], c2[r]);
    for (var c = 0u; c < 4u; c++) { UT[((r * 4u + c) * p.c_in + ci) * p.c_out + co] = u[c]; }
  }
}
