// ScatterElements (cpu/index_ops.h), any 4-byte element type: one invocation per output element
// (the data's shape, 6 dims, lower ranks padded with leading extent-1 dims) starts from data and
// walks the updates that can reach it (its own coordinates, any position along AXIS of the
// indices), in order, applying those whose index names its coordinate along AXIS: no atomics, and
// duplicates resolve as the CPU reference's row-major order does. RED: 0 none, 1 add, 2 mul,
// 3 max, 4 min; INT 1: i32 arithmetic.
struct Params {
  count: u32,
  axis: u32,  // of the 6
  pad0: u32,
  pad1: u32,
  shape: array<vec4<u32>, 2>,
  index_shape: array<vec4<u32>, 2>,
}
@group(0) @binding(0) var<storage, read> data: array<u32>;
@group(0) @binding(1) var<storage, read> index: array<i32>;
@group(0) @binding(2) var<storage, read> updates: array<u32>;
@group(0) @binding(3) var<storage, read_write> y: array<u32>;
@group(0) @binding(4) var<uniform> p: Params;

override WG: u32 = 256u;
override RED: u32 = 0u;
override INT: u32 = 0u;

fn combine(a: u32, b: u32) -> u32 {
  if (RED == 0u) { return b; }
  if (INT == 1u) {
    let x = bitcast<i32>(a);
    let v = bitcast<i32>(b);
    switch (RED) {
      case 1u: { return bitcast<u32>(x + v); }
      case 2u: { return bitcast<u32>(x * v); }
      case 3u: { return bitcast<u32>(max(x, v)); }
      default: { return bitcast<u32>(min(x, v)); }
    }
  }
  let x = bitcast<f32>(a);
  let v = bitcast<f32>(b);
  switch (RED) {
    case 1u: { return bitcast<u32>(x + v); }
    case 2u: { return bitcast<u32>(x * v); }
    case 3u: { return bitcast<u32>(max(x, v)); }
    default: { return bitcast<u32>(min(x, v)); }
  }
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let n = (wid.x + wid.y * nwg.x) * WG + lid;
  if (n >= p.count) { return; }
  // This element's coordinates; the indices' offset of its coordinates with 0 along AXIS, and the
  // stride along AXIS there.
  var r = n;
  var base = 0u;
  var istride = 1u;
  var axis_stride = 1u;
  var a = 0u;
  var inside = true;
  for (var k = 0u; k < 6u; k++) {
    let d = 5u - k;
    let ext = p.shape[d / 4u][d % 4u];
    let iext = p.index_shape[d / 4u][d % 4u];
    let c = r % ext;
    r = r / ext;
    if (d == p.axis) {
      a = c;
      axis_stride = istride;
    } else {
      inside = inside && c < iext;
      base += c * istride;
    }
    istride *= iext;
  }
  var v = data[n];
  if (inside) {
    let len = i32(p.shape[p.axis / 4u][p.axis % 4u]);
    let ilen = p.index_shape[p.axis / 4u][p.axis % 4u];
    for (var j = 0u; j < ilen; j++) {
      let at = base + j * axis_stride;
      var t = index[at];
      if (t < 0) { t += len; }
      if (t == i32(a)) { v = combine(v, updates[at]); }
    }
  }
  y[n] = v;
}
