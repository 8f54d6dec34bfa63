// Winograd F(2x2, 3x3) input transform (conv/winograd_common.wgsl): V = B^T d B for each
// ALPHA x ALPHA input tile d (stride TILE, zeros in the padding), stored as V[xi][ci][t] with
// t = (image, tile row, tile column): the B operand of the ALPHA^2 GEMMs. One invocation per
// (ci, t), t fastest so the stores are contiguous.
//!include "conv/params.wgsl"
@group(0) @binding(0) var<storage, read> X: array<f32>;
@group(0) @binding(1) var<storage, read_write> V: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;  // aux0: tiles per row, aux1: tiles per image
//!include "conv/winograd_common.wgsl"

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let tiles = p.n * p.aux1;
  let i = (wid.x + wid.y * nwg.x) * 256u + lid;
  if (i >= p.c_in * tiles) { return; }
  let t = i % tiles;
  let ci = i / tiles;
  let img = t / p.aux1;
  let y0 = i32(((t % p.aux1) / p.aux0) * TILE) - i32(p.pad_top);
  let x0 = i32((t % p.aux0) * TILE) - i32(p.pad_left);
  let plane = (img * p.c_in + ci) * p.h * p.w;
  var d: array<V4, 4>;  // d[column][row]
  for (var r = 0u; r < ALPHA; r++) {
    let y = y0 + i32(r);
    if (y < 0 || y >= i32(p.h)) { continue; }
    for (var c = 0u; c < ALPHA; c++) {
      let x = x0 + i32(c);
      if (x >= 0 && x < i32(p.w)) { d[c][r] = X[plane + u32(y) * p.w + u32(x)]; }
    }
  }
  // Columns of B^T d, then each row of that times B.
  var e: array<V4, 4>;  // e[row][column] = (B^T d)[row][column]
  for (var c = 0u; c < ALPHA; c++) {
    let col = bt(d[c]);
    for (var r = 0u; r < ALPHA; r++) { e[r][c] = col[r]; }
  }
  let stride = p.c_in * tiles;
  for (var r = 0u; r < ALPHA; r++) {
    let v = bt(e[r]);
    for (var c = 0u; c < ALPHA; c++) { V[(r * ALPHA + c) * stride + ci * tiles + t] = v[c]; }
  }
}
