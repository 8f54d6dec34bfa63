// Unary map, one element per invocation: out[i] = f(x[i]) for i < n.
// A template: ops/map.cpp replaces WGC_EXPR with the caller's f32 expression in `x`.
@group(0) @binding(0) var<storage, read> xs: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
struct Params { n: u32 }
@group(0) @binding(2) var<uniform> p: Params;

override WG: u32 = 256;

fn f(x: f32) -> f32 {
  return WGC_EXPR;
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * nwg.x * WG;
  if (i < p.n) { out[i] = f(xs[i]); }
}
