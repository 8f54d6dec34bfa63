// GatherElements (cpu/index_ops.h), any 4-byte element type: output n (over the indices' shape, 6
// dims, lower ranks padded with leading extent-1 dims) reads x at its own coordinates with the one
// along AXIS replaced by index[n] (wrapped and clamped as Gather's).
struct Params {
  count: u32,
  axis: u32,  // of the 6
  axis_len: u32,
  pad0: u32,
  shape: array<vec4<u32>, 2>,
  x_strides: array<vec4<u32>, 2>,
}
@group(0) @binding(0) var<storage, read> x: array<u32>;
@group(0) @binding(1) var<storage, read> index: array<i32>;
@group(0) @binding(2) var<storage, read_write> y: array<u32>;
@group(0) @binding(3) var<uniform> p: Params;

override WG: u32 = 256u;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let n = (wid.x + wid.y * nwg.x) * WG + lid;
  if (n >= p.count) { return; }
  var r = n;
  var src = 0u;
  for (var k = 0u; k < 6u; k++) {
    let d = 5u - k;
    let ext = p.shape[d / 4u][d % 4u];
    var c = r % ext;
    r = r / ext;
    if (d == p.axis) {
      var j = index[n];
      if (j < 0) { j += i32(p.axis_len); }
      c = u32(clamp(j, 0, i32(p.axis_len) - 1));
    }
    src += c * p.x_strides[d / 4u][d % 4u];
  }
  y[n] = x[src];
}
