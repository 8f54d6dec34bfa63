// Winograd F(2x2, 3x3) output transform (conv/winograd_common.wgsl): Y = A^T m A for each
// tile's ALPHA^2 GEMM results m[xi][co][t], written to y (NCHW, ragged edges cut) through the
// epilogue. One invocation per (co, t), t fastest.
@group(0) @binding(0) var<storage, read> Mt: array<f32>;
@group(0) @binding(1) var<storage, read> Bias: array<f32>;
@group(0) @binding(2) var<storage, read> Res: array<f32>;
@group(0) @binding(3) var<storage, read_write> Y: array<f32>;
//!include "conv/params.wgsl"
@group(0) @binding(4) var<uniform> p: Params;  // aux0: tiles per row, aux1: tiles per image
//!include "conv/epilogue.wgsl"
//!include "conv/winograd_common.wgsl"

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let tiles = p.n * p.aux1;
  let i = (wid.x + wid.y * nwg.x) * 256u + lid;
  if (i >= p.c_out * tiles) { return; }
  let t = i % tiles;
  let co = i / tiles;
  let stride = p.c_out * tiles;
  var m: array<V4, 4>;  // m[column][row]
  for (var r = 0u; r < ALPHA; r++) {
    for (var c = 0u; c < ALPHA; c++) { m[c][r] = Mt[(r * ALPHA + c) * stride + co * tiles + t]; }
  }
  // Columns of A^T m (TILE x ALPHA), then each row of that times A.
  var e: array<V4, 2>;  // e[row][column]
  for (var c = 0u; c < ALPHA; c++) {
    let col = at(m[c]);
    for (var r = 0u; r < TILE; r++) { e[r][c] = col[r]; }
  }
  let img = t / p.aux1;
  let oy = ((t % p.aux1) / p.aux0) * TILE;
  let ox = (t % p.aux0) * TILE;
  for (var r = 0u; r < TILE; r++) {
    if (oy + r >= p.oh) { break; }
    let y = at(e[r]);
    for (var c = 0u; c < TILE; c++) {
      if (ox + c >= p.ow) { break; }
      let yi = ((img * p.c_out + co) * p.oh + oy + r) * p.ow + ox + c;
      Y[yi] = epilogue(y[c], co, yi);
    }
  }
}
