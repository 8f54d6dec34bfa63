// Flash decoding for one token (split-K) with subgroup reductions and no workgroup barrier in
// the key loop: workgroup (split, kvh) reads keys [first + split * split_len, first + (split + 1) *
// split_len) (first: the sliding window's first key, else 0)
// of kv head kvh once for the G query heads that share it, and writes each head's partial
// (attn_partial.wgsl's layout) or, with one split and partial = 0, the output.
// TPK consecutive lanes of a subgroup form a key group: lane j holds vec4s j, j + TPK, .. (NV
// of them) of the query heads, of its keys and of the output, so a warp's loads of one key row
// are contiguous. Per step the WG / TPK key groups take U keys each (key kb + u * KG + kg):
// K and V rows straight into registers (with PF the next step's are loaded before this one is
// computed), the G * U dot products summed over the group with subgroupShuffleXor, then each
// group's own online softmax (running max m, sum l, acc rescaled once per step). At the end the
// key groups merge by shuffles within the subgroup, the subgroups through workgroup memory in
// subgroup order. Keys past the split's end are read from its last visible row and masked, so
// every lane runs the same steps (subgroup operations stay in uniform control flow).
// Needs `enable subgroups;` and the constants HD, G, TPK (a power of two <= SGS), U, WG (a
// multiple of SGS), SGS (the subgroup size) and PF (bool) in a prelude: loops over them are
// unrolled by the compiler, so the register arrays are only indexed by constants.
@group(0) @binding(0) var<storage, read> q4: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> k4: KvWords;  // kv_read_*.wgsl: k_at
@group(0) @binding(2) var<storage, read> v4: KvWords;  // kv_read_*.wgsl: v_at
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
@group(0) @binding(4) var<storage, read> dynpos: array<u32>;
//!include "llm/flash_attn_params.wgsl"
const HD4: u32 = HD / 4u;
const NV: u32 = (HD4 + TPK - 1u) / TPK;  // vec4s per lane of a row
const KG: u32 = WG / TPK;                // key groups
const BK: u32 = KG * U;                  // keys per step (the split length is a multiple)
const NSG: u32 = WG / SGS;               // subgroups
const MASKED: f32 = -3.0e38;
//!include "llm/attn_window.wgsl"
//!include "llm/flash_attn_range.wgsl"
//!include "llm/flash_decode_store.wgsl"
@group(0) @binding(5) var<uniform> p: P;

