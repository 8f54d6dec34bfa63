// vec4-db2's declarations, tile loads and stores, shared by regtile_db.wgsl (8 x 8 of C per
// invocation) and regtile_db16.wgsl (8 x 16); see regtile_db.wgsl for the knobs.
@group(0) @binding(0) var<storage, read> A: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> B: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> C: array<f32>;
struct Params { M: u32, N: u32, K: u32, trans_b: u32 }
@group(0) @binding(3) var<uniform> p: Params;
//!include "matmul/vec4_loads.wgsl"
//!include "matmul/vec4_store.wgsl"
//!include "matmul/grouped_order.wgsl"

override BM: u32 = 128u;
override BN: u32 = 128u;
const BK = 8u;                            // k per tile: 16 lost in every form measured (registers)
const KQ = BK / 4u;                       // vec4s along k per row of an A (or transposed B) tile
override GROUP_M: u32 = 1u;               // block-rows walked together (1: row-major)
// 0: the compiler sees each tile's whole k loop (BK steps, which it may unroll whole and hoist the
// reads of, at the price of registers: vec4-db's form); U: rounds of U steps in an outer loop whose
// trip count (BK + 0, from a uniform) the compiler cannot see. Session 8 measured 30-36 TFLOP/s
// by this choice alone in named registers (docs/benchmarks.md).
override KU: u32 = 0u;
override TN: u32 = 8u;                    // columns per invocation: 8 (regtile_db.wgsl) or 16
override NTN: u32 = BN / TN;              // invocations along n
override THREADS: u32 = (BM / 8u) * NTN;  // along m: BM / 8
override WN: u32 = NTN;                   // a divisor of NTN and of 32, with BM * WN % 256 == 0
override AS: u32 = BK * BM / 4u;          // vec4s per A buffer: [k][m / 4]
override BS: u32 = BK * BN / 4u;          // vec4s per B buffer: [k][n / 4]
// A tile holds 16 * TN / BN (B: 16 * TN / BM) vec4s per invocation: a second load where that is 2.
override A2: bool = AS > THREADS;
override B2: bool = BS > THREADS;
var<workgroup> As: array<vec4<f32>, 2u * AS>;
var<workgroup> Bs: array<vec4<f32>, 2u * BS>;

// vec4 number idx of the tile at k0 (zeros past the matrices, and past the tile where a tile has
// fewer vec4s than invocations): A row idx / KQ, k's (idx % KQ) * 4 ..; B row k = idx / (BN / 4),
// columns (idx % (BN / 4)) * 4 .., or transposed: row n = idx / KQ, k's (idx % KQ) * 4 ...
fn fetch_a(idx: u32, m0: u32, k0: u32) -> vec4<f32> {
  if (idx >= AS) { return vec4<f32>(0.0); }
  return load_a4(m0 + idx / KQ, k0 + (idx % KQ) * 4u);
}
fn fetch_b(idx: u32, n0: u32, k0: u32) -> vec4<f32> {
  if (idx >= BS) { return vec4<f32>(0.0); }
  if (p.trans_b != 0u) { return load_bt4(n0 + idx / KQ, k0 + (idx % KQ) * 4u); }
  return load_b4(k0 + idx / (BN / 4u), n0 + (idx % (BN / 4u)) * 4u);
}

// Stores them k-major, the A tile (and a transposed B tile) transposed: S[k][row].
fn put_a(buf: u32, idx: u32, v: vec4<f32>) {
  if (idx >= AS) { return; }
  let m = idx / KQ;
  let i = buf * AS + (idx % KQ) * 4u * (BM / 4u) + m / 4u;
  As[i][m % 4u] = v.x;
  As[i + BM / 4u][m % 4u] = v.y;
  As[i + 2u * (BM / 4u)][m % 4u] = v.z;
  As[i + 3u * (BM / 4u)][m % 4u] = v.w;
}
fn put_b(buf: u32, idx: u32, v: vec4<f32>) {
  if (idx >= BS) { return; }
  if (p.trans_b == 0u) {
    Bs[buf * BS + idx] = v;
    return;
  }
  let n = idx / KQ;
  let i = buf * BS + (idx % KQ) * 4u * (BN / 4u) + n / 4u;
  Bs[i][n % 4u] = v.x;
  Bs[i + BN / 4u][n % 4u] = v.y;
  Bs[i + 2u * (BN / 4u)][n % 4u] = v.z;
  Bs[i + 3u * (BN / 4u)][n % 4u] = v.w;
}
