// y[i] = alpha * y[i] + beta * x[i] for i < n (beta == 0: x is not read). Residual add
// (alpha = beta = 1) and in-place scaling (beta = 0).
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
struct P {
  n: u32,
  alpha: f32,
  beta: f32,
}
@group(0) @binding(2) var<uniform> p: P;
override WG: u32 = 256;

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = wg_linear(wid, nwg) * WG + lid;
  if (i >= p.n) { return; }
  var v = p.alpha * y[i];
  if (p.beta != 0.0) { v += p.beta * x[i]; }
  y[i] = v;
}
