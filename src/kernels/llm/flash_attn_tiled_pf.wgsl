// flash_attn_tiled.wgsl's 4 x 4 schedule (64 rows x 64 keys, 256 invocations, head_dim in chunks
// of 8 vec4s, swizzled) with every staged chunk prefetched into registers: each Q/K chunk and V
// chunk is loaded from global memory while the previous one is computed (the next block's first
// chunk during the last V chunk), so the loads' latency no longer waits behind each barrier.
// Each invocation stages one Q/K unit (4 rows or 4 keys, one head_dim vec4 of each chunk: its
// rows' addresses computed once) or up to 4 vec4s of a V chunk: 4 vec4s of registers either way.
// Which invocation owns which rows and keys, where P lies and how a block's row max is found:
// flash_attn_pf_rows_wm.wgsl (through workgroup memory) or flash_attn_pf_rows_sg.wgsl (subgroup
// shuffles), included after this file.
// EXP2 1: the scores stay unscaled (raw Q K^T, the max in those units) and each exponential is
// exp2(s * c - m * c) with c = scale * log2(e), one FMA before ex2; 0: Q scaled as it is staged
// and exp. Everything else (layout, masking, the row's arithmetic independent of the rows it
// shares a workgroup with, partials for split keys with m in natural units) as
// flash_attn_tiled.wgsl.
@group(0) @binding(0) var<storage, read> q4: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> k4: KvWords;  // kv_read_*.wgsl: k_at
@group(0) @binding(2) var<storage, read> v4: KvWords;  // kv_read_*.wgsl: v_at
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
//!include "llm/flash_attn_params.wgsl"
//!include "llm/attn_window.wgsl"
@group(0) @binding(4) var<uniform> p: P;
override HD: u32 = 128;  // head_dim, a multiple of 4, at most 256
override NO: u32 = 2;    // output vec4s per row and invocation: ceil(HD / 64), at most 4
override VK: u32 = 32;   // keys per V chunk: a power of two dividing BK, VK * HD / 4 <= 1024
override EXP2: u32 = 1;
override PF: u32 = 1;    // 0: each chunk loaded just before it is staged (no prefetch: for comparison)
const WG = 256u;
const DC4 = 8u;          // vec4s of head_dim per staged Q/K chunk
const SWZ = 7u;          // flash_attn_tiled.wgsl's swizzle
const BQ = 64u;
const BK = 64u;
const PS = 1024u;        // P from here: wm[p_at(key, row / 4)][row % 4]
const MASKED: f32 = -3.0e38;
const LOG2E: f32 = 1.4426950408889634;

var<workgroup> wm: array<vec4<f32>, 2048>;

// this invocation's staging unit: quad sg of Q (sk false) or K, head_dim vec4 sc of each chunk
var<private> sg: u32;
var<private> sc: u32;
var<private> sk: bool;
var<private> qb: array<u32, 4>;  // its Q rows' first vec4 (+ sc)
var<private> cb: u32;
var<private> k_hi: u32;
var<private> lidp: u32;

fn qk_at(d: u32, g: u32) -> u32 { return d * 16u + (g ^ ((d / 4u) & SWZ)); }

fn fetch_qk(c0: u32, kb: u32) -> array<vec4<f32>, 4> {
  let HD4 = HD / 4u;
  var x = array<vec4<f32>, 4>(vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0));
  if (c0 + sc < HD4) {
    for (var i = 0u; i < 4u; i++) {
      if (sk) {
        let key = kb + sg * 4u + i;
        if (key < k_hi) { x[i] = k_at(cb + kv_row(key) * HD4 + c0 + sc); }
      } else {
        x[i] = q4[qb[i] + c0];
        if (EXP2 == 0u) { x[i] *= p.scale; }
      }
    }
  }
  return x;
}

fn store_qk(x: array<vec4<f32>, 4>) {
  let base = select(0u, DC4 * 64u, sk);
  for (var j = 0u; j < 4u; j++) {
    wm[base + qk_at(4u * sc + j, sg)] = vec4<f32>(x[0][j], x[1][j], x[2][j], x[3][j]);
  }
}

