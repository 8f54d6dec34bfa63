// vec4-db2's tile machinery, shared by matmul/regtile_db.wgsl (a workgroup per block of C) and
// matmul/regtile_db_sk.wgsl (the same with the last wave's blocks split along k): the knobs as
// override constants, the two workgroup-memory buffers, the next tile's loads and stores, one k
// step's operands. The includer declares A, B, p (M, N, K, trans_b) and includes
// matmul/vec4_loads.wgsl first.
override BM: u32 = 128u;
override BN: u32 = 128u;
override BK: u32 = 8u;                    // k per tile: 8 or 16 (BM, BN >= 8 * BK)
override KQ: u32 = BK / 4u;               // vec4s along k per row of an A (or transposed B) tile
override GROUP_M: u32 = 1u;               // block-rows walked together (1: row-major)
override NTN: u32 = BN / 8u;              // invocations along n
override THREADS: u32 = (BM / 8u) * NTN;  // along m: BM / 8
override WN: u32 = NTN;                   // a divisor of NTN and of 32, with BM * WN % 256 == 0
// vec4s added to As after each 4 rows of k (0, or 8 / KQ): put_a's scalar stores of one warp
// then fall in 32 distinct banks (without it the KQ k-quads of a row share a bank).
override A_SKEW: u32 = 0u;
// The next tile's global loads issued before the barrier that ends this tile (their registers
// are free once this tile's stores are issued) rather than after it.
override FETCH_PRE: bool = false;
// B's layout fixed when the pipeline is made (0: [K, N], 1: transposed) rather than read from
// p.trans_b (2) at each tile.
override TRANS_B: u32 = 2u;
override AN: u32 = BK * BM / 4u;          // vec4s of an A tile: [k][m / 4]
override AS: u32 = AN + KQ * A_SKEW;      // vec4s per A buffer
override BS: u32 = BK * BN / 4u;          // vec4s per B buffer: [k][n / 4]
// A tile holds BK * 16 / BN (B: BK * 16 / BM) vec4s per invocation: a second load where that is 2.
override A2: bool = AN > THREADS;
override B2: bool = BS > THREADS;
var<workgroup> As: array<vec4<f32>, 2u * AS>;
var<workgroup> Bs: array<vec4<f32>, 2u * BS>;

// The vec4 of As (in a buffer) that starts row k: k * BM / 4, skewed per k-quad.
fn a_row(k: u32) -> u32 { return k * (BM / 4u) + (k / 4u) * A_SKEW; }

fn b_trans() -> bool { return select(TRANS_B == 1u, p.trans_b != 0u, TRANS_B == 2u); }

// vec4 number idx of the tile at k0 (zeros past the matrices, and past the tile where a tile has
// fewer vec4s than invocations): A row idx / KQ, k's (idx % KQ) * 4 ..; B row k = idx / (BN / 4),
// columns (idx % (BN / 4)) * 4 .., or transposed: row n = idx / KQ, k's (idx % KQ) * 4 ...
fn fetch_a(idx: u32, m0: u32, k0: u32) -> vec4<f32> {
  if (idx >= AN) { return vec4<f32>(0.0); }
  return load_a4(m0 + idx / KQ, k0 + (idx % KQ) * 4u);
}
fn fetch_b(idx: u32, n0: u32, k0: u32) -> vec4<f32> {
  if (idx >= BS) { return vec4<f32>(0.0); }
  if (b_trans()) { return load_bt4(n0 + idx / KQ, k0 + (idx % KQ) * 4u); }
  return load_b4(k0 + idx / (BN / 4u), n0 + (idx % (BN / 4u)) * 4u);
}

// Stores them k-major, the A tile (and a transposed B tile) transposed: S[k][row].
fn put_a(buf: u32, idx: u32, v: vec4<f32>) {
  if (idx >= AN) { return; }
  let m = idx / KQ;
  let i = buf * AS + a_row((idx % KQ) * 4u) + m / 4u;
  As[i][m % 4u] = v.x;
  As[i + BM / 4u][m % 4u] = v.y;
  As[i + 2u * (BM / 4u)][m % 4u] = v.z;
  As[i + 3u * (BM / 4u)][m % 4u] = v.w;
}
fn put_b(buf: u32, idx: u32, v: vec4<f32>) {
  if (idx >= BS) { return; }
  if (!b_trans()) {
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

// The next tile's vec4s of one invocation, held in registers during this tile's math.
struct Next {
  a0: vec4<f32>,
  a1: vec4<f32>,
  b0: vec4<f32>,
  b1: vec4<f32>,
}
fn fetch_next(tid: u32, m0: u32, n0: u32, k0: u32) -> Next {
  var t = Next(fetch_a(tid, m0, k0), vec4<f32>(0.0), fetch_b(tid, n0, k0), vec4<f32>(0.0));
  if (A2) { t.a1 = fetch_a(tid + THREADS, m0, k0); }
  if (B2) { t.b1 = fetch_b(tid + THREADS, n0, k0); }
  return t;
}
fn put_next(buf: u32, tid: u32, t: Next) {
  put_a(buf, tid, t.a0);
  put_b(buf, tid, t.b0);
  if (A2) { put_a(buf, tid + THREADS, t.a1); }
  if (B2) { put_b(buf, tid + THREADS, t.b1); }
}

// One k step's operands: rows tm * 4 .. + 3 and BM / 2 + tm * 4 .. + 3 of A, columns tn * 4 ..
// + 3 and BN / 2 + tn * 4 .. + 3 of B, from buffer buf.
struct Frag {
  a0: vec4<f32>,
  a1: vec4<f32>,
  b0: vec4<f32>,
  b1: vec4<f32>,
}
fn frag(buf: u32, k: u32, tm: u32, tn: u32) -> Frag {
  let a = buf * AS + a_row(k) + tm;
  let b = buf * BS + k * (BN / 4u) + tn;
  return Frag(As[a], As[a + BM / 8u], Bs[b], Bs[b + BN / 8u]);
}
