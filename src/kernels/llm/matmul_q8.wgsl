// Matrix-matrix with 8-bit activations (prefill, n tokens): y[t, y_off + r] = sum_k W[row0 + r, k]
// x[t, k] (+ bias) (+ y), x quantized per token and block of 32 (q8_act.wgsl), the products as
// integer dot products (dot4I8Packed) summed in int32 per scale group (8 or 4 words) and scaled in
// f32: acc += dx * dw * sum - dx * sum(qx) * min (K-quant mins).
// A workgroup computes BM tokens x BN weight rows; each of its BM * BN / 64 invocations keeps 8
// tokens x 8 rows in registers, as two vec4 halves BM / 2 and BN / 2 apart (the SGEMM's layout,
// matmul/regtile_main.wgsl). Per step, SU units of every row (q8dot/*.wgsl: MQ_UB blocks each) go
// into workgroup memory as signed bytes (Ws[k][n], k = word) with its scales, and the tokens'
// blocks likewise (Xs[k][m]); the next step's global loads are issued before this step's math.
//
// Preceded by a prelude (BM, BN: multiples of 8; SU: units per step, dividing the units of a row;
// MQ_MAGIC, see sum_f4), common.wgsl, a weights/*.wgsl file (bindings 0, 1), q8_act.wgsl (2, 3) and a
// q8dot/*.wgsl file.
@group(0) @binding(4) var<storage, read> bias: array<f32>;
@group(0) @binding(5) var<storage, read_write> y: array<f32>;
struct P {
  n: u32,  // tokens
  rows: u32,
  cols: u32,
  row0: u32,
  y_stride: u32,
  y_off: u32,
  flags: u32,  // 1: add bias, 2: accumulate into y
}
@group(0) @binding(6) var<uniform> p: P;

const NT: u32 = BM * BN / 64u;
const KW: u32 = 8u * MQ_UB * SU;  // words per step (SU units)
const NG: u32 = KW / MQ_SW;       // scale groups per step
const UB: u32 = MQ_UB * SU;       // x blocks per step
const RPT: u32 = (BN + NT - 1u) / NT;  // weight rows each invocation loads (at most)
const XPT: u32 = (BM * 2u * UB + NT - 1u) / NT;  // x vec4s each invocation loads (at most)

var<workgroup> Ws: array<vec4<u32>, KW * BN / 4u>;  // [k][n/4]
var<workgroup> Xs: array<vec4<u32>, KW * BM / 4u>;  // [k][m/4]
var<workgroup> Wsc: array<vec4<f32>, NG * BN / 4u>;  // [g][n/4]: scales
var<workgroup> Wmn: array<vec4<f32>, select(1u, NG * BN / 4u, MQ_MIN)>;  // [g][n/4]: mins
var<workgroup> Xd: array<vec4<f32>, UB * BM / 4u>;  // [block][m/4]: dx
var<workgroup> Xm: array<vec4<f32>, select(1u, UB * BM / 4u, MQ_MIN)>;  // [block][m/4]: dx * sum qx

fn xq(i4: u32) -> vec4<f32> { return vec4<f32>(0.0); }  // unused here (w_chunk needs it)

//!include "llm/batched_store.wgsl"

