// Softmax (or log-softmax) along the middle axis of x seen as [outer][len][inner]: one workgroup
// per (outer, inner) row, its invocations striding over len; the max and the sum are reduced as
// trees in workgroup memory. For long rows (a classifier's 1000 logits) where the naive version
// leaves one invocation to walk the whole row.
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
struct Params { outer: u32, len: u32, inner: u32, log: u32 }
@group(0) @binding(2) var<uniform> p: Params;

const WG = 128u;
var<workgroup> part: array<f32, WG>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let r = wid.x + wid.y * nwg.x;
  // Uniform control flow: every invocation of a workgroup has the same r.
  if (r >= p.outer * p.inner) { return; }
  let base = (r / p.inner) * p.len * p.inner + r % p.inner;
  var mx = x[base + min(lid, p.len - 1u) * p.inner];
  for (var l = lid + WG; l < p.len; l += WG) { mx = max(mx, x[base + l * p.inner]); }
  part[lid] = mx;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s = s / 2u) {
    if (lid < s) { part[lid] = max(part[lid], part[lid + s]); }
    workgroupBarrier();
  }
  mx = part[0];
  workgroupBarrier();
  var sum = 0.0;
  for (var l = lid; l < p.len; l += WG) { sum += exp(x[base + l * p.inner] - mx); }
  part[lid] = sum;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s = s / 2u) {
    if (lid < s) { part[lid] = part[lid] + part[lid + s]; }
    workgroupBarrier();
  }
  sum = part[0];
  let ls = log(sum);
  for (var l = lid; l < p.len; l += WG) {
    let v = x[base + l * p.inner] - mx;
    y[base + l * p.inner] = select(exp(v) / sum, v - ls, p.log != 0u);
  }
}
