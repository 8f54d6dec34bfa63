// Mixture-of-experts routing of n tokens, in one workgroup (so the grouping needs no second pass):
//   1. per token (an invocation each): the softmax of its n_experts router logits
//      (logits[t * stride + e]), the top k (ties: the lower expert first; NaN ranks last, weight 0), their
//      weights (renormalised to sum 1 when p.norm) -> ids[t * k + j], wts[t * k + j];
//   2. the (token, slot) pairs q = t * k + j grouped by expert: order[] lists them expert by
//      expert (in q order within an expert), and runs[] has one entry per expert that has pairs:
//      runs[0] = their count, run i = (expert, first index in order, pairs) at runs[1 + 3 i ..].
//      moe_linear.wgsl takes one run per workgroup (and a block of rows), so each expert's weights
//      are read once per step.
// A token's ids and weights depend on its logits alone (batch invariance).
@group(0) @binding(0) var<storage, read> logits: array<f32>;
@group(0) @binding(1) var<storage, read_write> ids: array<u32>;
@group(0) @binding(2) var<storage, read_write> wts: array<f32>;
@group(0) @binding(3) var<storage, read_write> order: array<u32>;
@group(0) @binding(4) var<storage, read_write> runs: array<u32>;
struct P {
  n: u32,       // tokens
  experts: u32, // at most MAX_E
  k: u32,       // experts per token
  stride: u32,  // logits between tokens
  norm: u32,    // 1: renormalise the k weights
}
@group(0) @binding(5) var<uniform> p: P;
const WG: u32 = 256u;
const MAX_E: u32 = 1024u;
var<workgroup> counts: array<u32, MAX_E>;
var<workgroup> offs: array<u32, MAX_E>;

// Whether expert (v, e) comes after (pv, pe) in the ranking (larger logit first, then lower index).
fn after(v: f32, e: u32, pv: f32, pe: u32) -> bool { return v < pv || (v == pv && e > pe); }

// A logit as the ranking takes it: NaN (tested on the bits: compilers may fold v != v) as the
// lowest float, so it comes last and weighs exp(-huge) = 0.
fn logit(i: u32) -> f32 {
  let v = logits[i];
  return select(v, bitcast<f32>(0xff7fffffu), (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u);
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32) {
  let E = p.experts;
  for (var t = lid; t < p.n; t += WG) {
    let row = t * p.stride;
    var mx = logit(row);
    for (var e = 1u; e < E; e++) { mx = max(mx, logit(row + e)); }
    var sum = 0.0;
    for (var e = 0u; e < E; e++) { sum += exp(logit(row + e) - mx); }
    var pv = 0.0;
    var pe = 0xffffffffu;  // none chosen yet
    var sel = 0.0;
    for (var j = 0u; j < p.k; j++) {
      var bv = 0.0;
      var be = 0xffffffffu;
      for (var e = 0u; e < E; e++) {
        let v = logit(row + e);
        let ok = pe == 0xffffffffu || after(v, e, pv, pe);
        if (ok && (be == 0xffffffffu || v > bv)) {
          bv = v;
          be = e;
        }
      }
      pv = bv;
      pe = be;
      let w = exp(bv - mx);
      sel += w;
      ids[t * p.k + j] = be;
      wts[t * p.k + j] = w;
    }
    let d = select(sum, sel, p.norm == 1u);
    for (var j = 0u; j < p.k; j++) { wts[t * p.k + j] = wts[t * p.k + j] / d; }
  }
  storageBarrier();
  workgroupBarrier();
  let pairs = p.n * p.k;
  for (var e = lid; e < E; e += WG) {
    var c = 0u;
    for (var q = 0u; q < pairs; q++) { c += select(0u, 1u, ids[q] == e); }
    counts[e] = c;
  }
  workgroupBarrier();
  if (lid == 0u) {
    var at = 0u;
    var nr = 0u;
    for (var e = 0u; e < E; e++) {
      let c = counts[e];
      offs[e] = at;
      if (c > 0u) {
        runs[1u + 3u * nr] = e;
        runs[2u + 3u * nr] = at;
        runs[3u + 3u * nr] = c;
        nr++;
      }
      at += c;
    }
    runs[0] = nr;
  }
  workgroupBarrier();
  for (var e = lid; e < E; e += WG) {
    var j = offs[e];
    for (var q = 0u; q < pairs; q++) {
      if (ids[q] == e) {
        order[j] = q;
        j++;
      }
    }
  }
}
