// Register-tiled SGEMM with 8 x 4 * CW of C per invocation in named registers. CW 4 (8 x 16):
// twice the FMAs of regtile_main.wgsl's 8 x 8 per workgroup-memory read (per k: 2 vec4s of A and
// 4 of B for 128 FMAs), at the price of ~2x the registers; CW 2 (8 x 8) is regtile_main.wgsl's
// vec4-db schedule without its arrays. A 128 x BN block, BN = 4 * CW * NTN: NTN 16 (256
// invocations; 128 x 256 with CW 4) or 8 (128 invocations, 128 x 128 with CW 4: two workgroups
// per SM by registers). vec4 loads (K % 4 == 0 and, unless B is transposed, N % 4 == 0), the
// next tile's loads issued before this tile's math, two workgroup-memory buffers (one barrier
// per tile), BK 8 or 16. The A tile is stored transposed (As[k][m]) so both operands are read as
// vec4s; an invocation's rows are two vec4s 64 apart and its columns CW vec4s 4 * NTN apart,
// which keeps neighbouring invocations' reads on different banks.
//
// Every register value is a named variable (c<row><column vec4>, the loads' struct fields): no
// private array at all. Through Tint -> SPIR-V -> the NVIDIA driver, a private array whose index
// is not a constant after the driver's unrolling goes to local memory; session 7's version of
// this kernel (accumulators as arrays indexed by the row loop) ran at 2.3 TFLOP/s for that.
// Measured on the H200 in session 8 (docs/benchmarks.md): 8 x 16 reaches 28-30 TFLOP/s at 4096^3
// and 8 x 8 here 33-36, both behind vec4-db's arrays (38.9); BK 16 and UNROLL 0 lose more
// (registers). The knobs stay for the next attempt; ops/matmul.cpp sets the best measured ones.
@group(0) @binding(0) var<storage, read> A: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> B: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> C: array<f32>;
struct Params { M: u32, N: u32, K: u32, trans_b: u32 }
@group(0) @binding(3) var<uniform> p: Params;
//!include "matmul/vec4_loads.wgsl"
//!include "matmul/vec4_store.wgsl"
//!include "matmul/grouped_order.wgsl"

override NTN: u32 = 16u;       // invocations along n: 16 or 8
override CW: u32 = 4u;         // vec4 columns of C per invocation: 4 or 2
override THREADS: u32 = 256u;  // 16 * NTN: tm = tid / NTN (rows), tn = tid % NTN (columns)
override BK: u32 = 8u;         // k per workgroup-memory tile: 8 or 16
override GROUP_M: u32 = 1u;    // block-rows walked together (grouped_order.wgsl; 1: row-major)
// 0: the compiler sees the whole k loop of a tile (BK steps, which it may unroll whole and hoist
// every step's workgroup-memory reads: registers); U > 0: rounds of U steps (unrollable) in an
// outer loop whose trip count is hidden from the compiler (BK / U + a runtime 0).
override UNROLL: u32 = 0u;
const BM = 128u;
override BN: u32 = 4u * CW * NTN;
override KQ: u32 = BK / 4u;                 // vec4s along k per row of an A (or transposed B) tile
override AS: u32 = BK * BM / 4u;            // vec4s per A buffer: [k][m / 4]
override BS: u32 = BK * BN / 4u;            // vec4s per B buffer: [k][n / 4]
override NA: u32 = BK * BM / 4u / THREADS;  // A vec4s each invocation loads per tile: 1, 2 or 4
override NB: u32 = BK * CW / 16u;           // B vec4s likewise (BK * BN / 4 / THREADS): 1, 2 or 4
var<workgroup> As: array<vec4<f32>, 2u * AS>;
var<workgroup> Bs: array<vec4<f32>, 2u * BS>;

// One tile's global loads of one invocation, held in registers across the tile's math: vec4
// number idx = tid + THREADS * l of the A tile (row idx / KQ, k's (idx % KQ) * 4 ..) in a<l>, of
// the B tile (row k = idx / (BN / 4), columns (idx % (BN / 4)) * 4 .., or transposed: row n =
// idx / KQ, k's (idx % KQ) * 4 ..) in b<l>; the fields past NA / NB stay unused.
struct Loads {
  a0: vec4<f32>, a1: vec4<f32>, a2: vec4<f32>, a3: vec4<f32>,
  b0: vec4<f32>, b1: vec4<f32>, b2: vec4<f32>, b3: vec4<f32>,
}

