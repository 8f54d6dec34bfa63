// Activations to 8 bits per block of 32 elements, per token (llama.cpp's q8_1): the input of the
// integer-dot-product kernels (matvec_q8.wgsl, matmul_q8.wgsl). Block b of token t:
//   d = max|v| / 127, q_i = round(v_i * (1 / d)) (0 for an all-zero block),
//   qs[(t * nb + b) * 8 + w] = q_4w .. q_4w+3 as bytes (the first in the lowest),
//   ds[t * nb + b] = (bitcast d, sum of q_0..15 in the low 16 bits | sum of q_16..31 in the high
//   16, each an i16), nb = cols / 32.
// v by p.mode: 0: x[t * x_stride + x_off + i]; 1 (RMSNorm): that / sqrt(mean(x^2) + eps) * w[i]
// (as rms_norm.wgsl); 2 (SwiGLU): silu(g) * u with g = x[t * x_stride + x_off + i] and u the
// element up_off after it (as swiglu.wgsl). One workgroup per token, or num_workgroups.z of them
// (a row's passes split between them, each redoing RMSNorm's sum of squares in the same order:
// the same bits, more workgroups for steps of few tokens); each invocation quantizes one word (4
// elements) per pass. Preceded by common.wgsl.
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> w: array<f32>;
@group(0) @binding(2) var<storage, read_write> qs: array<u32>;
@group(0) @binding(3) var<storage, read_write> ds: array<vec2<u32>>;
struct P {
  n: u32,
  cols: u32,  // a multiple of 32
  x_stride: u32,
  x_off: u32,
  mode: u32,
  up_off: u32,
  eps: f32,
}
@group(0) @binding(4) var<uniform> p: P;
override WG: u32 = 256;  // a power of two, at least 8
var<workgroup> red: array<f32, WG>;
var<workgroup> sums: array<i32, WG>;

fn value(xb: u32, i: u32, inv: f32) -> f32 {
  let v = x[xb + i];
  if (p.mode == 1u) { return v * inv * w[i]; }
  if (p.mode == 2u) { return v / (1.0 + exp(-v)) * x[xb + p.up_off + i]; }
  return v;
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
  let t = wg_linear(wid, nwg);
  let xb = min(t, p.n - 1u) * p.x_stride + p.x_off;
  var inv = 1.0;
  if (p.mode == 1u) {
    var ss = 0.0;
    for (var i = lid; i < p.cols; i += WG) {
      let v = x[xb + i];
      ss += v * v;
    }
    red[lid] = ss;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s /= 2u) {
      if (lid < s) { red[lid] += red[lid + s]; }
      workgroupBarrier();
    }
    inv = inverseSqrt(red[0] / f32(p.cols) + p.eps);
  }
  let nw = p.cols / 4u;
  for (var w0 = wid.z * WG; w0 < nw; w0 += WG * nwg.z) {
    let wi = w0 + lid;
    var v = vec4<f32>(0.0);
    if (wi < nw) {
      for (var j = 0u; j < 4u; j++) { v[j] = value(xb, 4u * wi + j, inv); }
    }
    workgroupBarrier();
    let a = abs(v);
    red[lid] = max(max(a.x, a.y), max(a.z, a.w));
    workgroupBarrier();
    let g0 = lid & ~7u;  // the block's first word (blocks never straddle a pass: WG % 8 == 0)
    var amax = 0.0;
    for (var k = 0u; k < 8u; k++) { amax = max(amax, red[g0 + k]); }
    let d = amax / 127.0;
    let id = select(0.0, 1.0 / d, d > 0.0);
    let q = vec4<i32>(clamp(round(v * id), vec4<f32>(-127.0), vec4<f32>(127.0)));
    sums[lid] = q.x + q.y + q.z + q.w;
    workgroupBarrier();
    if (t < p.n && wi < nw) {
      let b = bitcast<vec4<u32>>(q) & vec4<u32>(0xffu);
      qs[t * nw + wi] = b.x | (b.y << 8u) | (b.z << 16u) | (b.w << 24u);
      if ((lid & 7u) == 0u) {
        let lo = sums[lid] + sums[lid + 1u] + sums[lid + 2u] + sums[lid + 3u];
        let hi = sums[lid + 4u] + sums[lid + 5u] + sums[lid + 6u] + sums[lid + 7u];
        ds[t * (nw / 8u) + wi / 8u] = vec2<u32>(bitcast<u32>(d), (bitcast<u32>(lo) & 0xffffu) | (bitcast<u32>(hi) << 16u));
      }
    }
  }
}
