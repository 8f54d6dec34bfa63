// Register-tiled SGEMM with a 128 x 256 block and 8 x 16 of C per invocation: twice the FMAs of
// regtile_main.wgsl's 8 x 8 per workgroup-memory read (per k: 2 vec4s of A and 4 of B for 128
// FMAs), at the price of ~2x the registers (one 256-invocation workgroup per SM). vec4 loads
// (K % 4 == 0 and, unless B is transposed, N % 4 == 0), the next tile's loads issued before this
// tile's math, two workgroup-memory buffers (one barrier per tile), BK 8. The A tile is stored
// transposed (As[k][m]) so both operands are read as vec4s; each invocation's rows and columns
// are vec4s 64 apart, which keeps neighbouring invocations' reads on different banks.
@group(0) @binding(0) var<storage, read> A: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> B: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> C: array<f32>;
struct Params { M: u32, N: u32, K: u32, trans_b: u32 }
@group(0) @binding(3) var<uniform> p: Params;
//!include "matmul/vec4_loads.wgsl"
//!include "matmul/vec4_store.wgsl"

const BM = 128u;
const BN = 256u;
const BK = 8u;
const THREADS = 256u;        // 16 x 16: tm = tid / 16 (rows), tn = tid % 16 (columns)
const AS = BK * BM / 4u;     // vec4s per A buffer: [k][m / 4]
const BS = BK * BN / 4u;     // vec4s per B buffer: [k][n / 4]
var<workgroup> As: array<vec4<f32>, 2u * AS>;
var<workgroup> Bs: array<vec4<f32>, 2u * BS>;

// Per tile each invocation loads one vec4 of A (row tid / 2, k's (tid % 2) * 4 ..) and two of B:
// rows k = idx / 64, columns (idx % 64) * 4 .., or transposed: row n = idx / 2, k's (idx % 2) * 4 ..
// (idx = tid, tid + 256).
struct Loads {
  a: vec4<f32>,
  b0: vec4<f32>,
  b1: vec4<f32>,
}
fn fetch_b(idx: u32, n0: u32, k0: u32) -> vec4<f32> {
  if (p.trans_b != 0u) { return load_bt4(n0 + idx / 2u, k0 + (idx % 2u) * 4u); }
  return load_b4(k0 + idx / 64u, n0 + (idx % 64u) * 4u);
}
fn fetch(tid: u32, m0: u32, n0: u32, k0: u32) -> Loads {
  return Loads(load_a4(m0 + tid / 2u, k0 + (tid % 2u) * 4u), fetch_b(tid, n0, k0), fetch_b(tid + THREADS, n0, k0));
}
fn put_b(base: u32, idx: u32, v: vec4<f32>) {
  if (p.trans_b != 0u) {
    let n = idx / 2u;
    let k = (idx % 2u) * 4u;
    for (var j = 0u; j < 4u; j++) { Bs[base + (k + j) * (BN / 4u) + n / 4u][n % 4u] = v[j]; }
  } else {
    Bs[base + (idx / 64u) * (BN / 4u) + idx % 64u] = v;
  }
}
fn put(buf: u32, tid: u32, l: Loads) {
  let m = tid / 2u;
  let k = (tid % 2u) * 4u;
  for (var j = 0u; j < 4u; j++) { As[buf * AS + (k + j) * (BM / 4u) + m / 4u][m % 4u] = l.a[j]; }
  put_b(buf * BS, tid, l.b0);
  put_b(buf * BS, tid + THREADS, l.b1);
}

@compute @workgroup_size(THREADS)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
  let m0 = wid.y * BM;
  let n0 = wid.x * BN;
  let tm = tid / 16u;
  let tn = tid % 16u;
  var acc: array<vec4<f32>, 32>;  // acc[i * 4 + j]: row i of 8 (tm * 4 + i, or 64 + tm * 4 + i - 4), vec4 column j

  var ld = fetch(tid, m0, n0, 0u);
  put(0u, tid, ld);
  workgroupBarrier();
  var buf = 0u;
  for (var k0 = 0u; k0 < p.K; k0 += BK) {
    let more = k0 + BK < p.K;
    if (more) { ld = fetch(tid, m0, n0, k0 + BK); }
    for (var k = 0u; k < BK; k++) {
      let a0 = As[buf * AS + k * (BM / 4u) + tm];
      let a1 = As[buf * AS + k * (BM / 4u) + tm + 16u];
      var b: array<vec4<f32>, 4>;
      for (var j = 0u; j < 4u; j++) { b[j] = Bs[buf * BS + k * (BN / 4u) + tn + 16u * j]; }
      let av = array<f32, 8>(a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w);
      for (var i = 0u; i < 8u; i++) {
        for (var j = 0u; j < 4u; j++) { acc[i * 4u + j] = fma(vec4<f32>(av[i]), b[j], acc[i * 4u + j]); }
      }
    }
    if (more) { put(buf ^ 1u, tid, ld); }
    buf ^= 1u;
    workgroupBarrier();
  }

  for (var i = 0u; i < 8u; i++) {
    let m = m0 + select(tm * 4u + i, BM / 2u + tm * 4u + (i - 4u), i >= 4u);
    if (m >= p.M) { continue; }
    for (var j = 0u; j < 4u; j++) { store4(m, n0 + 64u * j + tn * 4u, acc[i * 4u + j]); }
  }
}
