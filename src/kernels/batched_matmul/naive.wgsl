// C[b][M,N] = A[b][M,K] x B[b][K,N] (ONNX MatMul with broadcast batch dims): one invocation per
// output element; each operand's matrix offset comes from the batch index b (4 dims, padded with
// leading extent-1 dims) and per-dim strides (0 where broadcast).
@group(0) @binding(0) var<storage, read> A: array<f32>;
@group(0) @binding(1) var<storage, read> B: array<f32>;
@group(0) @binding(2) var<storage, read_write> C: array<f32>;
struct Params {
  M: u32, N: u32, K: u32, batches: u32,
  e0: u32, e1: u32, e2: u32, e3: u32,
  a0: u32, a1: u32, a2: u32, a3: u32,
  b0: u32, b1: u32, b2: u32, b3: u32,
}
@group(0) @binding(3) var<uniform> p: Params;

@compute @workgroup_size(16, 16)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
  let n = g.x;
  let m = g.y;
  let bi = g.z;
  if (m >= p.M || n >= p.N || bi >= p.batches) { return; }
  var r = bi;
  var i = r % p.e3; r = r / p.e3;
  var ao = i * p.a3;
  var bo = i * p.b3;
  i = r % p.e2; r = r / p.e2; ao += i * p.a2; bo += i * p.b2;
  i = r % p.e1; r = r / p.e1; ao += i * p.a1; bo += i * p.b1;
  ao += r * p.a0;
  bo += r * p.b0;
  var acc = 0.0;
  for (var k = 0u; k < p.K; k++) { acc = fma(A[ao + m * p.K + k], B[bo + k * p.N + n], acc); }
  C[bi * p.M * p.N + m * p.N + n] = acc;
}
