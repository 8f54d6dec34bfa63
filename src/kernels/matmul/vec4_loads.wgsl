// vec4 loads of A [M,K] and B ([K,N], or [N,K] transposed) with zeros outside the matrices;
// K (and N unless B is transposed) are multiples of 4. Needs A, B and p declared by the includer.
fn load_a4(m: u32, k: u32) -> vec4<f32> {
  if (m >= p.M || k >= p.K) { return vec4<f32>(0.0); }
  return A[(m * p.K + k) / 4u];
}
fn load_b4(k: u32, n: u32) -> vec4<f32> {
  if (k >= p.K || n >= p.N) { return vec4<f32>(0.0); }
  return B[(k * p.N + n) / 4u];
}
fn load_bt4(n: u32, k: u32) -> vec4<f32> {
  if (n >= p.N || k >= p.K) { return vec4<f32>(0.0); }
  return B[(n * p.K + k) / 4u];
}
