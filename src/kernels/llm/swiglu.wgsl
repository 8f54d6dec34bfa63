// out[t * out_stride + i] = act(g) * u with g = a[t * a_stride + a_off + i],
// u = b[t * b_stride + b_off + i], i < n (a and b may be the same gate|up buffer); act: silu, or
// with GELU = 1 the tanh approximation of GELU (transformers' gelu_pytorch_tanh: Gemma's GeGLU),
// with GELU = 2 the exact erf GELU (transformers' gelu: ModernBERT's GeGLU; erf_f32 from
// elementwise/functions.wgsl).
//!include "elementwise/functions.wgsl"
@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
struct P {
  tokens: u32,
  n: u32,
  a_stride: u32,
  a_off: u32,
  b_stride: u32,
  b_off: u32,
  out_stride: u32,
}
@group(0) @binding(3) var<uniform> p: P;
override WG: u32 = 256;
override GELU: u32 = 0;

fn gelu_tanh(x: f32) -> f32 {
  // tanh's argument clamped: |z| > 10 gives +-1 in f32 anyway, and some tanh implementations
  // overflow (exp) to NaN far out
  let z = clamp(0.7978845608028654 * (x + 0.044715 * x * x * x), -10.0, 10.0);
  return 0.5 * x * (1.0 + tanh(z));
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
  let g = wg_linear(wid, nwg) * WG + lid;
  if (g >= p.tokens * p.n) { return; }
  let t = g / p.n;
  let i = g % p.n;
  let gv = a[t * p.a_stride + p.a_off + i];
  let uv = b[t * p.b_stride + p.b_off + i];
  if (GELU == 2u) {
    out[t * p.out_stride + i] = 0.5 * gv * (1.0 + erf_f32(gv * 0.70710678118654752)) * uv;
  } else if (GELU != 0u) {
    out[t * p.out_stride + i] = gelu_tanh(gv) * uv;
  } else {
    out[t * p.out_stride + i] = gv / (1.0 + exp(-gv)) * uv;
  }
}