const RS: u32 = NV * TPK;  // vec4s per head in red_acc (>= HD4: every lane stores without a branch)
var<workgroup> red_acc: array<vec4<f32>, NSG * G * RS>;  // [subgroup][head][vec4]
var<workgroup> red_ml: array<vec2<f32>, NSG * G>;         // [subgroup][head]: (m, l)

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
  let j = lid % TPK;
  let kg = lid / TPK;
  let split = wid.x;
  let kvh = wid.y;
  let range = key_range(1u, 1u);
  let kv_begin = range.z + split * range.y;  // range.z: the window's first key (every key visible)
  let kv_end = min(kv_begin + range.y, range.x + 1u);  // >= 1: row kv_end - 1 is always written
  let cb = p.cache_off / 4u + kvh * p.max_ctx * HD4;

  var q: array<vec4<f32>, G * NV>;
  for (var g = 0u; g < G; g++) {
    let qb = (p.q_off + (kvh * G + g) * HD) / 4u;
    for (var i = 0u; i < NV; i++) {
      let c = j + TPK * i;
      q[g * NV + i] = select(vec4<f32>(0.0), q4[qb + min(c, HD4 - 1u)] * p.scale, c < HD4);
    }
  }
  var m: array<f32, G>;
  var l: array<f32, G>;
  var acc: array<vec4<f32>, G * NV>;
  for (var g = 0u; g < G; g++) { m[g] = MASKED; }

  // rows of this lane's keys in the step at kb (past kv_end: the last visible row, masked later)
  var kn: array<vec4<f32>, U * NV>;
  var vn: array<vec4<f32>, U * NV>;
  if (PF) {
    for (var u = 0u; u < U; u++) {
      let row = cb + kv_row(min(kv_begin + u * KG + kg, kv_end - 1u)) * HD4;
      for (var i = 0u; i < NV; i++) {
        let c = min(j + TPK * i, HD4 - 1u);
        kn[u * NV + i] = k_at(row + c);
        vn[u * NV + i] = v_at(row + c);
      }
    }
  }
  for (var kb = kv_begin; kb < kv_end; kb += BK) {
    var kk: array<vec4<f32>, U * NV>;
    var vv: array<vec4<f32>, U * NV>;
    let kl = select(kb, kb + BK, PF);  // the step whose rows are loaded now
    if (PF) {
      kk = kn;
      vv = vn;
    }
    for (var u = 0u; u < U; u++) {
      let row = cb + kv_row(min(kl + u * KG + kg, kv_end - 1u)) * HD4;
      for (var i = 0u; i < NV; i++) {
        let c = min(j + TPK * i, HD4 - 1u);
        if (PF) {
          kn[u * NV + i] = k_at(row + c);
          vn[u * NV + i] = v_at(row + c);
        } else {
          kk[u * NV + i] = k_at(row + c);
          vv[u * NV + i] = v_at(row + c);
        }
      }
    }
    var s: array<f32, U * G>;
    for (var u = 0u; u < U; u++) {
      for (var g = 0u; g < G; g++) {
        var d = 0.0;
        for (var i = 0u; i < NV; i++) { d += dot(q[g * NV + i], kk[u * NV + i]); }
        s[u * G + g] = d;
      }
    }
    for (var o = 1u; o < TPK; o *= 2u) {
      for (var x = 0u; x < U * G; x++) { s[x] += subgroupShuffleXor(s[x], o); }
    }
    for (var x = 0u; x < U * G; x++) { s[x] = cap_score(s[x]); }
    for (var g = 0u; g < G; g++) {
      var bm = m[g];
      for (var u = 0u; u < U; u++) { bm = max(bm, select(MASKED, s[u * G + g], kb + u * KG + kg < kv_end)); }
      let corr = exp(m[g] - bm);
      m[g] = bm;
      l[g] *= corr;
      for (var i = 0u; i < NV; i++) { acc[g * NV + i] *= corr; }
      for (var u = 0u; u < U; u++) {
        let pe = select(0.0, exp(s[u * G + g] - bm), kb + u * KG + kg < kv_end);
        l[g] += pe;
        for (var i = 0u; i < NV; i++) { acc[g * NV + i] += pe * vv[u * NV + i]; }
      }
    }
  }

  // the key groups of a subgroup merged (every lane of the subgroup ends with the same sums)
  for (var o = TPK; o < SGS; o *= 2u) {
    for (var g = 0u; g < G; g++) {
      let mo = subgroupShuffleXor(m[g], o);
      let lo = subgroupShuffleXor(l[g], o);
      let mn = max(m[g], mo);
      let fa = exp(m[g] - mn);
      let fb = exp(mo - mn);
      m[g] = mn;
      l[g] = l[g] * fa + lo * fb;
      for (var i = 0u; i < NV; i++) {
        acc[g * NV + i] = acc[g * NV + i] * fa + subgroupShuffleXor(acc[g * NV + i], o) * fb;
      }
    }
  }
  let sg = lid / SGS;
  if (lid % SGS < TPK) {
    for (var g = 0u; g < G; g++) {
      for (var i = 0u; i < NV; i++) { red_acc[(sg * G + g) * RS + j + TPK * i] = acc[g * NV + i]; }
      if (j == 0u) { red_ml[sg * G + g] = vec2<f32>(m[g], l[g]); }
    }
  }
  workgroupBarrier();
  // the subgroups merged in order
  for (var x = lid; x < G * HD4; x += WG) {
    let g = x / HD4;
    let c = x % HD4;
    var mx = MASKED;
    for (var t = 0u; t < NSG; t++) { mx = max(mx, red_ml[t * G + g].x); }
    var a = vec4<f32>(0.0);
    var ls = 0.0;
    for (var t = 0u; t < NSG; t++) {
      let f = exp(red_ml[t * G + g].x - mx);
      ls += f * red_ml[t * G + g].y;
      a += f * red_acc[(t * G + g) * RS + c];
    }
    store_decode(kvh * G + g, split, c, a, mx, ls);
  }
}
