// y[i] = cap * tanh(y[i] / cap), i < n (Gemma 2's final logit soft-cap; tanh's argument clamped:
// |x| > 15 is +-1 in f32 anyway). Preceded by common.wgsl.
@group(0) @binding(0) var<storage, read_write> y: array<f32>;
struct P {
  n: u32,
  cap: f32,
}
@group(0) @binding(1) var<uniform> p: P;

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = wg_linear(wid, nwg) * 256u + lid;
  if (i >= p.n) { return; }
  y[i] = p.cap * tanh(clamp(y[i] / p.cap, -15.0, 15.0));
}