fn fetch_a(idx: u32, m0: u32, k0: u32) -> vec4<f32> { return load_a4(m0 + idx / KQ, k0 + (idx % KQ) * 4u); }
fn fetch_b(idx: u32, n0: u32, k0: u32) -> vec4<f32> {
  if (p.trans_b != 0u) { return load_bt4(n0 + idx / KQ, k0 + (idx % KQ) * 4u); }
  return load_b4(k0 + idx / (BN / 4u), n0 + (idx % (BN / 4u)) * 4u);
}
fn fetch(tid: u32, m0: u32, n0: u32, k0: u32) -> Loads {
  var l: Loads;
  l.a0 = fetch_a(tid, m0, k0);
  if (NA > 1u) { l.a1 = fetch_a(tid + THREADS, m0, k0); }
  if (NA > 2u) {
    l.a2 = fetch_a(tid + 2u * THREADS, m0, k0);
    l.a3 = fetch_a(tid + 3u * THREADS, m0, k0);
  }
  l.b0 = fetch_b(tid, n0, k0);
  if (NB > 1u) { l.b1 = fetch_b(tid + THREADS, n0, k0); }
  if (NB > 2u) {
    l.b2 = fetch_b(tid + 2u * THREADS, n0, k0);
    l.b3 = fetch_b(tid + 3u * THREADS, n0, k0);
  }
  return l;
}

// Stores 4 k's of row `row` transposed: S[k + j][row], in the buffer at vec4 `base` of As (or Bs).
fn put_a(base: u32, idx: u32, v: vec4<f32>) {
  let m = idx / KQ;
  let i = base + (idx % KQ) * 4u * (BM / 4u) + m / 4u;
  As[i][m % 4u] = v.x;
  As[i + BM / 4u][m % 4u] = v.y;
  As[i + 2u * (BM / 4u)][m % 4u] = v.z;
  As[i + 3u * (BM / 4u)][m % 4u] = v.w;
}
fn put_b(base: u32, idx: u32, v: vec4<f32>) {
  if (p.trans_b != 0u) {
    let n = idx / KQ;
    let i = base + (idx % KQ) * 4u * (BN / 4u) + n / 4u;
    Bs[i][n % 4u] = v.x;
    Bs[i + BN / 4u][n % 4u] = v.y;
    Bs[i + 2u * (BN / 4u)][n % 4u] = v.z;
    Bs[i + 3u * (BN / 4u)][n % 4u] = v.w;
  } else {
    Bs[base + idx] = v;  // row idx / (BN / 4), vec4 idx % (BN / 4)
  }
}
fn put(buf: u32, tid: u32, l: Loads) {
  put_a(buf * AS, tid, l.a0);
  if (NA > 1u) { put_a(buf * AS, tid + THREADS, l.a1); }
  if (NA > 2u) {
    put_a(buf * AS, tid + 2u * THREADS, l.a2);
    put_a(buf * AS, tid + 3u * THREADS, l.a3);
  }
  put_b(buf * BS, tid, l.b0);
  if (NB > 1u) { put_b(buf * BS, tid + THREADS, l.b1); }
  if (NB > 2u) {
    put_b(buf * BS, tid + 2u * THREADS, l.b2);
    put_b(buf * BS, tid + 3u * THREADS, l.b3);
  }
}

// Row m of the block's C, columns n, n + 4 * NTN (, n + 8 * NTN, n + 12 * NTN), 4 each.
fn store_row(m: u32, n: u32, v0: vec4<f32>, v1: vec4<f32>, v2: vec4<f32>, v3: vec4<f32>) {
  if (m >= p.M) { return; }
  store4(m, n, v0);
  store4(m, n + 4u * NTN, v1);
  if (CW == 4u) {
    store4(m, n + 8u * NTN, v2);
    store4(m, n + 12u * NTN, v3);
  }
}

