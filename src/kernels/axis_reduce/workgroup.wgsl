// y[o][i] = op over l of x[o][l][i]: one workgroup per output, its invocations striding over len
// and reducing as a tree in workgroup memory (long reductions: a global average over 56x56).
// OP: 0 sum, 1 mean, 2 max, 3 min, 4 prod (AxisReduceOp order).
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
struct Params { outer: u32, len: u32, inner: u32, pad: u32 }
@group(0) @binding(2) var<uniform> p: Params;

override OP: u32 = 0u;
const WG = 128u;
var<workgroup> part: array<f32, WG>;

fn combine(a: f32, b: f32) -> f32 {
  switch (OP) {
    case 2u: { return max(a, b); }
    case 3u: { return min(a, b); }
    case 4u: { return a * b; }
    default: { return a + b; }
  }
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let r = wid.x + wid.y * nwg.x;
  if (r >= p.outer * p.inner) { return; }
  let base = (r / p.inner) * p.len * p.inner + r % p.inner;
  // Every invocation starts from a real element (len >= 1), so max/min need no identity value.
  var acc = x[base + min(lid, p.len - 1u) * p.inner];
  if (OP < 2u && lid >= p.len) { acc = 0.0; }
  if (OP == 4u && lid >= p.len) { acc = 1.0; }
  for (var l = lid + WG; l < p.len; l += WG) { acc = combine(acc, x[base + l * p.inner]); }
  part[lid] = acc;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s = s / 2u) {
    if (lid < s) { part[lid] = combine(part[lid], part[lid + s]); }
    workgroupBarrier();
  }
  if (lid == 0u) { y[r] = select(part[0], part[0] / f32(p.len), OP == 1u); }
}
