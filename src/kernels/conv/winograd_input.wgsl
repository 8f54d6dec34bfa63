// Winograd F(2x2, 3x3) input transform: V = B^T d B for each 4x4 input tile d (stride 2, zeros
// in the padding), stored as V[xi][ci][t] with t = (image, tile row, tile column): the B operand
// of the 16 GEMMs. One invocation per (ci, t), t fastest so the stores are contiguous.
//!include "conv/params.wgsl"
@group(0) @binding(0) var<storage, read> X: array<f32>;
@group(0) @binding(1) var<storage, read_write> V: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;  // aux0: tiles per row, aux1: tiles per image

// B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1] applied to a 4-vector.
fn bt(v: vec4<f32>) -> vec4<f32> { return vec4<f32>(v.x - v.z, v.y + v.z, v.z - v.y, v.y - v.w); }

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let tiles = p.n * p.aux1;
  let i = (wid.x + wid.y * nwg.x) * 256u + lid;
  if (i >= p.c_in * tiles) { return; }
  let t = i % tiles;
  let ci = i / tiles;
  let img = t / p.aux1;
  let y0 = i32(((t % p.aux1) / p.aux0) * 2u) - i32(p.pad_top);
  let x0 = i32((t % p.aux0) * 2u) - i32(p.pad_left);
  let plane = (img * p.c_in + ci) * p.h * p.w;
  var d: array<vec4<f32>, 4>;
  for (var r = 0u; r < 4u; r++) {
    let y = y0 + i32(r);
    var row = vec4<f32>(0.0);
    if (y >= 0 && y < i32(p.h)) {
      for (var c = 0u; c < 4u; c++) {
        let x = x0 + i32(c);
        if (x >= 0 && x < i32(p.w)) { row[c] = X[plane + u32(y) * p.w + u32(x)]; }
      }
    }
    d[r] = row;
  }
  // Rows of B^T d, then each row times B.
  let rows = array<vec4<f32>, 4>(d[0] - d[2], d[1] + d[2], d[2] - d[1], d[1] - d[3]);
  let stride = p.c_in * tiles;
  for (var r = 0u; r < 4u; r++) {
    let v = bt(rows[r]);
    for (var c = 0u; c < 4u; c++) { V[(r * 4u + c) * stride + ci * tiles + t] = v[c]; }
  }
}
