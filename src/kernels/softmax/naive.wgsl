// Softmax (or log-softmax) along the middle axis of x seen as [outer][len][inner]: one invocation
// per (outer, inner) row, three passes over its len values (max, sum of exp, write).
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
struct Params { outer: u32, len: u32, inner: u32, log: u32 }
@group(0) @binding(2) var<uniform> p: Params;

override WG: u32 = 256u;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let r = (wid.x + wid.y * nwg.x) * WG + lid;
  if (r >= p.outer * p.inner) { return; }
  let base = (r / p.inner) * p.len * p.inner + r % p.inner;
  var mx = x[base];
  for (var l = 1u; l < p.len; l++) { mx = max(mx, x[base + l * p.inner]); }
  var sum = 0.0;
  for (var l = 0u; l < p.len; l++) { sum += exp(x[base + l * p.inner] - mx); }
  let ls = log(sum);
  for (var l = 0u; l < p.len; l++) {
    let v = x[base + l * p.inner] - mx;
    y[base + l * p.inner] = select(exp(v) / sum, v - ls, p.log != 0u);
  }
}
