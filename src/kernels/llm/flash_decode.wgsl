// Flash decoding for one token (split-K): workgroup (split, kvh) reads keys [split * split_len,
// (split + 1) * split_len) of kv head kvh once for all G query heads that share it, and writes
// each head's partial (acc, max m, sum l; attn_partial.wgsl's layout, combined by
// attn_combine.wgsl / attn_combine_q8.wgsl), or with one split and partial = 0 the output.
// Per block of BK keys: K and V staged in workgroup memory (K rows padded by one vec4, so that
// invocations on neighbouring keys read different banks), one score per invocation, each row's
// block max and exp(s - block max) once per score, then invocation (g, j) adds vec4 j of head g
// (several (g, j) per invocation when G * HD / 4 > WG), rescaled to the running max.
// Parameters as flash_attn.wgsl (n = 1; the dyn start and split length likewise).
@group(0) @binding(0) var<storage, read> q4: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> k4: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> v4: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
@group(0) @binding(4) var<storage, read> dynpos: array<u32>;
struct P {
  n: u32,
  n_heads: u32,
  n_kv: u32,
  max_ctx: u32,
  start: u32,
  q_stride: u32,
  q_off: u32,
  o_stride: u32,
  o_off: u32,
  cache_off: u32,
  scale: f32,
  split_len: u32,
  n_splits: u32,
  partial: u32,
  dyn: u32,
}
@group(0) @binding(5) var<uniform> p: P;
override HD: u32 = 128;  // head_dim, a multiple of 4
override G: u32 = 4;     // query heads per kv head
override WG: u32 = 128;  // invocations
override BK: u32 = 32;   // keys per block
override NA: u32 = 1;    // (g, j) pairs per invocation: ceil(G * HD / 4 / WG), at most 4
override KS: u32 = HD / 4u + 1u;  // vec4s per staged key row
const MASKED: f32 = -3.0e38;

var<workgroup> qs: array<vec4<f32>, G * HD / 4u>;
var<workgroup> ks: array<vec4<f32>, BK * KS>;
var<workgroup> vs: array<vec4<f32>, BK * HD / 4u>;
var<workgroup> pe: array<f32, G * BK>;  // scores, then exp(s - block max)
var<workgroup> bmax: array<f32, G>;

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
  let HD4 = HD / 4u;
  let split = wid.x;
  let kvh = wid.y;
  var start = p.start;
  var split_len = p.split_len;
  if (p.dyn != 0u) {
    start = dynpos[0];
    split_len = (start + 1u + p.n_splits * BK - 1u) / (p.n_splits * BK) * BK;
  }
  let kv_begin = split * split_len;
  let kv_end = min(kv_begin + split_len, start + 1u);
  let cb = p.cache_off / 4u + kvh * p.max_ctx * HD4;

  for (var i = lid; i < G * HD4; i += WG) {
    let h = kvh * G + i / HD4;
    qs[i] = q4[(p.q_off + h * HD) / 4u + i % HD4] * p.scale;
  }
  var m: array<f32, 4>;
  var l: array<f32, 4>;
  var acc: array<vec4<f32>, 4>;
  for (var a = 0u; a < NA; a++) { m[a] = MASKED; }

  for (var kb = kv_begin; kb < kv_end; kb += BK) {
    workgroupBarrier();
    for (var i = lid; i < BK * HD4; i += WG) {
      let s = i / HD4;
      let c = i % HD4;
      var kv = vec4<f32>(0.0);
      var vv = vec4<f32>(0.0);
      if (kb + s < kv_end) {
        kv = k4[cb + (kb + s) * HD4 + c];
        vv = v4[cb + (kb + s) * HD4 + c];
      }
      ks[s * KS + c] = kv;
      vs[i] = vv;
    }
    workgroupBarrier();
    for (var i = lid; i < G * BK; i += WG) {
      let g = i / BK;
      let s = i % BK;
      var d = 0.0;
      for (var c = 0u; c < HD4; c++) { d += dot(qs[g * HD4 + c], ks[s * KS + c]); }
      pe[i] = select(d, MASKED, kb + s >= kv_end);
    }
    workgroupBarrier();
    // every block holds at least one visible key (kb < kv_end), so each row's block max is finite
    var e: array<f32, 4>;
    for (var a = 0u; a < NA; a++) {
      let i = lid + WG * a;
      if (i < G * BK) {
        let g = i / BK;
        var bm = MASKED;
        for (var s = 0u; s < BK; s++) { bm = max(bm, pe[g * BK + s]); }
        e[a] = select(exp(pe[i] - bm), 0.0, pe[i] <= MASKED);
        if (i % BK == 0u) { bmax[g] = bm; }
      }
    }
    workgroupBarrier();
    for (var a = 0u; a < NA; a++) {
      let i = lid + WG * a;
      if (i < G * BK) { pe[i] = e[a]; }
    }
    workgroupBarrier();
    for (var a = 0u; a < NA; a++) {
      let i = lid + WG * a;
      if (i < G * HD4) {
        let g = i / HD4;
        let j = i % HD4;
        var sp = 0.0;
        var sv = vec4<f32>(0.0);
        for (var s = 0u; s < BK; s++) {
          let w = pe[g * BK + s];
          sp += w;
          sv += w * vs[s * HD4 + j];
        }
        let bm = bmax[g];
        let mb = max(m[a], bm);
        let corr = exp(m[a] - mb);
        let f = exp(bm - mb);
        l[a] = l[a] * corr + f * sp;
        acc[a] = acc[a] * corr + f * sv;
        m[a] = mb;
      }
    }
  }
  for (var a = 0u; a < NA; a++) {
    let i = lid + WG * a;
    if (i < G * HD4) {
      let h = kvh * G + i / HD4;
      let j = i % HD4;
      if (p.partial == 0u) {
        let v = acc[a] / l[a];
        let ob = p.o_off + h * HD + 4u * j;
        out[ob] = v.x;
        out[ob + 1u] = v.y;
        out[ob + 2u] = v.z;
        out[ob + 3u] = v.w;
      } else {
        let ob = (h * p.n_splits + split) * (HD + 2u);
        out[ob + 4u * j] = acc[a].x;
        out[ob + 4u * j + 1u] = acc[a].y;
        out[ob + 4u * j + 2u] = acc[a].z;
        out[ob + 4u * j + 3u] = acc[a].w;
        if (j == 0u) {
          out[ob + HD] = m[a];
          out[ob + HD + 1u] = l[a];
        }
      }
    }
  }
}
