// Batched linear with 8-bit activations (serving, Q4_0 / Q8_0 weights): as linear_batched.wgsl
// (a workgroup takes TG groups of TT tokens x WG / TG / KL * TR rows, each token group with its
// own invocations, the weight rows shared through the cache; lane l of a row group takes the
// weight blocks b = l, l + KL, ... of its TR rows), but x comes quantized per token in blocks of 32 (a Q8Act:
// quant_act.wgsl's layout) and each block's products are integer dot products (dot4I8Packed):
//   y[t, r] = sum_b dw[r, b] * (dx[t, b] * f32(sum_i qw[r, b, i] * qx[t, b, i]))   (Q8_0)
// with qw - 8 for Q4_0 (the sum then less 8 * sum_i qx[t, b, i]).
// Batch invariance: an output's arithmetic is fixed by the weight type and KL (blocks in order per
// lane, lanes added in order), never by the batch, TT, TG or TR (rows are independent), as in the f32
// kernel; the quantization of x is per token.
//
// Preceded by a prelude with TT, TG, WG (a multiple of TG * KL), KL, TR (rows per row group: 1, 2 or 4; fewer rows give small
// batches more workgroups), XT (a multiple of 32 * KL), Q4 (true: Q4_0 weights, false: Q8_0),
// PF (true: each lane loads its next block's weights before it multiplies the current one, so that
// a load is in flight while it computes), UN (> 1: each lane loads UN blocks, then multiplies
// them in order: UN loads in flight; PF then unused) and I2F (true: the integer sums become floats
// through an integer add and a float subtract, the Q4_0 offset folded into the add, instead of
// a conversion, which runs at a quarter rate on NVIDIA GPUs; the same values: every sum is an
// integer below 2^22), ROPE (true: the weight is a fused QKV one whose outputs get RoPE and go to
// the KV cache, linear_batched_rope.wgsl; TR 2 or 4) and P_BINDING (the uniform's binding: 6, or
// 10 with ROPE), then common.wgsl and linear_batched_rope.wgsl or linear_batched_norope.wgsl.
// None of them but ROPE changes a result. Bindings, parameters and the per-block arithmetic:
// batched_q8_blocks.wgsl (shared with linear_batched_q8_mv.wgsl, the small steps' kernel); ROPE's
// 6-9.
//!include "llm/batched_q8_blocks.wgsl"
//!include "llm/batched_store.wgsl"

const WGR: u32 = WG / TG;         // invocations per token group
const RG: u32 = WGR / KL;         // row groups
const TW: u32 = TT * TG;          // tokens per workgroup
const XB: u32 = XT / 32u;         // x blocks per tile
const XROW: u32 = XB * 2u + XB / 4u;  // vec4<u32> per token and tile (2 per block), one of padding every 8
const TC: u32 = min(TT, 4u);      // tokens per round of the final sum over the lanes
var<workgroup> xs: array<vec4<u32>, max(TW * XROW, WG * TC)>;
// (d, sum) per block, the sum as a float of an integer; with I2F the sum's part of the float
// conversion instead: the bits of 0x4B400000 - 8 * sum (Q4_0) or 0x4B400000 (Q8_0)
var<workgroup> xd: array<vec2<f32>, TW * XB>;

// Block b's products with this token group's TT tokens (x tile from b0) into acc, in token order.
fn mac(cur: WBlock, b: u32, b0: u32, tg: u32, acc: ptr<function, array<vec4<f32>, TT>>) {
  let xo = 2u * (b - b0);
  let xp = xo + xo / 8u;
  let xp1 = xo + 1u + (xo + 1u) / 8u;
  for (var t = 0u; t < TT; t++) {
    let tt = tg * TT + t;
    let xa = xs[tt * XROW + xp];
    let xb = xs[tt * XROW + xp1];
    let e = xd[tt * XB + b - b0];
    (*acc)[t] = fma(cur.d, block_terms(cur, xa, xb, e), (*acc)[t]);
  }
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) tid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
  let tw0 = wid.x * TW;
  let tg = tid / WGR;
  let t0 = tw0 + tg * TT;  // this token group's first token
  let g = (tid % WGR) / KL;
  let lane = tid % KL;
  let rl = (wid.y * RG + g) * TR;
  var rows: array<u32, 4>;
  let gg_all = wid.y * RG + g;  // this row group among all
  if (ROPE) {
    rows = rope_rows(gg_all);
  } else {
    for (var r = 0u; r < TR; r++) { rows[r] = p.row0 + min(rl + r, p.rows - 1u); }
  }
  let nb = p.cols / 32u;
  var acc: array<vec4<f32>, TT>;
  // Lane l takes blocks l, l + KL, ... across the x tiles (XT is a multiple of 32 * KL).
  var nxt: WBlock;
  if (PF && UN == 1u && lane < nb) { nxt = load_block(rows, nb, lane); }

  for (var b0 = 0u; b0 < nb; b0 += XB) {
    workgroupBarrier();
    for (var i = tid; i < TW * XB * 2u; i += WG) {
      let t = i / (XB * 2u);
      let q = i % (XB * 2u);
      let tok = tw0 + t;
      var v = vec4<u32>(0u);
      if (tok < p.n && b0 + q / 2u < nb) { v = xq[tok * nb * 2u + b0 * 2u + q]; }
      xs[t * XROW + q + q / 8u] = v;
    }
    for (var i = tid; i < TW * XB; i += WG) {
      let t = i / XB;
      let q = i % XB;
      let tok = tw0 + t;
      var v = vec2<f32>(0.0);
      if (tok < p.n && b0 + q < nb) {
        v = x_block_ds(xds[tok * nb + b0 + q]);
      }
      xd[i] = v;
    }
    workgroupBarrier();
    let b1 = min(b0 + XB, nb);
    if (UN > 1u) {
      for (var b = b0 + lane; b < b1; b += KL * UN) {
        var blk: array<WBlock, UN>;
        for (var u = 0u; u < UN; u++) {
          if (b + u * KL < b1) { blk[u] = load_block(rows, nb, b + u * KL); }
        }
        for (var u = 0u; u < UN; u++) {
          if (b + u * KL < b1) { mac(blk[u], b + u * KL, b0, tg, &acc); }
        }
      }
    } else {
      for (var b = b0 + lane; b < b1; b += KL) {
        var cur: WBlock;
        if (PF) {
          cur = nxt;
          if (b + KL < nb) { nxt = load_block(rows, nb, b + KL); }
        } else {
          cur = load_block(rows, nb, b);
        }
        mac(cur, b, b0, tg, &acc);
      }
    }
  }

  // Each output's KL lane sums are added in lane order (lane 0's first), as in the f32 kernel; in
  // rounds of TC tokens, the lanes of a row group share the adding and the stores.
  for (var tb = 0u; tb < TT; tb += TC) {
    workgroupBarrier();
    let gg = tg * RG + g;  // the row group among the workgroup's
    for (var t = 0u; t < TC; t++) { xs[(gg * TC + t) * KL + lane] = bitcast<vec4<u32>>(acc[tb + t]); }
    workgroupBarrier();
    for (var t = lane; t < TC; t += KL) {
      let at = (gg * TC + t) * KL;
      var v = bitcast<vec4<f32>>(xs[at]);
      for (var l = 1u; l < KL; l++) { v = v + bitcast<vec4<f32>>(xs[at + l]); }
      if (t0 + tb + t < p.n) {
        if (ROPE) {
          rope_store_rows(t0 + tb + t, gg_all, rows, v);
        } else {
          store_rows_n(t0 + tb + t, rl, v, TR);
        }
      }
    }
  }
}
