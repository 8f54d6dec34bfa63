// Binary map, four elements (one vec4) per invocation: out[i] = f(x[i], y[i]) for i < n.
// The bindings are sized in whole vec4s (ops/map.cpp rounds them up to 16 bytes; buffers are
// allocated in 16-byte steps). The invocation at the partial last vec4 writes only the lanes below
// n: it reads that vec4 of `out` and writes the old values back into the lanes past the end.
// A template: ops/map.cpp replaces WGC_EXPR with the caller's f32 expression in `x` and `y`.
@group(0) @binding(0) var<storage, read> xs: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> ys: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> out: array<vec4<f32>>;
struct Params { n: u32 }
@group(0) @binding(3) var<uniform> p: Params;

override WG: u32 = 256;

fn f(x: f32, y: f32) -> f32 {
  return WGC_EXPR;
}

fn f4(a: vec4<f32>, b: vec4<f32>) -> vec4<f32> {
  return vec4<f32>(f(a.x, b.x), f(a.y, b.y), f(a.z, b.z), f(a.w, b.w));
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * nwg.x * WG;
  let full = p.n >> 2u;
  if (i < full) {
    out[i] = f4(xs[i], ys[i]);
  } else if (i == full && (p.n & 3u) != 0u) {
    let keep = vec4<u32>(0u, 1u, 2u, 3u) < vec4<u32>(p.n & 3u);
    out[i] = select(out[i], f4(xs[i], ys[i]), keep);
  }
}
