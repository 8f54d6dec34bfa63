// linear_batched_q8.wgsl for steps of a few tokens (TT <= 8, all in one workgroup), shaped like a
// matvec: the same bits, more invocations and loads in flight. The batched kernel's summation order
// is per output a chain per lane l of KL (acc = fma(dw, terms, acc) over the blocks b = l, l + KL,
// ... in order) and then the KL lane sums added in lane order; that order fixes who adds, not who
// loads and multiplies. Here a row group of KL * SL invocations takes a chunk of CB = KL * SL * UN
// blocks at a time: invocation j loads blocks j, j + KL * SL, ... (UN of them, all in flight, each
// warp's loads contiguous), computes their terms (block_terms: the batched kernel's per-block
// arithmetic) for every token into workgroup memory, and then the chains run there: invocation
// (token, row, lane) goes through its lane's blocks of the chunk in order. So one-token linears
// read their weights with SL times the batched kernel's invocations per row, UN blocks in flight
// each, and give the bits the batched kernel gives at any batch.
//
// Preceded by a prelude with TT (tokens: p.n <= TT), KL, SL, UN, WG (a multiple of KL * SL), TR
// (rows per row group: 1, 2 or 4; ROPE 2 or 4), Q4, I2F, ROPE and P_BINDING (linear_batched_q8.wgsl's),
// then common.wgsl and linear_batched_rope.wgsl or linear_batched_norope.wgsl. Workgroup x: row
// groups of WG / (KL * SL).
//!include "llm/batched_q8_blocks.wgsl"
//!include "llm/batched_store.wgsl"

const RGT: u32 = KL * SL;                      // invocations per row group
const RGW: u32 = WG / RGT;                     // row groups per workgroup
const CB: u32 = RGT * UN;                      // blocks per chunk
const CHAINS: u32 = TT * TR * KL;              // chains per row group: (token, row, lane)
const NA: u32 = (CHAINS + RGT - 1u) / RGT;     // chains per invocation
var<workgroup> sd: array<f32, RGW * TR * CB>;       // the weights' d, per row group, row and block
var<workgroup> st: array<f32, RGW * TT * TR * CB>;  // the terms, per row group, token, row and block

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) tid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
  let g = tid / RGT;
  let j = tid % RGT;
  let gg_all = wid.x * RGW + g;  // this row group among all
  let rl = gg_all * TR;
  var rows: array<u32, 4>;
  if (ROPE) {
    rows = rope_rows(gg_all);
  } else {
    for (var r = 0u; r < TR; r++) { rows[r] = p.row0 + min(rl + r, p.rows - 1u); }
  }
  let nb = p.cols / 32u;
  let sdg = g * TR * CB;
  let stg = g * TT * TR * CB;
  var acc: array<f32, NA>;
  for (var c0 = 0u; c0 < nb; c0 += CB) {
    var blk: array<WBlock, UN>;
    for (var u = 0u; u < UN; u++) {
      let b = c0 + u * RGT + j;
      if (b < nb) { blk[u] = load_block(rows, nb, b); }
    }
    for (var u = 0u; u < UN; u++) {
      let b = c0 + u * RGT + j;
      let m = u * RGT + j;  // the block within the chunk
      if (b < nb) {
        for (var r = 0u; r < TR; r++) { sd[sdg + r * CB + m] = blk[u].d[r]; }
        for (var t = 0u; t < TT; t++) {
          if (t < p.n) {
            let xi = (t * nb + b) * 2u;
            let v = block_terms(blk[u], xq[xi], xq[xi + 1u], x_block_ds(xds[t * nb + b]));
            for (var r = 0u; r < TR; r++) { st[stg + (t * TR + r) * CB + m] = v[r]; }
          }
        }
      }
    }
    workgroupBarrier();
    // The chains: invocation j takes chains j, j + RGT, ... (chain c: lane c % KL of token and row
    // c / KL), each through its lane's blocks of the chunk in order.
    for (var a = 0u; a < NA; a++) {
      let c = a * RGT + j;
      if (c < CHAINS) {
        let tr = c / KL;  // token * TR + row
        let sdr = sdg + (tr % TR) * CB;
        let str = stg + tr * CB;
        for (var m = c % KL; m < CB && c0 + m < nb; m += KL) { acc[a] = fma(sd[sdr + m], st[str + m], acc[a]); }
      }
    }
    workgroupBarrier();
  }

  // Each output's KL lane sums added in lane order (lane 0's first), as in linear_batched_q8.wgsl.
  for (var a = 0u; a < NA; a++) {
    let c = a * RGT + j;
    if (c < CHAINS) { st[stg + c] = acc[a]; }
  }
  workgroupBarrier();
  if (j < TT && j < p.n) {
    var v = vec4<f32>(0.0);
    for (var r = 0u; r < TR; r++) {
      let at = stg + (j * TR + r) * KL;
      var s = st[at];
      for (var l = 1u; l < KL; l++) { s = s + st[at + l]; }
      v[r] = s;
    }
    if (ROPE) {
      rope_store_rows(j, gg_all, rows, v);
    } else {
      store_rows_n(j, rl, v, TR);
    }
  }
}
