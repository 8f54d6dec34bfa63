// The routed experts' linear (moe_route.wgsl's runs): workgroup (i, y) takes run i (expert e,
// its pairs order[s .. s + count)) and BN = WG / KL * 4 rows of expert e's matrix (rows
// e * p.rows .. of the stacked weight), through the run's pairs TT at a time, so an expert's rows
// come from memory once per step (the later chunks find them in the caches):
//   y[q * y_stride + y_off + r] = sum_k W[e * p.rows + r, k] x[(q / x_div) * x_stride + k]
// for each pair q of the run (x_div = k: x is one row per token; 1: one row per pair).
// Workgroups past runs[0] return at once (the grid is the most runs a step can have).
//
// The arithmetic is linear_batched.wgsl's (KL lanes per row group, each summing its chunks in
// order with fma; the lanes added in order), fixed by the weight type and KL alone: a pair's
// result does not depend on TT, on where it sits in its run, nor on the batch (batch invariance).
// Preceded by a prelude (TT, WG, KL, XT: a multiple of 256 and of KL * W_CHUNK), common.wgsl and
// a weights/*.wgsl file (bindings 0, 1; wc_load / wc_part / wc_xoff).
@group(0) @binding(2) var<storage, read> x: array<f32>;
@group(0) @binding(3) var<storage, read> order: array<u32>;
@group(0) @binding(4) var<storage, read> runs: array<u32>;
@group(0) @binding(5) var<storage, read_write> y: array<f32>;
struct P {
  rows: u32,  // per expert
  cols: u32,
  x_stride: u32,
  x_div: u32,
  y_stride: u32,
  y_off: u32,
}
@group(0) @binding(6) var<uniform> p: P;

const TR: u32 = 4u;
const RG: u32 = WG / KL;
const XT4: u32 = XT / 4u;
const XROW: u32 = XT4 + XT4 / 8u;
const TC: u32 = min(TT, 4u);
var<workgroup> xs: array<vec4<f32>, max(TT * XROW, WG * TC)>;
var<workgroup> n_runs: u32;
var<workgroup> run_len: u32;
var<workgroup> pair: array<u32, TT>;

fn xq(i4: u32) -> vec4<f32> { return vec4<f32>(0.0); }  // unused here (w_chunk needs it)

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) tid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
  if (tid == 0u) { n_runs = runs[0]; }
  if (wid.x >= workgroupUniformLoad(&n_runs)) { return; }
  let e = runs[1u + 3u * wid.x];
  let s = runs[2u + 3u * wid.x];
  if (tid == 0u) { run_len = runs[3u + 3u * wid.x]; }
  let total = workgroupUniformLoad(&run_len);
  let g = tid / KL;
  let lane = tid % KL;
  let rl = (wid.y * RG + g) * TR;
  let base = e * p.rows;
  let r0 = base + min(rl, p.rows - 1u);
  let r1 = base + min(rl + 1u, p.rows - 1u);
  let r2 = base + min(rl + 2u, p.rows - 1u);
  let r3 = base + min(rl + 3u, p.rows - 1u);
  w_setup(p.cols);
  let nch = w_nchunks(p.cols);

  for (var b0 = 0u; b0 < total; b0 += TT) {
    let cnt = min(TT, total - b0);
    workgroupBarrier();  // the previous chunk's sums are stored: pair and xs are free
    if (tid < cnt) {
      pair[tid] = order[s + b0 + tid];
    } else if (tid < TT) {
      pair[tid] = 0u;
    }
    var acc: array<vec4<f32>, TT>;
    for (var t = 0u; t < TT; t++) { acc[t] = vec4<f32>(0.0); }  // zeroed per chunk, explicitly

    for (var k0 = 0u; k0 < p.cols; k0 += XT) {
      workgroupBarrier();
      for (var i = tid; i < TT * XT4; i += WG) {
        let t = i / XT4;
        let q = i % XT4;
        let k = k0 + 4u * q;
        var v = vec4<f32>(0.0);
        if (t < cnt) {
          let b = (pair[t] / p.x_div) * p.x_stride + k;
          for (var c = 0u; c < 4u; c++) {
            if (k + c < p.cols) { v[c] = x[b + c]; }
          }
        }
        xs[t * XROW + q + q / 8u] = v;
      }
      workgroupBarrier();
      let c1 = min((k0 + XT) / W_CHUNK, nch);
      for (var c = k0 / W_CHUNK + lane; c < c1; c += KL) {
        let ch0 = wc_load(r0, c);
        let ch1 = wc_load(r1, c);
        let ch2 = wc_load(r2, c);
        let ch3 = wc_load(r3, c);
        for (var j = 0u; j < W_PARTS; j++) {
          let w0 = wc_part(ch0, j);
          let w1 = wc_part(ch1, j);
          let w2 = wc_part(ch2, j);
          let w3 = wc_part(ch3, j);
          let wx = vec4<f32>(w0.x, w1.x, w2.x, w3.x);
          let wy = vec4<f32>(w0.y, w1.y, w2.y, w3.y);
          let wz = vec4<f32>(w0.z, w1.z, w2.z, w3.z);
          let ww = vec4<f32>(w0.w, w1.w, w2.w, w3.w);
          let xo = wc_xoff(c, j) - k0 / 4u;
          let xp = xo + xo / 8u;
          for (var t = 0u; t < TT; t++) {
            let xv = xs[t * XROW + xp];
            var a = acc[t];
            a = fma(wx, vec4<f32>(xv.x), a);
            a = fma(wy, vec4<f32>(xv.y), a);
            a = fma(wz, vec4<f32>(xv.z), a);
            a = fma(ww, vec4<f32>(xv.w), a);
            acc[t] = a;
          }
        }
      }
    }

    for (var tb = 0u; tb < TT; tb += TC) {
      workgroupBarrier();
      for (var t = 0u; t < TC; t++) { xs[(g * TC + t) * KL + lane] = acc[tb + t]; }
      workgroupBarrier();
      for (var t = lane; t < TC; t += KL) {
        let at = (g * TC + t) * KL;
        var v = xs[at];
        for (var l = 1u; l < KL; l++) { v = v + xs[at + l]; }
        if (tb + t < cnt) {
          let o = pair[tb + t] * p.y_stride + p.y_off + rl;
          for (var r = 0u; r < TR; r++) {
            if (rl + r < p.rows) { y[o + r] = v[r]; }
          }
        }
      }
    }
  }
}
