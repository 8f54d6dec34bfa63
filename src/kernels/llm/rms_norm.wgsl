// y[r, i] = x[r, i] / sqrt(mean_i(x[r, i]^2) + eps) * w[i] (acc 1: y[r, i] += that, Gemma's norms of
// the attention and MLP outputs): one workgroup per row. Preceded by common.wgsl and a reduce file
// (group_sum over the whole workgroup).
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> w: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
struct P {
  rows: u32,
  n: u32,
  x_stride: u32,
  y_stride: u32,
  eps: f32,
  acc: u32,
}
@group(0) @binding(3) var<uniform> p: P;
override WG: u32 = 256;  // power of two
var<workgroup> red: array<f32, WG>;

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
  let r = wg_linear(wid, nwg);
  let rr = min(r, p.rows - 1u);
  let xb = rr * p.x_stride;
  var ss = 0.0;
  for (var i = lid; i < p.n; i += WG) {
    let v = x[xb + i];
    ss += v * v;
  }
  let tot = group_sum(ss, lid, WG);
  let inv = inverseSqrt(tot / f32(p.n) + p.eps);
  if (r >= p.rows) { return; }
  let yb = r * p.y_stride;
  if (p.acc != 0u) {
    for (var i = lid; i < p.n; i += WG) { y[yb + i] += x[xb + i] * inv * w[i]; }
  } else {
    for (var i = lid; i < p.n; i += WG) { y[yb + i] = x[xb + i] * inv * w[i]; }
  }
}