fn fetch_v(k0: u32, kb: u32) -> array<vec4<f32>, 4> {
  let HD4 = HD / 4u;
  var x = array<vec4<f32>, 4>(vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0));
  for (var j = 0u; j < 4u; j++) {
    let e = lidp + j * WG;
    let key = kb + k0 + e / HD4;
    if (e < VK * HD4 && key < k_hi) { x[j] = v_at(cb + kv_row(key) * HD4 + e % HD4); }
  }
  return x;
}

fn store_v(x: array<vec4<f32>, 4>) {
  for (var j = 0u; j < 4u; j++) {
    let e = lidp + j * WG;
    if (e < VK * (HD / 4u)) { wm[e] = x[j]; }
  }
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
  let HD4 = HD / 4u;
  let NQK = (HD4 + DC4 - 1u) / DC4;
  let G = p.n_heads / p.n_kv;
  let kvh = wid.y;
  let nrows = p.n * G;
  let r0 = wid.x * BQ;
  let ty = lane_ty(lid);  // row quad
  let tx = lane_tx(lid);  // key quad of each block, output vec4s tx + 16 * a
  lidp = lid;
  cb = p.cache_off / 4u + kvh * p.max_ctx * HD4;
  let t_last = (min(r0 + BQ, nrows) - 1u) / G;
  let kv_end = p.start + t_last + 1u;
  let k_lo = wid.z * p.split_len;
  let kend = min(kv_end, k_lo + p.split_len);  // a let: the loop's bound stays uniform
  // sliding window: the blocks before the first row's first key hold no key any row sees; skipped
  // in whole blocks from k_lo (each row's blocks and sums stay those of walking them)
  let lo_wg = window_lo(p.start + r0 / G);
  let kb0 = k_lo + (max(lo_wg, k_lo) - k_lo) / BK * BK;
  k_hi = kend;
  sg = (lid % (16u * DC4)) / DC4;
  sc = lid % DC4;
  sk = lid >= 16u * DC4;
  for (var i = 0u; i < 4u; i++) {
    let R = min(r0 + sg * 4u + i, nrows - 1u);
    qb[i] = ((R / G) * p.q_stride + p.q_off + (kvh * G + R % G) * HD) / 4u + sc;
  }
  // c: the factor from raw scores to exp2's argument (EXP2), else scores are already scaled
  let c = select(1.0, p.scale * LOG2E, EXP2 != 0u);

  var qpos: vec4<u32>;
  var qlo: vec4<u32>;  // each row's first visible key
  for (var i = 0u; i < 4u; i++) {
    qpos[i] = p.start + min(r0 + ty * 4u + i, nrows - 1u) / G;
    qlo[i] = window_lo(qpos[i]);
  }
  var m = vec4<f32>(MASKED);
  var lq = vec4<f32>(0.0);
  var acc: array<vec4<f32>, 16>;  // acc[i * NO + a]: row ty * 4 + i, output vec4 tx + 16 * a
  for (var j = 0u; j < 16u; j++) { acc[j] = vec4<f32>(0.0); }

  var pf = fetch_qk(0u, kb0);
  for (var kb = kb0; kb < kend; kb += BK) {
    // ---- S = Q K^T: s[c][i] key tx * 4 + c, row ty * 4 + i
    var s: array<vec4<f32>, 4>;
    for (var j = 0u; j < 4u; j++) { s[j] = vec4<f32>(0.0); }
    for (var st = 0u; st < NQK; st++) {
      if (PF == 0u) { pf = fetch_qk(st * DC4, kb); }
      workgroupBarrier();
      store_qk(pf);
      workgroupBarrier();
      if (PF == 0u) {
      } else if (st + 1u < NQK) {
        pf = fetch_qk((st + 1u) * DC4, kb);
      } else {
        pf = fetch_v(0u, kb);
      }
      for (var d = 0u; d < 4u * DC4; d++) {
        let b = wm[DC4 * 64u + qk_at(d, tx)];
        let a = wm[qk_at(d, ty)];
        s[0] += a * b.x;
        s[1] += a * b.y;
        s[2] += a * b.z;
        s[3] += a * b.w;
      }
    }
    // ---- online softmax over the block: the rows' max over their 16 invocations
    var bm = vec4<f32>(MASKED);
    for (var j = 0u; j < 4u; j++) {
      let key = kb + tx * 4u + j;
      if (p.softcap != 0.0) {  // capped in scaled units (EXP2: back to raw ones after)
        for (var i = 0u; i < 4u; i++) {
          if (EXP2 != 0u) {
            s[j][i] = cap_score(s[j][i] * p.scale) / p.scale;
          } else {
            s[j][i] = cap_score(s[j][i]);
          }
        }
      }
      let hidden = vec4<bool>(key >= k_hi) | (vec4<u32>(key) > qpos) | (vec4<u32>(key) < qlo);
      s[j] = select(s[j], vec4<f32>(MASKED), hidden);
      bm = max(bm, s[j]);
    }
    let mb = max(m, row_max(bm, tx, ty));
    var corr: vec4<f32>;
    if (EXP2 != 0u) {
      corr = exp2((m - mb) * c);
    } else {
      corr = exp(m - mb);
    }
    lq *= corr;
    let mc = mb * c;
    for (var j = 0u; j < 4u; j++) {
      var e: vec4<f32>;
      if (EXP2 != 0u) {
        e = exp2(fma(s[j], vec4<f32>(c), -mc));
      } else {
        e = exp(s[j] - mb);
      }
      let pe = select(e, vec4<f32>(0.0), s[j] <= vec4<f32>(MASKED));
      wm[p_at(tx * 4u + j, ty)] = pe;
      lq += pe;
    }
    m = mb;
    for (var i = 0u; i < 4u; i++) {
      for (var a = 0u; a < NO; a++) { acc[i * NO + a] *= corr[i]; }
    }
    // ---- O += P V, V in chunks of VK keys
    for (var k0 = 0u; k0 < BK; k0 += VK) {
      if (PF == 0u) { pf = fetch_v(k0, kb); }
      workgroupBarrier();
      store_v(pf);
      workgroupBarrier();
      if (PF == 0u) {
      } else if (k0 + VK < BK) {
        pf = fetch_v(k0 + VK, kb);
      } else {
        pf = fetch_qk(0u, kb + BK);
      }
      for (var k = 0u; k < VK; k++) {
        let pr = wm[p_at(k0 + k, ty)];
        for (var a = 0u; a < NO; a++) {
          let col = tx + 16u * a;
          if (col < HD4) {
            let v = wm[k * HD4 + col];
            acc[a] += pr.x * v;
            acc[NO + a] += pr.y * v;
            acc[2u * NO + a] += pr.z * v;
            acc[3u * NO + a] += pr.w * v;
          }
        }
      }
    }
  }
  // ---- each row's sum from its 16 invocations (in key order), then the output or the partial
  workgroupBarrier();
  wm[tx * 16u + ty] = lq;
  workgroupBarrier();
  var l = vec4<f32>(0.0);
  for (var x = 0u; x < 16u; x++) { l += wm[x * 16u + ty]; }
  for (var i = 0u; i < 4u; i++) {
    let R = r0 + ty * 4u + i;
    if (R < nrows) {
      let t = R / G;
      let h = kvh * G + R % G;
      var ob = t * p.o_stride + p.o_off + h * HD;
      if (p.partial != 0u) {
        ob = ((t * p.n_heads + h) * p.n_splits + wid.z) * (HD + 2u);
        if (tx == 0u) {
          // the max in the units of the scaled scores (attn_combine.wgsl's exp)
          out[ob + HD] = select(m[i], m[i] * p.scale, EXP2 != 0u && m[i] > MASKED);
          out[ob + HD + 1u] = l[i];
        }
      }
      for (var a = 0u; a < NO; a++) {
        let col = tx + 16u * a;
        if (col < HD4) {
          var v = acc[i * NO + a];
          if (p.partial == 0u) { v = v / l[i]; }
          out[ob + 4u * col] = v.x;
          out[ob + 4u * col + 1u] = v.y;
          out[ob + 4u * col + 2u] = v.z;
          out[ob + 4u * col + 3u] = v.w;
        }
      }
    }
  }
}
