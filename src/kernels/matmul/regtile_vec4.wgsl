// Register-tiled SGEMM with vec4 global loads and stores: needs K % 4 == 0 and, unless B is
// transposed, N % 4 == 0 (see regtile_main.wgsl).
@group(0) @binding(0) var<storage, read> A: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> B: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> C: array<f32>;

//!include "matmul/vec4_loads.wgsl"
fn store4(m: u32, n: u32, v: vec4<f32>) {
  let i = m * p.N + n;
  if (n + 3u < p.N) {
    C[i] = v.x;
    C[i + 1u] = v.y;
    C[i + 2u] = v.z;
    C[i + 3u] = v.w;
  } else {
    for (var c = 0u; c < 4u; c++) {
      if (n + c < p.N) { C[i + c] = v[c]; }
    }
  }
}
//!include "matmul/regtile_main.wgsl"
