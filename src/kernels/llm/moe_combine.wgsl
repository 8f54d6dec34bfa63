// The experts' outputs into the residual: x[t][i] += sum_j wts[t k + j] * yd[(t k + j)][i]
// (slots in order) + (SHARED) sigmoid(logits[t * g_stride + g_col]) * ys[t][i].
@group(0) @binding(0) var<storage, read> yd: array<f32>;
@group(0) @binding(1) var<storage, read> wts: array<f32>;
@group(0) @binding(2) var<storage, read> ys: array<f32>;
@group(0) @binding(3) var<storage, read> logits: array<f32>;
@group(0) @binding(4) var<storage, read_write> x: array<f32>;
struct P {
  n: u32,
  hidden: u32,
  k: u32,
  shared_exp: u32,
  g_stride: u32,
  g_col: u32,
}
@group(0) @binding(5) var<uniform> p: P;
const WG: u32 = 256u;

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
  let g = wg_linear(wid, nwg) * WG + lid;
  if (g >= p.n * p.hidden) { return; }
  let t = g / p.hidden;
  let i = g % p.hidden;
  var acc = 0.0;
  for (var j = 0u; j < p.k; j++) {
    let q = t * p.k + j;
    acc += wts[q] * yd[q * p.hidden + i];
  }
  if (p.shared_exp == 1u) {
    let gl = logits[t * p.g_stride + p.g_col];
    acc += ys[t * p.hidden + i] / (1.0 + exp(-gl));
  }
  x[g] += acc;
}