@compute @workgroup_size(NT)
fn main(@builtin(local_invocation_index) tid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
  let m0 = wid.y * BM;
  let n0 = wid.x * BN;
  let tm = tid / (BN / 8u);
  let tn = tid % (BN / 8u);
  w_setup(p.cols);
  let nb = p.cols / 32u;      // x blocks per token
  let ns = nb / UB;           // steps (the host makes units per row a multiple of SU)
  var acc: array<vec4<f32>, 16>;  // acc[i * 2 + j]: token i of 8, row half j

  // This invocation's loads: units u * SU .. + SU - 1 of rows n0 + tid + i * NT (clamped), and x
  // vec4s tid + i * NT of the step.
  var wu: array<WU, RPT * SU>;
  var xv: array<vec4<u32>, XPT>;
  for (var i = 0u; i < RPT; i++) {
    for (var su = 0u; su < SU; su++) { wu[i * SU + su] = mq_load(p.row0 + min(n0 + tid + i * NT, p.rows - 1u), su); }
  }
  for (var i = 0u; i < XPT; i++) {
    let e = min(tid + i * NT, BM * 2u * UB - 1u);
    let m = m0 + e / (2u * UB);
    xv[i] = select(vec4<u32>(0u), xw[min(m, p.n - 1u) * nb * 2u + e % (2u * UB)], m < p.n);
  }
  for (var u = 0u; u < ns; u++) {
    for (var i = 0u; i < RPT; i++) {
      let n = tid + i * NT;
      if (n >= BN) { break; }
      for (var su = 0u; su < SU; su++) {
        for (var k = 0u; k < KW / SU; k++) {
          Ws[(su * (KW / SU) + k) * (BN / 4u) + n / 4u][n % 4u] = mq_word(wu[i * SU + su], k);
        }
        for (var g = 0u; g < NG / SU; g++) {
          let sc = mq_scale(wu[i * SU + su], g);
          let gi = su * (NG / SU) + g;
          Wsc[gi * (BN / 4u) + n / 4u][n % 4u] = sc.x;
          if (MQ_MIN) { Wmn[gi * (BN / 4u) + n / 4u][n % 4u] = sc.y; }
        }
      }
    }
    for (var i = 0u; i < XPT; i++) {
      let e = tid + i * NT;
      if (e >= BM * 2u * UB) { break; }
      let m = e / (2u * UB);
      let q = (e % (2u * UB)) * 4u;
      for (var j = 0u; j < 4u; j++) { Xs[(q + j) * (BM / 4u) + m / 4u][m % 4u] = xv[i][j]; }
    }
    for (var e = tid; e < BM * UB; e += NT) {
      let m = e / UB;
      let b = e % UB;
      var v = vec2<f32>(0.0);
      if (m0 + m < p.n) { v = q8_block((m0 + m) * nb + u * UB + b); }
      Xd[b * (BM / 4u) + m / 4u][m % 4u] = v.x;
      if (MQ_MIN) { Xm[b * (BM / 4u) + m / 4u][m % 4u] = v.x * v.y; }
    }
    workgroupBarrier();
    if (u + 1u < ns) {
      for (var i = 0u; i < RPT; i++) {
        for (var su = 0u; su < SU; su++) {
          wu[i * SU + su] = mq_load(p.row0 + min(n0 + tid + i * NT, p.rows - 1u), (u + 1u) * SU + su);
        }
      }
      for (var i = 0u; i < XPT; i++) {
        let e = min(tid + i * NT, BM * 2u * UB - 1u);
        let m = m0 + e / (2u * UB);
        let at = min(m, p.n - 1u) * nb * 2u + (u + 1u) * UB * 2u + e % (2u * UB);
        xv[i] = select(vec4<u32>(0u), xw[at], m < p.n);
      }
    }
    for (var g = 0u; g < NG; g++) {
      // The sums start at 1.5 * 2^23 as int bits (MQ_MAGIC), so that bitcast<f32>(s) - 1.5 * 2^23
      // is their value (exact for |sum| < 2^22) without an add per sum; else from zero, through
      // i2f4. Set explicitly: a bare declaration in a loop kept the last iteration's value
      // (SwiftShader).
      var s: array<vec4<i32>, 16>;
      for (var i = 0u; i < 16u; i++) { s[i] = vec4<i32>(select(0, 0x4B400000, MQ_MAGIC)); }
      for (var kk = 0u; kk < MQ_SW; kk++) {
        let k = g * MQ_SW + kk;
        let a0 = Xs[k * (BM / 4u) + tm];
        let a1 = Xs[k * (BM / 4u) + tm + BM / 8u];
        let b0 = Ws[k * (BN / 4u) + tn];
        let b1 = Ws[k * (BN / 4u) + tn + BN / 8u];
        let av = array<u32, 8>(a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w);
        for (var i = 0u; i < 8u; i++) {
          s[i * 2u] += vec4<i32>(dot4I8Packed(av[i], b0.x), dot4I8Packed(av[i], b0.y), dot4I8Packed(av[i], b0.z),
                                 dot4I8Packed(av[i], b0.w));
          s[i * 2u + 1u] += vec4<i32>(dot4I8Packed(av[i], b1.x), dot4I8Packed(av[i], b1.y),
                                      dot4I8Packed(av[i], b1.z), dot4I8Packed(av[i], b1.w));
        }
      }
      let blk = g * MQ_SW / 8u;
      let w0 = Wsc[g * (BN / 4u) + tn];
      let w1 = Wsc[g * (BN / 4u) + tn + BN / 8u];
      let d0 = Xd[blk * (BM / 4u) + tm];
      let d1 = Xd[blk * (BM / 4u) + tm + BM / 8u];
      let dv = array<f32, 8>(d0.x, d0.y, d0.z, d0.w, d1.x, d1.y, d1.z, d1.w);
      for (var i = 0u; i < 8u; i++) {
        acc[i * 2u] = fma(sum_f4(s[i * 2u]), w0 * dv[i], acc[i * 2u]);
        acc[i * 2u + 1u] = fma(sum_f4(s[i * 2u + 1u]), w1 * dv[i], acc[i * 2u + 1u]);
      }
      if (MQ_MIN) {
        let n0v = Wmn[g * (BN / 4u) + tn];
        let n1v = Wmn[g * (BN / 4u) + tn + BN / 8u];
        let e0 = Xm[blk * (BM / 4u) + tm];
        let e1 = Xm[blk * (BM / 4u) + tm + BM / 8u];
        let ev = array<f32, 8>(e0.x, e0.y, e0.z, e0.w, e1.x, e1.y, e1.z, e1.w);
        for (var i = 0u; i < 8u; i++) {
          acc[i * 2u] -= n0v * ev[i];
          acc[i * 2u + 1u] -= n1v * ev[i];
        }
      }
    }
    workgroupBarrier();
  }

//!include "llm/regtile_store.wgsl"
}

// The value of the sums s as floats (see MQ_MAGIC above).
fn sum_f4(s: vec4<i32>) -> vec4<f32> {
  if (MQ_MAGIC) { return bitcast<vec4<f32>>(s) - vec4<f32>(12582912.0); }
  return i2f4(s);
}
