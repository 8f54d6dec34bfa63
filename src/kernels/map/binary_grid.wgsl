// Binary map, grid-stride over vec4s: a fixed grid of invocations walks the data with four
// independent vec4 loads of each input in flight per invocation per step (stride = all
// invocations), then a remainder loop, then the partial last vec4 (lanes below n only, as in
// binary_vec4.wgsl).
// A template: ops/map.cpp replaces WGC_EXPR with the caller's f32 expression in `x` and `y`.
@group(0) @binding(0) var<storage, read> xs: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> ys: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> out: array<vec4<f32>>;
struct Params { n: u32 }
@group(0) @binding(3) var<uniform> p: Params;

override WG: u32 = 256;
const U: u32 = 4u;  // vec4 loads per input in flight per invocation per step

fn f(x: f32, y: f32) -> f32 {
  return WGC_EXPR;
}

fn f4(a: vec4<f32>, b: vec4<f32>) -> vec4<f32> {
  return vec4<f32>(f(a.x, b.x), f(a.y, b.y), f(a.z, b.z), f(a.w, b.w));
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let tid = gid.x + gid.y * nwg.x * WG;
  let stride = nwg.x * nwg.y * WG;
  let full = p.n >> 2u;
  var i = tid;
  while (full >= U * stride && i < full - (U - 1u) * stride) {
    var a: array<vec4<f32>, U>;
    var b: array<vec4<f32>, U>;
    for (var k = 0u; k < U; k++) {
      a[k] = xs[i + k * stride];
      b[k] = ys[i + k * stride];
    }
    for (var k = 0u; k < U; k++) { out[i + k * stride] = f4(a[k], b[k]); }
    i += U * stride;
  }
  for (; i < full; i += stride) { out[i] = f4(xs[i], ys[i]); }
  if (tid == 0u && (p.n & 3u) != 0u) {
    let keep = vec4<u32>(0u, 1u, 2u, 3u) < vec4<u32>(p.n & 3u);
    out[full] = select(out[full], f4(xs[full], ys[full]), keep);
  }
}