@compute @workgroup_size(THREADS)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) tid: u32) {
  let blk = grouped_block(wid, nwg, GROUP_M);
  let m0 = blk.x * BM;
  let n0 = blk.y * BN;
  let tm = tid / NTN;
  let tn = tid % NTN;
  // c<i><j>: row i of 8 (tm * 4 + i, or BM / 2 + tm * 4 + i - 4), vec4 column j of CW.
  var c00 = vec4<f32>(0.0); var c01 = vec4<f32>(0.0); var c02 = vec4<f32>(0.0); var c03 = vec4<f32>(0.0);
  var c10 = vec4<f32>(0.0); var c11 = vec4<f32>(0.0); var c12 = vec4<f32>(0.0); var c13 = vec4<f32>(0.0);
  var c20 = vec4<f32>(0.0); var c21 = vec4<f32>(0.0); var c22 = vec4<f32>(0.0); var c23 = vec4<f32>(0.0);
  var c30 = vec4<f32>(0.0); var c31 = vec4<f32>(0.0); var c32 = vec4<f32>(0.0); var c33 = vec4<f32>(0.0);
  var c40 = vec4<f32>(0.0); var c41 = vec4<f32>(0.0); var c42 = vec4<f32>(0.0); var c43 = vec4<f32>(0.0);
  var c50 = vec4<f32>(0.0); var c51 = vec4<f32>(0.0); var c52 = vec4<f32>(0.0); var c53 = vec4<f32>(0.0);
  var c60 = vec4<f32>(0.0); var c61 = vec4<f32>(0.0); var c62 = vec4<f32>(0.0); var c63 = vec4<f32>(0.0);
  var c70 = vec4<f32>(0.0); var c71 = vec4<f32>(0.0); var c72 = vec4<f32>(0.0); var c73 = vec4<f32>(0.0);

  put(0u, tid, fetch(tid, m0, n0, 0u));
  workgroupBarrier();
  var buf = 0u;
  let kn = select(BK, BK + (p.trans_b >> 31u), UNROLL != 0u);  // trans_b is 0 or 1
  let ku = select(BK, UNROLL, UNROLL != 0u);
  for (var k0 = 0u; k0 < p.K; k0 += BK) {
    // The next tile's loads (zeros past K) in flight during this tile's math.
    let next = fetch(tid, m0, n0, k0 + BK);
    for (var kk = 0u; kk < kn; kk += ku) {
      for (var k = kk; k < kk + ku; k++) {
        let ra = buf * AS + k * (BM / 4u) + tm;
        let a0 = As[ra];
        let a1 = As[ra + BM / 8u];
        let rb = buf * BS + k * (BN / 4u) + tn;
        let b0 = Bs[rb];
        let b1 = Bs[rb + NTN];
        c00 = fma(vec4<f32>(a0.x), b0, c00); c01 = fma(vec4<f32>(a0.x), b1, c01);
        c10 = fma(vec4<f32>(a0.y), b0, c10); c11 = fma(vec4<f32>(a0.y), b1, c11);
        c20 = fma(vec4<f32>(a0.z), b0, c20); c21 = fma(vec4<f32>(a0.z), b1, c21);
        c30 = fma(vec4<f32>(a0.w), b0, c30); c31 = fma(vec4<f32>(a0.w), b1, c31);
        c40 = fma(vec4<f32>(a1.x), b0, c40); c41 = fma(vec4<f32>(a1.x), b1, c41);
        c50 = fma(vec4<f32>(a1.y), b0, c50); c51 = fma(vec4<f32>(a1.y), b1, c51);
        c60 = fma(vec4<f32>(a1.z), b0, c60); c61 = fma(vec4<f32>(a1.z), b1, c61);
        c70 = fma(vec4<f32>(a1.w), b0, c70); c71 = fma(vec4<f32>(a1.w), b1, c71);
        if (CW == 4u) {
          let b2 = Bs[rb + 2u * NTN];
          let b3 = Bs[rb + 3u * NTN];
          c02 = fma(vec4<f32>(a0.x), b2, c02); c03 = fma(vec4<f32>(a0.x), b3, c03);
          c12 = fma(vec4<f32>(a0.y), b2, c12); c13 = fma(vec4<f32>(a0.y), b3, c13);
          c22 = fma(vec4<f32>(a0.z), b2, c22); c23 = fma(vec4<f32>(a0.z), b3, c23);
          c32 = fma(vec4<f32>(a0.w), b2, c32); c33 = fma(vec4<f32>(a0.w), b3, c33);
          c42 = fma(vec4<f32>(a1.x), b2, c42); c43 = fma(vec4<f32>(a1.x), b3, c43);
          c52 = fma(vec4<f32>(a1.y), b2, c52); c53 = fma(vec4<f32>(a1.y), b3, c53);
          c62 = fma(vec4<f32>(a1.z), b2, c62); c63 = fma(vec4<f32>(a1.z), b3, c63);
          c72 = fma(vec4<f32>(a1.w), b2, c72); c73 = fma(vec4<f32>(a1.w), b3, c73);
        }
      }
    }
    // Into the other buffer: its last readers finished the previous tile before the barrier
    // that ended it.
    put(buf ^ 1u, tid, next);
    buf ^= 1u;
    workgroupBarrier();
  }

  let r0 = m0 + tm * 4u;
  let r1 = m0 + BM / 2u + tm * 4u;
  let n = n0 + 4u * tn;
  store_row(r0, n, c00, c01, c02, c03);
  store_row(r0 + 1u, n, c10, c11, c12, c13);
  store_row(r0 + 2u, n, c20, c21, c22, c23);
  store_row(r0 + 3u, n, c30, c31, c32, c33);
  store_row(r1, n, c40, c41, c42, c43);
  store_row(r1 + 1u, n, c50, c51, c52, c53);
  store_row(r1 + 2u, n, c60, c61, c62, c63);
  store_row(r1 + 3u, n, c70, c71, c72, c73);
}
