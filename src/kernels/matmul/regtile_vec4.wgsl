// Register-tiled SGEMM with vec4 global loads and stores: needs K % 4 == 0 and, unless B is
// transposed, N % 4 == 0 (see regtile_main.wgsl).
@group(0) @binding(0) var<storage, read> A: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> B: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> C: array<f32>;

//!include "matmul/vec4_loads.wgsl"
//!include "matmul/vec4_store.wgsl"
//!include "matmul/regtile_main.wgsl"
