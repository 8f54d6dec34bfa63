// C[M,N] = A[M,K] x B (B is [K,N], or [N,K] when trans_b). One invocation per output element,
// every operand read from global memory: the baseline the other versions are measured against.
@group(0) @binding(0) var<storage, read> A: array<f32>;
@group(0) @binding(1) var<storage, read> B: array<f32>;
@group(0) @binding(2) var<storage, read_write> C: array<f32>;
struct Params { M: u32, N: u32, K: u32, trans_b: u32 }
@group(0) @binding(3) var<uniform> p: Params;

@compute @workgroup_size(16, 16)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
  let n = g.x;
  let m = g.y;
  if (m >= p.M || n >= p.N) { return; }
  var acc = 0.0;
  if (p.trans_b != 0u) {
    for (var k = 0u; k < p.K; k++) { acc += A[m * p.K + k] * B[n * p.K + k]; }
  } else {
    for (var k = 0u; k < p.K; k++) { acc += A[m * p.K + k] * B[k * p.N + n]; }
  }
  C[m * p.N + n] = acc;
}
