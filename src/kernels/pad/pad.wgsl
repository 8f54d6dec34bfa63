// Pad (cpu/index_ops.h), one output element per invocation, any 4-byte element type: along each of
// 6 dims (lower ranks padded with leading extent-1 dims) output position o reads input position
// (o - begin) / stride when that divides exactly and lies inside; otherwise MODE 0 writes the
// constant's bits, 1 reflects, 2 clamps to the edge, 3 wraps.
struct Params {
  count: u32,
  value: u32,  // the constant's bits (f32 or i32)
  pad0: u32,
  pad1: u32,
  out_shape: array<vec4<u32>, 2>,
  in_shape: array<vec4<u32>, 2>,
  in_strides: array<vec4<u32>, 2>,
  begin: array<vec4<i32>, 2>,
  stride: array<vec4<u32>, 2>,
}
@group(0) @binding(0) var<storage, read> x: array<u32>;
@group(0) @binding(1) var<storage, read_write> y: array<u32>;
@group(0) @binding(2) var<uniform> p: Params;

override MODE: u32 = 0u;
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
    let ext = p.out_shape[d / 4u][d % 4u];
    let o = i32(r % ext);
    r = r / ext;
    let len = i32(p.in_shape[d / 4u][d % 4u]);
    let s = i32(p.stride[d / 4u][d % 4u]);
    var c = o - p.begin[d / 4u][d % 4u];
    if (s > 1) {
      if (c < 0 || c % s != 0) {
        y[n] = p.value;
        return;
      }
      c = c / s;
    }
    if (c < 0 || c >= len) {
      if (MODE == 0u) {
        y[n] = p.value;
        return;
      } else if (MODE == 1u) {
        if (len == 1) {
          c = 0;
        } else {
          let period = 2 * (len - 1);
          let m = ((c % period) + period) % period;
          c = select(period - m, m, m < len);
        }
      } else if (MODE == 2u) {
        c = clamp(c, 0, len - 1);
      } else {
        c = ((c % len) + len) % len;
      }
    }
    src += u32(c) * p.in_strides[d / 4u][d % 4u];
  }
  y[n] = x[src];
}
