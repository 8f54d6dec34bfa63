// ArgMax / ArgMin (cpu/index_ops.h): one invocation per (outer, inner) walks the axis of x
// [outer][len][inner] and writes the position (i32) of the largest (MAX = 1) or smallest value;
// ties keep the first position, or the last with LAST = 1.
struct Params {
  outer: u32,
  len: u32,
  inner: u32,
  pad0: u32,
}
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<i32>;
@group(0) @binding(2) var<uniform> p: Params;

override MAX: u32 = 1u;
override LAST: u32 = 0u;
override WG: u32 = 256u;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let n = (wid.x + wid.y * nwg.x) * WG + lid;
  if (n >= p.outer * p.inner) { return; }
  let i = n % p.inner;
  let base = (n / p.inner) * p.len * p.inner + i;
  var best = 0u;
  var bv = x[base];
  for (var l = 1u; l < p.len; l++) {
    let v = x[base + l * p.inner];
    var better: bool;
    if (MAX != 0u) {
      better = select(v > bv, v >= bv, LAST != 0u);
    } else {
      better = select(v < bv, v <= bv, LAST != 0u);
    }
    if (better) {
      best = l;
      bv = v;
    }
  }
  y[n] = i32(best);
}
