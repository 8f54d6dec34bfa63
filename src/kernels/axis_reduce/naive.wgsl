// y[o][i] = op over l of x[o][l][i] (x seen as [outer][len][inner]): one invocation per output.
// OP: 0 sum, 1 mean, 2 max, 3 min, 4 prod (AxisReduceOp order). INT 1: the elements are i32
// (shapes and masks; wrapping arithmetic as the device's integers do; the mean truncates).
// Words are read as u32 so that either type passes through unchanged.
@group(0) @binding(0) var<storage, read> x: array<u32>;
@group(0) @binding(1) var<storage, read_write> y: array<u32>;
struct Params { outer: u32, len: u32, inner: u32, pad: u32 }
@group(0) @binding(2) var<uniform> p: Params;

override WG: u32 = 256u;
override OP: u32 = 0u;
override INT: u32 = 0u;

fn reduce_f(base: u32) -> f32 {
  var acc = bitcast<f32>(x[base]);
  for (var l = 1u; l < p.len; l++) {
    let v = bitcast<f32>(x[base + l * p.inner]);
    switch (OP) {
      case 2u: { acc = max(acc, v); }
      case 3u: { acc = min(acc, v); }
      case 4u: { acc *= v; }
      default: { acc += v; }
    }
  }
  if (OP == 1u) { acc = acc / f32(p.len); }
  return acc;
}

fn reduce_i(base: u32) -> i32 {
  var acc = bitcast<i32>(x[base]);
  for (var l = 1u; l < p.len; l++) {
    let v = bitcast<i32>(x[base + l * p.inner]);
    switch (OP) {
      case 2u: { acc = max(acc, v); }
      case 3u: { acc = min(acc, v); }
      case 4u: { acc *= v; }
      default: { acc += v; }
    }
  }
  if (OP == 1u) { acc = acc / i32(p.len); }
  return acc;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let r = (wid.x + wid.y * nwg.x) * WG + lid;
  if (r >= p.outer * p.inner) { return; }
  let base = (r / p.inner) * p.len * p.inner + r % p.inner;
  if (INT == 1u) {
    y[r] = bitcast<u32>(reduce_i(base));
  } else {
    y[r] = bitcast<u32>(reduce_f(base));
  }
}
