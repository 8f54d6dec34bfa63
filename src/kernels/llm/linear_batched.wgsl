// Batched linear (serving: a few tokens of many sequences, or a prefill chunk):
// y[t, y_off + r] = sum_k W[row0 + r, k] x[t, k] (+ bias[row0 + r]) (+ y[t, y_off + r]).
//
// A workgroup takes TT tokens (workgroup x) and BN = WG / KL * 4 weight rows (workgroup y). Its
// invocations form row groups of KL lanes; a row group owns 4 consecutive rows, and lane l of it
// reads the weight chunks c = l, l + KL, l + 2 KL, ... of those rows (one vec4<u32> each, so the
// KL lanes read KL consecutive chunks: coalesced), dequantizes each chunk once and multiplies it
// with the TT tokens' x, which the workgroup stages through shared memory in tiles of XT
// elements (the lanes of a warp with the same l read the same x: broadcast). Each invocation
// keeps TT x 4 sums (acc[t] holds the 4 rows); at the end each output's lane sums are added in
// lane order.
//
// Batch invariance: an output's arithmetic is fixed by the weight type and KL alone (each lane
// sums its chunks in order with fma, parts and components in order; the lanes are then added in
// order), never by TT, WG, XT, the number of tokens or where a token sits in the batch. So one
// token alone and the same token among 63 others give bit-identical results.
//
// Preceded by a prelude with the consts TT (tokens per workgroup), WG (invocations), KL (lanes
// per row group, divides WG) and XT (x tile: a multiple of 256 and of KL * W_CHUNK), then
// common.wgsl and a weights/*.wgsl file (bindings 0, 1; wc_load / wc_part / wc_xoff).
@group(0) @binding(2) var<storage, read> x: array<f32>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;
//!include "llm/linear_params.wgsl"
//!include "llm/batched_store.wgsl"

const TR: u32 = 4u;                // rows per row group (the four lanes of acc)
const RG: u32 = WG / KL;           // row groups per workgroup
const XT4: u32 = XT / 4u;          // vec4s of x per token and tile
const XROW: u32 = XT4 + XT4 / 8u;  // with one vec4 of padding every 8 (lanes 8 vec4s apart hit other banks)
const TC: u32 = min(TT, 4u);       // tokens per round of the final sum over the lanes
var<workgroup> xs: array<vec4<f32>, max(TT * XROW, WG * TC)>;

fn xq(i4: u32) -> vec4<f32> { return vec4<f32>(0.0); }  // unused here (w_chunk needs it)

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) tid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
  let t0 = wid.x * TT;
  let g = tid / KL;
  let lane = tid % KL;
  let rl = (wid.y * RG + g) * TR;  // the group's first row (of p.rows)
  let r0 = p.row0 + min(rl, p.rows - 1u);
  let r1 = p.row0 + min(rl + 1u, p.rows - 1u);
  let r2 = p.row0 + min(rl + 2u, p.rows - 1u);
  let r3 = p.row0 + min(rl + 3u, p.rows - 1u);
  w_setup(p.cols);
  let nch = w_nchunks(p.cols);
  var acc: array<vec4<f32>, TT>;

  for (var k0 = 0u; k0 < p.cols; k0 += XT) {
    // x[t0 .. t0 + TT)[k0 .. k0 + XT) into shared memory, zero past the tokens and the row.
    workgroupBarrier();
    for (var i = tid; i < TT * XT4; i += WG) {
      let t = i / XT4;
      let q = i % XT4;
      let tok = t0 + t;
      let k = k0 + 4u * q;
      var v = vec4<f32>(0.0);
      if (tok < p.n) {
        let b = tok * p.x_stride + k;
        for (var e = 0u; e < 4u; e++) {
          if (k + e < p.cols) { v[e] = x[b + e]; }
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

  // Each output's KL lane sums are added in lane order (lane 0's first); in rounds of TC tokens,
  // the lanes of a row group share the adding and the stores.
  for (var tb = 0u; tb < TT; tb += TC) {
    workgroupBarrier();
    for (var t = 0u; t < TC; t++) { xs[(g * TC + t) * KL + lane] = acc[tb + t]; }
    workgroupBarrier();
    for (var t = lane; t < TC; t += KL) {
      let at = (g * TC + t) * KL;
      var v = xs[at];
      for (var l = 1u; l < KL; l++) { v = v + xs[at + l]; }
      if (t0 + tb + t < p.n) { store_rows(t0 + tb + t, rl, v); }
    }
  }
}
