// Register-tiled SGEMM with vec4 loads (K % 4 == 0, and N % 4 == 0 unless B is transposed),
// BK = 16, the next tile's global loads issued before the current tile's math (register
// prefetch), and workgroups walked in groups of GROUP_M block-rows so that the workgroups running
// at once share B panels in L2. Measured on the H200 (docs/benchmarks.md) it was slower than
// regtile_vec4.wgsl (11.9 vs 34.4 TFLOP/s at 4096^3), so Auto does not pick it; kept as the rung
// to tune next (BK 16 doubles the workgroup memory and the prefetch registers cut occupancy).
@group(0) @binding(0) var<storage, read> A: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> B: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> C: array<f32>;
struct Params { M: u32, N: u32, K: u32, trans_b: u32 }
@group(0) @binding(3) var<uniform> p: Params;

const BM = 128u;
const BN = 128u;
const BK = 16u;
const THREADS = 256u;  // each computes 8 x 8 outputs
const GROUP_M = 8u;

var<workgroup> As: array<vec4<f32>, BK * BM / 4u>;  // [k][m/4], A stored transposed
var<workgroup> Bs: array<vec4<f32>, BK * BN / 4u>;  // [k][n/4]

//!include "matmul/vec4_loads.wgsl"
//!include "matmul/grouped_order.wgsl"

