// Register-tiled SGEMM with 8 x 16 of C per invocation: twice the FMAs of regtile_main.wgsl's
// 8 x 8 per workgroup-memory read (per k: 2 vec4s of A and 4 of B for 128 FMAs), at the price of
// ~2x the registers. A 128 x BN block, BN = 16 * NTN: NTN 16 (256 invocations, 128 x 256) or 8
// (128 invocations, 128 x 128: more workgroups per SM for the same registers). vec4
// loads (K % 4 == 0 and, unless B is transposed, N % 4 == 0), the next tile's loads issued before
// this tile's math, two workgroup-memory buffers (one barrier per tile), BK 8. The A tile is
// stored transposed (As[k][m]) so both operands are read as vec4s; an invocation's rows are two
// vec4s 64 apart and its columns four vec4s 4 * NTN apart, which keeps neighbouring invocations'
// reads on different banks.
@group(0) @binding(0) var<storage, read> A: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> B: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> C: array<f32>;
struct Params { M: u32, N: u32, K: u32, trans_b: u32 }
@group(0) @binding(3) var<uniform> p: Params;
//!include "matmul/vec4_loads.wgsl"
//!include "matmul/vec4_store.wgsl"

override NTN: u32 = 16u;      // invocations along n: 16 or 8
override THREADS: u32 = 256u; // 16 * NTN: tm = tid / NTN (rows), tn = tid % NTN (columns)
const BM = 128u;
const BK = 8u;
override BN: u32 = 16u * NTN;
override AS: u32 = BK * BM / 4u;  // vec4s per A buffer: [k][m / 4]
override BS: u32 = BK * BN / 4u;  // vec4s per B buffer: [k][n / 4]
override NA: u32 = 256u / THREADS;  // A vec4s each invocation loads per tile (B: always 2)
var<workgroup> As: array<vec4<f32>, 2u * AS>;
var<workgroup> Bs: array<vec4<f32>, 2u * BS>;

// Per tile an invocation loads NA vec4s of A (idx = tid + THREADS * l: row idx / 2, k's
// (idx % 2) * 4 ..) and two of B (idx = tid + THREADS * l: row k = idx / (BN / 4), columns
// (idx % (BN / 4)) * 4 .., or transposed: row n = idx / 2, k's (idx % 2) * 4 ..).
fn fetch_a(idx: u32, m0: u32, k0: u32) -> vec4<f32> { return load_a4(m0 + idx / 2u, k0 + (idx % 2u) * 4u); }
fn fetch_b(idx: u32, n0: u32, k0: u32) -> vec4<f32> {
  if (p.trans_b != 0u) { return load_bt4(n0 + idx / 2u, k0 + (idx % 2u) * 4u); }
  return load_b4(k0 + idx / (BN / 4u), n0 + (idx % (BN / 4u)) * 4u);
}
fn put_a(buf: u32, idx: u32, v: vec4<f32>) {
  let m = idx / 2u;
  let k = (idx % 2u) * 4u;
  for (var j = 0u; j < 4u; j++) { As[buf * AS + (k + j) * (BM / 4u) + m / 4u][m % 4u] = v[j]; }
}
fn put_b(buf: u32, idx: u32, v: vec4<f32>) {
  if (p.trans_b != 0u) {
    let n = idx / 2u;
    let k = (idx % 2u) * 4u;
    for (var j = 0u; j < 4u; j++) { Bs[buf * BS + (k + j) * (BN / 4u) + n / 4u][n % 4u] = v[j]; }
  } else {
    Bs[buf * BS + idx] = v;  // row idx / (BN / 4), vec4 idx % (BN / 4)
  }
}

@compute @workgroup_size(THREADS)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
  let m0 = wid.y * BM;
  let n0 = wid.x * BN;
  let tm = tid / NTN;
  let tn = tid % NTN;
  // accj[i]: row i of 8 (tm * 4 + i, or 64 + tm * 4 + i - 4), vec4 column j: four arrays of 8
  // vec4s indexed by the unrolled row loop alone, as regtile_step.wgsl's acc (one array of 32
  // indexed i * 4 + j ran at 2.3 TFLOP/s on the H200: not kept in registers)
  var acc0: array<vec4<f32>, 8>;
  var acc1: array<vec4<f32>, 8>;
  var acc2: array<vec4<f32>, 8>;
  var acc3: array<vec4<f32>, 8>;

  let two_a = NA == 2u;  // NA is 1 or 2: A loads idx tid, and tid + THREADS where two_a
  var la0 = fetch_a(tid, m0, 0u);
  var la1 = vec4<f32>(0.0);
  if (two_a) { la1 = fetch_a(tid + THREADS, m0, 0u); }
  var lb0 = fetch_b(tid, n0, 0u);
  var lb1 = fetch_b(tid + THREADS, n0, 0u);
  put_a(0u, tid, la0);
  if (two_a) { put_a(0u, tid + THREADS, la1); }
  put_b(0u, tid, lb0);
  put_b(0u, tid + THREADS, lb1);
  workgroupBarrier();
  var buf = 0u;
  for (var k0 = 0u; k0 < p.K; k0 += BK) {
    let more = k0 + BK < p.K;
    if (more) {
      la0 = fetch_a(tid, m0, k0 + BK);
      if (two_a) { la1 = fetch_a(tid + THREADS, m0, k0 + BK); }
      lb0 = fetch_b(tid, n0, k0 + BK);
      lb1 = fetch_b(tid + THREADS, n0, k0 + BK);
    }
    for (var k = 0u; k < BK; k++) {
      let a0 = As[buf * AS + k * (BM / 4u) + tm];
      let a1 = As[buf * AS + k * (BM / 4u) + tm + 16u];
      let b0 = Bs[buf * BS + k * (BN / 4u) + tn];
      let b1 = Bs[buf * BS + k * (BN / 4u) + tn + NTN];
      let b2 = Bs[buf * BS + k * (BN / 4u) + tn + 2u * NTN];
      let b3 = Bs[buf * BS + k * (BN / 4u) + tn + 3u * NTN];
      let av = array<f32, 8>(a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w);
      for (var i = 0u; i < 8u; i++) {
        let a = vec4<f32>(av[i]);
        acc0[i] = fma(a, b0, acc0[i]);
        acc1[i] = fma(a, b1, acc1[i]);
        acc2[i] = fma(a, b2, acc2[i]);
        acc3[i] = fma(a, b3, acc3[i]);
      }
    }
    if (more) {
      put_a(buf ^ 1u, tid, la0);
      if (two_a) { put_a(buf ^ 1u, tid + THREADS, la1); }
      put_b(buf ^ 1u, tid, lb0);
      put_b(buf ^ 1u, tid + THREADS, lb1);
    }
    buf ^= 1u;
    workgroupBarrier();
  }

  for (var i = 0u; i < 8u; i++) {
    let m = m0 + select(tm * 4u + i, BM / 2u + tm * 4u + (i - 4u), i >= 4u);
    if (m >= p.M) { continue; }
    store4(m, n0 + 4u * tn, acc0[i]);
    store4(m, n0 + 4u * (NTN + tn), acc1[i]);
    store4(m, n0 + 4u * (2u * NTN + tn), acc2[i]);
    store4(m, n0 + 4u * (3u * NTN + tn), acc3[i]);
  }
}
