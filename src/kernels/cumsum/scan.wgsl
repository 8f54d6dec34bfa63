// CumSum (cpu/index_ops.h): one invocation per (outer, inner) line of x [outer][len][inner] adds
// along the axis in order (REVERSE = 1: from the end; EXCLUSIVE = 1: each output without its own
// element), in f32, or i32 with INTS = 1 (wrapping).
struct Params {
  outer: u32,
  len: u32,
  inner: u32,
  pad0: u32,
}
@group(0) @binding(0) var<storage, read> x: array<u32>;
@group(0) @binding(1) var<storage, read_write> y: array<u32>;
@group(0) @binding(2) var<uniform> p: Params;

override INTS: u32 = 0u;
override EXCLUSIVE: u32 = 0u;
override REVERSE: u32 = 0u;
override WG: u32 = 256u;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let n = (wid.x + wid.y * nwg.x) * WG + lid;
  if (n >= p.outer * p.inner) { return; }
  let i = n % p.inner;
  let base = (n / p.inner) * p.len * p.inner + i;
  var fs = 0.0;
  var is = 0;
  for (var s = 0u; s < p.len; s++) {
    let l = select(s, p.len - 1u - s, REVERSE != 0u);
    let at = base + l * p.inner;
    if (EXCLUSIVE != 0u) { y[at] = select(bitcast<u32>(fs), bitcast<u32>(is), INTS != 0u); }
    if (INTS != 0u) {
      is += bitcast<i32>(x[at]);
    } else {
      fs += bitcast<f32>(x[at]);
    }
    if (EXCLUSIVE == 0u) { y[at] = select(bitcast<u32>(fs), bitcast<u32>(is), INTS != 0u); }
  }
}
