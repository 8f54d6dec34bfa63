// Register-tiled SGEMM for any M, N, K: scalar, bounds-checked loads (see regtile_main.wgsl).
@group(0) @binding(0) var<storage, read> A: array<f32>;
@group(0) @binding(1) var<storage, read> B: array<f32>;
@group(0) @binding(2) var<storage, read_write> C: array<f32>;

fn ld(which: u32, row: u32, col: u32, rows: u32, cols: u32) -> f32 {
  if (row >= rows || col >= cols) { return 0.0; }
  if (which == 0u) { return A[row * cols + col]; }
  return B[row * cols + col];
}
fn load_a4(m: u32, k: u32) -> vec4<f32> {
  return vec4<f32>(ld(0u, m, k, p.M, p.K), ld(0u, m, k + 1u, p.M, p.K), ld(0u, m, k + 2u, p.M, p.K),
                   ld(0u, m, k + 3u, p.M, p.K));
}
fn load_b4(k: u32, n: u32) -> vec4<f32> {
  return vec4<f32>(ld(1u, k, n, p.K, p.N), ld(1u, k, n + 1u, p.K, p.N), ld(1u, k, n + 2u, p.K, p.N),
                   ld(1u, k, n + 3u, p.K, p.N));
}
fn load_bt4(n: u32, k: u32) -> vec4<f32> {
  return vec4<f32>(ld(1u, n, k, p.N, p.K), ld(1u, n, k + 1u, p.N, p.K), ld(1u, n, k + 2u, p.N, p.K),
                   ld(1u, n, k + 3u, p.N, p.K));
}
fn store4(m: u32, n: u32, v: vec4<f32>) {
  for (var c = 0u; c < 4u; c++) {
    if (n + c < p.N) { C[m * p.N + n + c] = v[c]; }
  }
}
//!include "matmul/regtile_main.wgsl"
