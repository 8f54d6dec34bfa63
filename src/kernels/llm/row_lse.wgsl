// out[r] = log(sum_i exp(x[r][i])) over i < n, one workgroup per row: the max, then the sum of
// exp(x - max), each as strided sums per invocation and a fixed tree over the workgroup.
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
struct P {
  rows: u32,
  n: u32,
}
@group(0) @binding(2) var<uniform> p: P;
override WG: u32 = 256;  // power of two
var<workgroup> red: array<f32, WG>;

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
  let r = wg_linear(wid, nwg);
  if (r >= p.rows) { return; }  // uniform: the whole workgroup
  let b = r * p.n;
  var mx = -3.0e38;
  for (var i = lid; i < p.n; i += WG) { mx = max(mx, x[b + i]); }
  red[lid] = mx;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s /= 2u) {
    if (lid < s) { red[lid] = max(red[lid], red[lid + s]); }
    workgroupBarrier();
  }
  mx = red[0];
  workgroupBarrier();
  var sum = 0.0;
  for (var i = lid; i < p.n; i += WG) { sum += exp(x[b + i] - mx); }
  red[lid] = sum;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s /= 2u) {
    if (lid < s) { red[lid] += red[lid + s]; }
    workgroupBarrier();
  }
  if (lid == 0u) { out[r] = mx + log(red[0]); }
}
