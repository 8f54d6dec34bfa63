// Matrix-matrix (prefill, n tokens): y[t, y_off + r] = sum_k W[row0 + r, k] x[t, k] (+ bias)
// (+ y). Workgroup tile: BM = TY*4 tokens x BN = TX*4 weight rows; k in steps of BK; W
// dequantized into shared memory tile by tile; each invocation keeps a 4x4 register tile.
// Preceded by common.wgsl and a weights/*.wgsl file (bindings 0, 1).
@group(0) @binding(2) var<storage, read> x: array<f32>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;
//!include "llm/linear_params.wgsl"
override TX: u32 = 16;
override TY: u32 = 16;
override BK: u32 = 32;  // multiple of 4
const TM: u32 = 4u;
const TN: u32 = 4u;

var<workgroup> xs: array<f32, BK * TY * TM>;  // [k][m]
var<workgroup> wsh: array<f32, BK * TX * TN>;  // [k][n]

fn xq(i4: u32) -> vec4<f32> { return vec4<f32>(0.0); }  // unused here (w_chunk needs it)

@compute @workgroup_size(TX * TY)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
  let BM = TY * TM;
  let BN = TX * TN;
  let NT = TX * TY;
  let m0 = wid.y * BM;
  let n0 = wid.x * BN;
  let tx = lid % TX;
  let ty = lid / TX;
  w_setup(p.cols);
  var acc: array<vec4<f32>, 4>;
  let kq = BK / 4u;
  for (var k0 = 0u; k0 < p.cols; k0 += BK) {
    // W tile: BN rows x BK columns, as quads
    for (var i = lid; i < BN * kq; i += NT) {
      let r = i / kq;
      let q = i % kq;
      let rr = n0 + r;
      let kk = k0 + 4u * q;
      var v = vec4<f32>(0.0);
      if (rr < p.rows && kk < p.cols) { v = w_quad(p.row0 + rr, kk / 4u); }
      for (var j = 0u; j < 4u; j++) { wsh[(4u * q + j) * BN + r] = v[j]; }
    }
    // X tile: BM tokens x BK columns
    for (var i = lid; i < BM * BK; i += NT) {
      let m = i / BK;
      let k = i % BK;
      let t = m0 + m;
      let kk = k0 + k;
      var v = 0.0;
      if (t < p.n && kk < p.cols) { v = x[t * p.x_stride + kk]; }
      xs[k * BM + m] = v;
    }
    workgroupBarrier();
    for (var k = 0u; k < BK; k++) {
      let ka = k * BM + ty * TM;
      let kb = k * BN + tx * TN;
      let a = vec4<f32>(xs[ka], xs[ka + 1u], xs[ka + 2u], xs[ka + 3u]);
      let b = vec4<f32>(wsh[kb], wsh[kb + 1u], wsh[kb + 2u], wsh[kb + 3u]);
      acc[0] += a.x * b;
      acc[1] += a.y * b;
      acc[2] += a.z * b;
      acc[3] += a.w * b;
    }
    workgroupBarrier();
  }
  for (var i = 0u; i < TM; i++) {
    let t = m0 + ty * TM + i;
    if (t >= p.n) { break; }
    for (var j = 0u; j < TN; j++) {
      let r = n0 + tx * TN + j;
      if (r >= p.rows) { break; }
      var o = acc[i][j];
      if ((p.flags & 1u) != 0u) { o += bias[p.row0 + r]; }
      let yi = t * p.y_stride + p.y_off + r;
      if ((p.flags & 2u) != 0u) { o += y[yi]; }
      y[yi] = o;
    }
  }
}