@compute @workgroup_size(THREADS)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) tid: u32) {
  let blk = grouped_block(wid, nwg, GROUP_M);
  let m0 = blk.x * BM;
  let n0 = blk.y * BN;

  let tm = tid / 16u;  // rows tm*4..+3 and 64+tm*4..+3
  let tn = tid % 16u;  // columns likewise
  var acc: array<vec4<f32>, 16>;

  // Loader roles: two vec4 of A (rows r and r+64) and two of B per thread per tile.
  let r = tid / 4u;
  let rk = (tid % 4u) * 4u;
  let bk = tid / 32u;
  let bn = (tid % 32u) * 4u;
  let tb = p.trans_b != 0u;
  var ra0 = load_a4(m0 + r, rk);
  var ra1 = load_a4(m0 + r + 64u, rk);
  var rb0: vec4<f32>;
  var rb1: vec4<f32>;
  if (tb) {
    rb0 = load_bt4(n0 + r, rk);
    rb1 = load_bt4(n0 + r + 64u, rk);
  } else {
    rb0 = load_b4(bk, n0 + bn);
    rb1 = load_b4(bk + 8u, n0 + bn);
  }

  for (var k0 = 0u; k0 < p.K; k0 += BK) {
    As[(rk + 0u) * (BM / 4u) + (r) / 4u][(r) % 4u] = ra0.x;
    As[(rk + 1u) * (BM / 4u) + (r) / 4u][(r) % 4u] = ra0.y;
    As[(rk + 2u) * (BM / 4u) + (r) / 4u][(r) % 4u] = ra0.z;
    As[(rk + 3u) * (BM / 4u) + (r) / 4u][(r) % 4u] = ra0.w;
    As[(rk + 0u) * (BM / 4u) + (r + 64u) / 4u][(r + 64u) % 4u] = ra1.x;
    As[(rk + 1u) * (BM / 4u) + (r + 64u) / 4u][(r + 64u) % 4u] = ra1.y;
    As[(rk + 2u) * (BM / 4u) + (r + 64u) / 4u][(r + 64u) % 4u] = ra1.z;
    As[(rk + 3u) * (BM / 4u) + (r + 64u) / 4u][(r + 64u) % 4u] = ra1.w;
    if (tb) {
    Bs[(rk + 0u) * (BN / 4u) + (r) / 4u][(r) % 4u] = rb0.x;
    Bs[(rk + 1u) * (BN / 4u) + (r) / 4u][(r) % 4u] = rb0.y;
    Bs[(rk + 2u) * (BN / 4u) + (r) / 4u][(r) % 4u] = rb0.z;
    Bs[(rk + 3u) * (BN / 4u) + (r) / 4u][(r) % 4u] = rb0.w;
    Bs[(rk + 0u) * (BN / 4u) + (r + 64u) / 4u][(r + 64u) % 4u] = rb1.x;
    Bs[(rk + 1u) * (BN / 4u) + (r + 64u) / 4u][(r + 64u) % 4u] = rb1.y;
    Bs[(rk + 2u) * (BN / 4u) + (r + 64u) / 4u][(r + 64u) % 4u] = rb1.z;
    Bs[(rk + 3u) * (BN / 4u) + (r + 64u) / 4u][(r + 64u) % 4u] = rb1.w;
    } else {
      Bs[bk * (BN / 4u) + bn / 4u] = rb0;
      Bs[(bk + 8u) * (BN / 4u) + bn / 4u] = rb1;
    }
    workgroupBarrier();
    let kn = k0 + BK;
    if (kn < p.K) {
      ra0 = load_a4(m0 + r, kn + rk);
      ra1 = load_a4(m0 + r + 64u, kn + rk);
      if (tb) {
        rb0 = load_bt4(n0 + r, kn + rk);
        rb1 = load_bt4(n0 + r + 64u, kn + rk);
      } else {
        rb0 = load_b4(kn + bk, n0 + bn);
        rb1 = load_b4(kn + bk + 8u, n0 + bn);
      }
    }
    for (var k = 0u; k < BK; k++) {
      let a0 = As[k * (BM / 4u) + tm];
      let a1 = As[k * (BM / 4u) + tm + 16u];
      let b0 = Bs[k * (BN / 4u) + tn];
      let b1 = Bs[k * (BN / 4u) + tn + 16u];
      acc[0u] = fma(vec4<f32>(a0.x), b0, acc[0u]);
      acc[1u] = fma(vec4<f32>(a0.x), b1, acc[1u]);
      acc[2u] = fma(vec4<f32>(a0.y), b0, acc[2u]);
      acc[3u] = fma(vec4<f32>(a0.y), b1, acc[3u]);
      acc[4u] = fma(vec4<f32>(a0.z), b0, acc[4u]);
      acc[5u] = fma(vec4<f32>(a0.z), b1, acc[5u]);
      acc[6u] = fma(vec4<f32>(a0.w), b0, acc[6u]);
      acc[7u] = fma(vec4<f32>(a0.w), b1, acc[7u]);
      acc[8u] = fma(vec4<f32>(a1.x), b0, acc[8u]);
      acc[9u] = fma(vec4<f32>(a1.x), b1, acc[9u]);
      acc[10u] = fma(vec4<f32>(a1.y), b0, acc[10u]);
      acc[11u] = fma(vec4<f32>(a1.y), b1, acc[11u]);
      acc[12u] = fma(vec4<f32>(a1.z), b0, acc[12u]);
      acc[13u] = fma(vec4<f32>(a1.z), b1, acc[13u]);
      acc[14u] = fma(vec4<f32>(a1.w), b0, acc[14u]);
      acc[15u] = fma(vec4<f32>(a1.w), b1, acc[15u]);
    }
    workgroupBarrier();
  }

  for (var i = 0u; i < 8u; i++) {
    let m = m0 + select(tm * 4u + i, 64u + tm * 4u + (i - 4u), i >= 4u);
    if (m >= p.M) { continue; }
    for (var j = 0u; j < 2u; j++) {
      let n = n0 + j * 64u + tn * 4u;
      let v = acc[i * 2u + j];
      let c = m * p.N + n;
      if (n + 3u < p.N) {
        C[c] = v.x;
        C[c + 1u] = v.y;
        C[c + 2u] = v.z;
        C[c + 3u] = v.w;
      } else {
        for (var q = 0u; q < 4u; q++) {
          if (n + q < p.N) { C[c + q] = v[q]; }
        }
      }
    }
  }
}
