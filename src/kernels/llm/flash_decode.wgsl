// Flash decoding for one token (split-K): workgroup (split, kvh) reads keys [first + split *
// split_len, first + (split + 1) * split_len) (first: the sliding window's first key, else 0) of
// kv head kvh once for all G query heads that share it, and writes each head's partial (acc, max m, sum l; attn_partial.wgsl's layout, combined by
// attn_combine.wgsl / attn_combine_q8.wgsl), or with one split and partial = 0 the output.
// Per block of BK keys: K and V staged in workgroup memory (K rows padded by one vec4, so that
// invocations on neighbouring keys read different banks), one score per invocation (pairs
// (head, key)), each head's block max and exp(s - running max) once per score; then invocation
// (kq, j) of KQ = WG / 32 key groups adds keys kq, kq + KQ, .. times V's vec4s j, j + 32, .. for
// all G heads at once (each V load serves G heads), rescaled to the running max, which every
// invocation tracks alike. The key groups' sums are added in group order at the end.
// Parameters as flash_attn.wgsl (n = 1; the dyn start and split length likewise).
@group(0) @binding(0) var<storage, read> q4: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> k4: KvWords;  // kv_read_*.wgsl: k_at
@group(0) @binding(2) var<storage, read> v4: KvWords;  // kv_read_*.wgsl: v_at
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
@group(0) @binding(4) var<storage, read> dynpos: array<u32>;
//!include "llm/flash_attn_params.wgsl"
//!include "llm/attn_window.wgsl"
//!include "llm/flash_attn_range.wgsl"
//!include "llm/flash_decode_store.wgsl"
@group(0) @binding(5) var<uniform> p: P;
override HD: u32 = 128;  // head_dim, a multiple of 4
override G: u32 = 4;     // query heads per kv head, at most 8
override WG: u32 = 128;  // invocations, a multiple of 32
override BK: u32 = 32;   // keys per block; G * BK <= 4 * WG
override NJ: u32 = 1;    // V vec4s per invocation and key: ceil(HD / 4 / 32), at most 2
override KS: u32 = HD / 4u + 1u;  // vec4s per staged key row
const MASKED: f32 = -3.0e38;

var<workgroup> qs: array<vec4<f32>, G * HD / 4u>;
// K rows [BK][KS] then V rows [BK][HD / 4]; at the end the key groups' sums [KQ][G][HD / 4]
var<workgroup> kvs: array<vec4<f32>, BK * (KS + HD / 4u)>;
var<workgroup> pe: array<f32, G * BK>;  // [g][s]: scores, then exp(s - block max); at the end the groups' l
var<workgroup> bmax: array<f32, G>;

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
  let HD4 = HD / 4u;
  let KQ = WG / 32u;
  let kq = lid / 32u;
  let jl = lid % 32u;
  let split = wid.x;
  let kvh = wid.y;
  let range = key_range(1u, 1u);
  let start = range.x;
  let split_len = range.y;
  let kv_begin = range.z + split * split_len;  // range.z: the window's first key (every key visible)
  let kv_end = min(kv_begin + split_len, start + 1u);
  let cb = p.cache_off / 4u + kvh * p.max_ctx * HD4;
  let vb = BK * KS;  // V's rows in kvs

  for (var i = lid; i < G * HD4; i += WG) {
    let h = kvh * G + i / HD4;
    qs[i] = q4[(p.q_off + h * HD) / 4u + i % HD4] * p.scale;
  }
  var m: array<f32, 8>;            // each head's running max (the same in every invocation)
  var l: array<f32, 8>;            // each head's sum over this invocation's keys
  var acc: array<vec4<f32>, 16>;  // acc[g * 2 + t]: head g, V vec4 jl + 32 * t
  for (var g = 0u; g < G; g++) { m[g] = MASKED; }

  for (var kb = kv_begin; kb < kv_end; kb += BK) {
    workgroupBarrier();
    for (var i = lid; i < BK * HD4; i += WG) {
      let s = i / HD4;
      let c = i % HD4;
      var kv = vec4<f32>(0.0);
      var vv = vec4<f32>(0.0);
      if (kb + s < kv_end) {
        kv = k_at(cb + kv_row(kb + s) * HD4 + c);
        vv = v_at(cb + kv_row(kb + s) * HD4 + c);
      }
      kvs[s * KS + c] = kv;
      kvs[vb + i] = vv;
    }
    workgroupBarrier();
    for (var i = lid; i < G * BK; i += WG) {
      let g = i / BK;
      let s = i % BK;
      var d = 0.0;
      for (var c = 0u; c < HD4; c++) { d += dot(qs[g * HD4 + c], kvs[s * KS + c]); }
      pe[i] = select(cap_score(d), MASKED, kb + s >= kv_end);
    }
    workgroupBarrier();
    // every block holds at least one visible key (kb < kv_end), so each head's block max is
    // finite; pe becomes exp(s - new running max)
    var e = array<f32, 4>(0.0, 0.0, 0.0, 0.0);
    for (var a = 0u; a < 4u; a++) {
      let i = lid + WG * a;
      if (i < G * BK) {
        let g = i / BK;
        var bm = MASKED;
        for (var s = 0u; s < BK; s++) { bm = max(bm, pe[g * BK + s]); }
        e[a] = select(exp(pe[i] - max(m[g], bm)), 0.0, pe[i] <= MASKED);
        if (i % BK == 0u) { bmax[g] = bm; }
      }
    }
    workgroupBarrier();
    for (var a = 0u; a < 4u; a++) {
      let i = lid + WG * a;
      if (i < G * BK) { pe[i] = e[a]; }
    }
    workgroupBarrier();
    for (var g = 0u; g < G; g++) {
      let mb = max(m[g], bmax[g]);
      let corr = exp(m[g] - mb);
      l[g] *= corr;
      for (var t = 0u; t < NJ; t++) { acc[g * 2u + t] *= corr; }
      m[g] = mb;
    }
    // this invocation's keys times V for every head at once (one V load per key serves G heads)
    for (var s = kq; s < BK; s += KQ) {
      for (var t = 0u; t < NJ; t++) {
        let j = jl + 32u * t;
        var v = vec4<f32>(0.0);
        if (j < HD4) { v = kvs[vb + s * HD4 + j]; }
        for (var g = 0u; g < G; g++) { acc[g * 2u + t] += pe[g * BK + s] * v; }
      }
      for (var g = 0u; g < G; g++) { l[g] += pe[g * BK + s]; }
    }
  }
  // the key groups' sums, added in group order
  workgroupBarrier();
  for (var g = 0u; g < G; g++) {
    for (var t = 0u; t < NJ; t++) {
      let j = jl + 32u * t;
      if (j < HD4) { kvs[(kq * G + g) * HD4 + j] = acc[g * 2u + t]; }
    }
    if (jl == 0u) { pe[kq * G + g] = l[g]; }
  }
  workgroupBarrier();
  for (var i = lid; i < G * HD4; i += WG) {
    let g = i / HD4;
    let j = i % HD4;
    var a = vec4<f32>(0.0);
    var ls = 0.0;
    for (var x = 0u; x < KQ; x++) {
      a += kvs[(x * G + g) * HD4 + j];
      ls += pe[x * G + g];
    }
    store_decode(kvh * G + g, split, j, a, m[g], ls);
  }
}
