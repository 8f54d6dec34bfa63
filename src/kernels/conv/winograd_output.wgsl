// Winograd F(2x2, 3x3) output transform: Y = A^T m A for each tile's 16 GEMM results
// m[xi][co][t], written to y (NCHW, ragged edges cut) through the epilogue. One invocation per
// (co, t), t fastest.
@group(0) @binding(0) var<storage, read> Mt: array<f32>;
@group(0) @binding(1) var<storage, read> Bias: array<f32>;
@group(0) @binding(2) var<storage, read> Res: array<f32>;
@group(0) @binding(3) var<storage, read_write> Y: array<f32>;
//!include "conv/params.wgsl"
@group(0) @binding(4) var<uniform> p: Params;  // aux0: tiles per row, aux1: tiles per image
//!include "conv/epilogue.wgsl"

// A^T = [1 1 1 0; 0 1 -1 -1] applied to a 4-vector.
fn at(v: vec4<f32>) -> vec2<f32> { return vec2<f32>(v.x + v.y + v.z, v.y - v.z - v.w); }

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let tiles = p.n * p.aux1;
  let i = (wid.x + wid.y * nwg.x) * 256u + lid;
  if (i >= p.c_out * tiles) { return; }
  let t = i % tiles;
  let co = i / tiles;
  let stride = p.c_out * tiles;
  var m: array<vec4<f32>, 4>;
  for (var r = 0u; r < 4u; r++) {
    for (var c = 0u; c < 4u; c++) { m[r][c] = Mt[(r * 4u + c) * stride + co * tiles + t]; }
  }
  // Rows of A^T m (2 x 4), then each row times A.
  let y2 = array<vec2<f32>, 2>(at(m[0] + m[1] + m[2]), at(m[1] - m[2] - m[3]));
  let img = t / p.aux1;
  let oy = ((t % p.aux1) / p.aux0) * 2u;
  let ox = (t % p.aux0) * 2u;
  for (var r = 0u; r < 2u; r++) {
    if (oy + r >= p.oh) { break; }
    for (var c = 0u; c < 2u; c++) {
      if (ox + c >= p.ow) { break; }
      let yi = ((img * p.c_out + co) * p.oh + oy + r) * p.ow + ox + c;
      Y[yi] = epilogue(y2[r][c], co, yi);
    }
  }
}
