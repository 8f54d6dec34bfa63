// Shared body of the register-tiled SGEMM (included by regtile.wgsl and regtile_vec4.wgsl, which
// provide load_a4 / load_b4 for their storage types).
// A workgroup computes a BM x BN block of C; each of its 256 invocations a TM x TN block held in
// registers. Per BK step the A block is stored transposed (As[k][m]) so that both operands of the
// inner product are read from workgroup memory as vec4s.
struct Params { M: u32, N: u32, K: u32, trans_b: u32 }
@group(0) @binding(3) var<uniform> p: Params;

const BM = 128u;
const BN = 128u;
const BK = 8u;
const TM = 8u;
const TN = 8u;
const THREADS = (BM / TM) * (BN / TN);  // 256

var<workgroup> As: array<vec4<f32>, BK * BM / 4u>;  // [k][m/4]
var<workgroup> Bs: array<vec4<f32>, BK * BN / 4u>;  // [k][n/4]

@compute @workgroup_size(THREADS)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
  let m0 = wid.y * BM;
  let n0 = wid.x * BN;
  // Each thread owns rows {tm*4..+3, tm*4+BM/2..+3} and columns likewise: two vec4s 64 apart,
  // which keeps the workgroup-memory reads of neighbouring threads on different banks.
  let tm = tid / (BN / TN);
  let tn = tid % (BN / TN);
  var acc: array<vec4<f32>, 16>;  // acc[i*2 + j]: row i of 8, column half j

  // Loader roles: 256 threads x one vec4 of A (128 rows x 8 k) and one of B.
  let a_row = tid / 2u;
  let a_k = (tid % 2u) * 4u;
  let b_k = tid / 32u;          // B not transposed: 8 rows (k) x 32 vec4 (n)
  let b_n = (tid % 32u) * 4u;
  let bt_row = tid / 2u;        // B transposed: 128 rows (n) x 2 vec4 (k)
  let bt_k = (tid % 2u) * 4u;

  for (var k0 = 0u; k0 < p.K; k0 += BK) {
    let a = load_a4(m0 + a_row, k0 + a_k);
    As[(a_k + 0u) * (BM / 4u) + a_row / 4u][a_row % 4u] = a.x;
    As[(a_k + 1u) * (BM / 4u) + a_row / 4u][a_row % 4u] = a.y;
    As[(a_k + 2u) * (BM / 4u) + a_row / 4u][a_row % 4u] = a.z;
    As[(a_k + 3u) * (BM / 4u) + a_row / 4u][a_row % 4u] = a.w;
    if (p.trans_b != 0u) {
      let b = load_bt4(n0 + bt_row, k0 + bt_k);
      Bs[(bt_k + 0u) * (BN / 4u) + bt_row / 4u][bt_row % 4u] = b.x;
      Bs[(bt_k + 1u) * (BN / 4u) + bt_row / 4u][bt_row % 4u] = b.y;
      Bs[(bt_k + 2u) * (BN / 4u) + bt_row / 4u][bt_row % 4u] = b.z;
      Bs[(bt_k + 3u) * (BN / 4u) + bt_row / 4u][bt_row % 4u] = b.w;
    } else {
      Bs[b_k * (BN / 4u) + b_n / 4u] = load_b4(k0 + b_k, n0 + b_n);
    }
    workgroupBarrier();
    for (var k = 0u; k < BK; k++) {
      let a0 = As[k * (BM / 4u) + tm];
      let a1 = As[k * (BM / 4u) + tm + BM / 8u];
      let b0 = Bs[k * (BN / 4u) + tn];
      let b1 = Bs[k * (BN / 4u) + tn + BN / 8u];
      let av = array<f32, 8>(a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w);
      for (var i = 0u; i < 8u; i++) {
        acc[i * 2u] = fma(vec4<f32>(av[i]), b0, acc[i * 2u]);
        acc[i * 2u + 1u] = fma(vec4<f32>(av[i]), b1, acc[i * 2u + 1u]);
      }
    }
    workgroupBarrier();
  }

  for (var i = 0u; i < 8u; i++) {
    let m = m0 + select(tm * 4u + i, BM / 2u + tm * 4u + (i - 4u), i >= 4u);
    if (m >= p.M) { continue; }
    for (var j = 0u; j < 2u; j++) {
      let n = n0 + j * (BN / 2u) + tn * 4u;
      store4(m, n, acc[i * 2u + j]);
    }
  }
}
