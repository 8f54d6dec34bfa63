// Normalisation of rows (cpu/norm.h): one workgroup per row of x [rows][len] computes the row's
// mean, then its variance about the mean (two passes over the row, tree reductions in workgroup
// memory), then writes y = (x - mean) / sqrt(var + eps) * scale[k] + bias[k] with
// k = (r % period) * row_stride + l / div; STATS = 1 writes mean and 1 / sqrt(var + eps) to
// y[2 r], y[2 r + 1] instead.
struct Params {
  rows: u32,
  len: u32,
  period: u32,
  row_stride: u32,
  div: u32,
  eps: f32,
  pad0: u32,
  pad1: u32,
}
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> scale: array<f32>;
@group(0) @binding(2) var<storage, read> bias: array<f32>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;
@group(0) @binding(4) var<uniform> p: Params;

override STATS: u32 = 0u;
const WG: u32 = 256u;
var<workgroup> red: array<f32, WG>;

fn workgroup_sum(v: f32, lid: u32) -> f32 {
  red[lid] = v;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s = s / 2u) {
    if (lid < s) { red[lid] += red[lid + s]; }
    workgroupBarrier();
  }
  let total = red[0];
  workgroupBarrier();
  return total;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let r = wid.x + wid.y * nwg.x;
  if (r >= p.rows) { return; }
  let base = r * p.len;
  var s = 0.0;
  for (var l = lid; l < p.len; l += WG) { s += x[base + l]; }
  let mean = workgroup_sum(s, lid) / f32(p.len);
  var v = 0.0;
  for (var l = lid; l < p.len; l += WG) {
    let d = x[base + l] - mean;
    v += d * d;
  }
  let inv = inverseSqrt(workgroup_sum(v, lid) / f32(p.len) + p.eps);
  if (STATS != 0u) {
    if (lid == 0u) {
      y[2u * r] = mean;
      y[2u * r + 1u] = inv;
    }
    return;
  }
  let k0 = (r % p.period) * p.row_stride;
  for (var l = lid; l < p.len; l += WG) {
    let k = k0 + l / p.div;
    y[base + l] = (x[base + l] - mean) * inv * scale[k] + bias[k];
  }
}
