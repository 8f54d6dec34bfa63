// Matrix-matrix (prefill, n tokens), register-tiled: y[t, y_off + r] = sum_k W[row0 + r, k] x[t, k]
// (+ bias) (+ y), the same op as matmul_tiled.wgsl. A workgroup computes BM tokens x BN weight
// rows; each of its (BM / 8) * (BN / 8) invocations keeps 8 tokens x 8 rows in registers, as two
// vec4 halves BM / 2 and BN / 2 apart (the layout of matmul/regtile_main.wgsl, which keeps the
// workgroup-memory reads of neighbouring invocations on different banks). Per BK step the x tile
// and the W tile (dequantized once per tile, a quad at a time with w_quad) are stored k-major,
// As[k][m/4] and Bs[k][n/4], so that the inner product (matmul/regtile_step.wgsl, shared with the
// SGEMM) reads both operands as vec4s.
// x is read as vec4s where x_stride % 4 == 0 (else, and at the end of a row, element by element).
// Preceded by common.wgsl and a weights/*.wgsl file (bindings 0, 1).
@group(0) @binding(2) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;
//!include "llm/linear_params.wgsl"
override BM: u32 = 64u;  // tokens per workgroup: a multiple of 8
override BN: u32 = 128u;  // weight rows per workgroup: a multiple of 8
override BK: u32 = 16u;  // k per workgroup-memory tile: a multiple of 4
// (BM / 8) * (BN / 8) invocations per workgroup (ops/llm/llm_ops.cpp checks the limits).

var<workgroup> As: array<vec4<f32>, BK * BM / 4u>;  // x tile, [k][m/4]
var<workgroup> Bs: array<vec4<f32>, BK * BN / 4u>;  // W tile, [k][n/4]

fn xq(i4: u32) -> vec4<f32> { return vec4<f32>(0.0); }  // unused here (w_chunk needs it)

// x[t, k .. k + 3] (k % 4 == 0), zero past the tokens and the row.
fn load_x4(t: u32, k: u32) -> vec4<f32> {
  if (t >= p.n || k >= p.cols) { return vec4<f32>(0.0); }
  let i = t * p.x_stride + k;
  if ((p.x_stride & 3u) == 0u && k + 3u < p.cols) { return x[i / 4u]; }
  var v = vec4<f32>(0.0);
  for (var j = 0u; j < 4u; j++) {
    if (k + j < p.cols) { v[j] = x[(i + j) / 4u][(i + j) & 3u]; }
  }
  return v;
}
// W[row0 + r, k .. k + 3] (k % 4 == 0), zero past the rows and the row (rows are zero padded to
// a whole quad where cols % 4 != 0, and there x is zero).
fn load_w4(r: u32, k: u32) -> vec4<f32> {
  if (r >= p.rows || k >= p.cols) { return vec4<f32>(0.0); }
  return w_quad(p.row0 + r, k / 4u);
}

// The output, y[t, r0 .. r0 + 3] = v (+ bias) (+ y): store_rows, a function of a vec4 value, so
// that the accumulators are only indexed by constants once the loops are unrolled (a dynamic
// component index into them would move them out of registers).
//!include "llm/batched_store.wgsl"

// The body, for both entry points: `main` takes its workgroup size from the tile overrides;
// `main_fixed` states 128 invocations as a constant (the default 64 x 128 tile, which the host
// picks it for). Why: this kernel measured 2.1 TFLOP/s on the H200 against the SGEMM's 38.5 with
// the same register tile, and a workgroup size the compiler cannot see may make it budget
// registers for 1024 invocations. Not yet measured (docs/benchmarks.md).
fn body(tid: u32, wid: vec3<u32>) {
  let nt = BM * BN / 64u;
  let kq = BK / 4u;
  let m0 = wid.y * BM;
  let n0 = wid.x * BN;
  let tm = tid / (BN / 8u);
  let tn = tid % (BN / 8u);
  w_setup(p.cols);
  var acc: array<vec4<f32>, 16>;  // acc[i * 2 + j]: token i of 8, row half j

  for (var k0 = 0u; k0 < p.cols; k0 += BK) {
    // W tile: BN rows x BK columns, quad by quad, transposed into Bs[k][n].
    for (var i = tid; i < BN * kq; i += nt) {
      let r = i / kq;
      let q = (i % kq) * 4u;
      let v = load_w4(n0 + r, k0 + q);
      for (var j = 0u; j < 4u; j++) { Bs[(q + j) * (BN / 4u) + r / 4u][r % 4u] = v[j]; }
    }
    // x tile: BM tokens x BK columns, transposed into As[k][m].
    for (var i = tid; i < BM * kq; i += nt) {
      let m = i / kq;
      let q = (i % kq) * 4u;
      let v = load_x4(m0 + m, k0 + q);
      for (var j = 0u; j < 4u; j++) { As[(q + j) * (BM / 4u) + m / 4u][m % 4u] = v[j]; }
    }
    workgroupBarrier();
//!include "matmul/regtile_step.wgsl"
    workgroupBarrier();
  }

//!include "llm/regtile_store.wgsl"
}

@compute @workgroup_size(BM * BN / 64u)
fn main(@builtin(local_invocation_index) tid: u32, @builtin(workgroup_id) wid: vec3<u32>) { body(tid, wid); }

@compute @workgroup_size(128)
fn main_fixed(@builtin(local_invocation_index) tid: u32, @builtin(workgroup_id) wid: vec3<u32>) { body(tid, wid); }
