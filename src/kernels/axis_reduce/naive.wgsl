// y[o][i] = op over l of x[o][l][i] (x seen as [outer][len][inner]): one invocation per output.
// OP: 0 sum, 1 mean, 2 max, 3 min (AxisReduceOp order).
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
struct Params { outer: u32, len: u32, inner: u32, pad: u32 }
@group(0) @binding(2) var<uniform> p: Params;

override WG: u32 = 256u;
override OP: u32 = 0u;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let r = (wid.x + wid.y * nwg.x) * WG + lid;
  if (r >= p.outer * p.inner) { return; }
  let base = (r / p.inner) * p.len * p.inner + r % p.inner;
  var acc = x[base];
  for (var l = 1u; l < p.len; l++) {
    let v = x[base + l * p.inner];
    switch (OP) {
      case 2u: { acc = max(acc, v); }
      case 3u: { acc = min(acc, v); }
      default: { acc += v; }
    }
  }
  if (OP == 1u) { acc = acc / f32(p.len); }
  y[r] = acc;
}
