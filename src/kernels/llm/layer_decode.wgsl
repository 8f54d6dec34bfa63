// One decoder layer of one token in one dispatch (LlmOps::decode_layer): the five steps that
// take five dependent dispatches elsewhere, as work items of one grid:
//   A  RMSNorm + QKV + RoPE + KV append (rms_norm_qkv_rope), 8 RoPE pairs per item;
//   B  flash-decoding partials (attention_decode_partials), one (kv head, split) per item;
//   C  combine + o projection + residual (combine_linear), 16 rows per item;
//   D  RMSNorm + gate|up + SwiGLU (rms_norm_swiglu), 8 gate/up row pairs per item;
//   E  down projection + residual, 16 rows per item.
// Why: a dependent dispatch costs ~3.8 us on the H200 (`wgc bench --ops gpu.dispatch`); here the
// steps hand over inside the dispatch, and an item's first weights are in flight while it waits.
//
// Scheduling: workgroups take items by ticket (an atomic counter) in the order above, so every
// item an item waits for was taken earlier by a workgroup that is running: no deadlock however
// many workgroups are resident, on GPUs that keep running workgroups running (the forward-progress
// assumption of single-pass scans). Hand-over: every value an item produces goes through
// atomicStore into a scratch word that was reset to SENTINEL (a signalling NaN: arithmetic never
// yields it; a computed one is stored as the quiet NaN); consumers atomicLoad each word until it
// is not SENTINEL. Word by word, so nothing is assumed about the order in which other words
// become visible (WGSL's atomics are relaxed). A wait longer than p.spin_max loads sets the error
// word and goes on with zero: the host reports it, so a GPU without that progress fails loudly
// instead of hanging.
//
// Scratch (words; layout from the host, LayerScratch): per region xin (the layer's input), cnt
// (the ticket counter; cnt + 1 + step: that step's finished items), then the guarded words q, k, v, part, x2, act. A dispatch resets the next
// region's counter and guarded words and writes the layer's output into its xin (p.out).
// Weights: F16 or BF16 (the prelude's half4), rows of round_up(cols, 8) halves (weights/half.wgsl).
// Preceded by a prelude (half4), common.wgsl, rope_pair.wgsl and a reduce file.
@group(0) @binding(0) var<storage, read> w_qkv: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read> w_o: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read> w_gu: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read> w_down: array<vec4<u32>>;
@group(0) @binding(4) var<storage, read> norms: array<f32>;  // ln1 at p.ln1, ln2 at p.ln2
@group(0) @binding(5) var<storage, read> rope_table: array<vec2<f32>>;
@group(0) @binding(6) var<storage, read_write> k_cache: array<vec4<f32>>;
@group(0) @binding(7) var<storage, read_write> v_cache: array<vec4<f32>>;
@group(0) @binding(8) var<storage, read_write> s: array<atomic<u32>>;
@group(0) @binding(9) var<storage, read> positions: array<u32>;  // the position, its cache row
struct P {
  hidden: u32, ffn: u32, nh: u32, nkv: u32,
  n_splits: u32, split_len: u32, max_ctx: u32, max_pos: u32,
  cache_off: u32, ln1: u32, ln2: u32, rflags: u32,  // rflags 2: interleaved RoPE pairs
  xin: u32, cnt: u32, q: u32, k: u32,
  v: u32, part: u32, x2: u32, act: u32,
  out: u32, next_cnt: u32, reset0: u32, reset1: u32,
  end_a: u32, end_b: u32, end_c: u32, end_d: u32,
  n_items: u32, err: u32, spin_max: u32, eps: f32,
  scale: f32,
}
@group(0) @binding(10) var<uniform> p: P;

const WG: u32 = 256u;
const TPR: u32 = 32u;         // invocations per row group (two rows each)
const GROUPS: u32 = WG / TPR;  // row groups per workgroup
override PF: u32 = 4;        // chunks per row loaded before an item's x is ready (1 to 4)
override HD: u32 = 64;        // head_dim, a multiple of 8, at most 128
override G: u32 = 4;          // query heads per kv head, at most 8
override BK: u32 = 32;        // keys per attention block, G * BK <= WG
override XT: u32 = 4096;      // floats of x staged at once (a multiple of 8)
override NH: u32 = 32;        // query heads
override NS: u32 = 4;         // splits
override POLL: bool = false;  // wait_step polls (layer_poll)
override LB: u32 = 4;         // hand-over loads in flight per invocation (vec4s, 1 to 4)
override HD4: u32 = HD / 4u;
override XH: u32 = XT / 8u;   // chunks per staged tile
override SM: u32 = max(XT / 4u, BK * (2u * HD4 + 1u));
const SENTINEL: u32 = 0x7FA5A5A5u;
const MASKED: f32 = -3.0e38;

// x tiles (vec4 j at xs[(j % 2) * XH + j / 2]: the lanes of a group read consecutive entries), or
// an attention block's K rows (padded by one vec4) then V rows.
var<workgroup> xs: array<vec4<f32>, SM>;
var<workgroup> red: array<f32, WG>;
var<workgroup> xc_f: array<f32, NH * NS>;  // combine: each split's weight exp(m_s - max)
var<workgroup> xc_l: array<f32, NH * NS>;  // combine: each split's l
var<workgroup> xc_s: array<f32, NH>;       // combine: each head's weighted sum of l
var<workgroup> qs: array<vec4<f32>, G * HD4>;
var<workgroup> sc: array<f32, G * BK>;     // scores, then their exp
var<workgroup> hm: array<f32, 8>;          // per head: running max, sum, this block's rescale
var<workgroup> hl: array<f32, 8>;
var<workgroup> hc: array<f32, 8>;
var<workgroup> ticket: u32;
var<private> lid0: bool;  // the invocation that takes tickets and polls

// Scratch word i once it is written (see the header).
fn ld(i: u32) -> f32 {
  var n = 0u;
  loop {
    let v = atomicLoad(&s[i]);
    if (v != SENTINEL) { return bitcast<f32>(v); }
    n++;
    if (n >= p.spin_max) {
      atomicStore(&s[p.err], 1u);
      return 0.0;
    }
  }
}
// Steps hand over as wholes too: an item adds one to its step's counter (cnt + 1 + step) once its
// stores are issued, and (POLL) an item of the next step has one invocation poll that counter
// before any of its invocations load the step's words, so a waiting workgroup sends one load per
// round to memory, not one per invocation per word. Words are still checked one by one (a counter
// says nothing about when the words it follows become visible).
fn finish(step: u32) {
  storageBarrier();
  if (lid0) { atomicAdd(&s[p.cnt + 1u + step], 1u); }
}
fn wait_step(step: u32, n: u32) {
  if (!POLL) { return; }
  if (lid0) {
    for (var k = 0u; atomicLoad(&s[p.cnt + 1u + step]) < n; k++) {
      if (k >= p.spin_max) {
        atomicStore(&s[p.err], 1u);
        break;
      }
    }
  }
  workgroupBarrier();
}
// Loads in flight together: a wait is a loop, and a loop's loads cannot start before the loop
// before it ends, so each ld is one memory round trip. Hence words are loaded raw, several at once,
// and only a word still missing goes through ld (got4).
fn ld2x(i: u32, j: u32) -> vec2<f32> {
  let v = vec2<u32>(atomicLoad(&s[i]), atomicLoad(&s[j]));
  if (all(v != vec2<u32>(SENTINEL))) { return bitcast<vec2<f32>>(v); }
  return vec2<f32>(ld(i), ld(j));
}
fn ld2(i: u32) -> vec2<f32> { return ld2x(i, i + 1u); }
fn raw4(i: u32) -> vec4<u32> {
  return vec4<u32>(atomicLoad(&s[i]), atomicLoad(&s[i + 1u]), atomicLoad(&s[i + 2u]), atomicLoad(&s[i + 3u]));
}
fn got4(v: vec4<u32>, i: u32) -> vec4<f32> {
  if (all(v != vec4<u32>(SENTINEL))) { return bitcast<vec4<f32>>(v); }
  return vec4<f32>(ld(i), ld(i + 1u), ld(i + 2u), ld(i + 3u));
}
fn ld4(i: u32) -> vec4<f32> { return got4(raw4(i), i); }
// Floats src + 4 j .. of a vector of n floats for j = j0 + k WG, k < LB (zero past n): LB
// round trips' worth of loads in one.
fn ld4x4(src: u32, j0: u32, n: u32) -> array<vec4<f32>, 4> {
  var raw: array<vec4<u32>, 4>;
  for (var k = 0u; k < LB; k++) {
    if (4u * (j0 + k * WG) < n) { raw[k] = raw4(src + 4u * (j0 + k * WG)); }
  }
  var v: array<vec4<f32>, 4>;
  for (var k = 0u; k < LB; k++) {
    if (4u * (j0 + k * WG) < n) { v[k] = got4(raw[k], src + 4u * (j0 + k * WG)); }
  }
  return v;
}
fn st(i: u32, v: f32) { atomicStore(&s[i], select(bitcast<u32>(v), 0x7FC00000u, bitcast<u32>(v) == SENTINEL)); }

fn wl(which: u32, i: u32) -> vec4<u32> {
  switch which {
    case 0u: { return w_qkv[i]; }
    case 1u: { return w_o[i]; }
    case 2u: { return w_gu[i]; }
    default: { return w_down[i]; }
  }
}
fn xs_set(j: u32, v: vec4<f32>) { xs[(j % 2u) * XH + j / 2u] = v; }
// Chunk c (8 halves of a row) times x chunk cl of the staged tile.
fn cdot(w: vec4<u32>, cl: u32) -> f32 { return dot(half4(w.x, w.y), xs[cl]) + dot(half4(w.z, w.w), xs[XH + cl]); }

// Rows ra and rb's first PF chunks of each lane (zero past nch): in flight while x is staged.
fn prefetch(which: u32, ra: u32, rb: u32, rs: u32, nch: u32, lane: u32) -> array<vec4<u32>, 8> {
  var pre: array<vec4<u32>, 8>;
  for (var k = 0u; k < PF; k++) {
    let c = lane + k * TPR;
    if (c < nch) {
      pre[k] = wl(which, ra * rs + c);
      pre[PF + k] = wl(which, rb * rs + c);
    }
  }
  return pre;
}

// This lane's sums of rows ra and rb over chunks c0 .. c1 - 1, x chunk c - c0 staged; `pre`
// holds the first PF chunks when use_pre (the tile that starts at chunk 0).
fn mv_tile(which: u32, ra: u32, rb: u32, rs: u32, c0: u32, c1: u32, lane: u32, pre: ptr<function, array<vec4<u32>, 8>>,
           use_pre: bool) -> vec2<f32> {
  var a = vec2<f32>(0.0);
  var c = c0 + lane;
  if (use_pre) {
    for (var k = 0u; k < PF; k++) {
      let cc = c + k * TPR;
      if (cc < c1) {
        a.x += cdot((*pre)[k], cc - c0);
        a.y += cdot((*pre)[PF + k], cc - c0);
      }
    }
    c += PF * TPR;
  }
  let ba = ra * rs;
  let bb = rb * rs;
  for (; c + 3u * TPR < c1; c += 4u * TPR) {
    let a0 = wl(which, ba + c);
    let a1 = wl(which, ba + c + TPR);
    let a2 = wl(which, ba + c + 2u * TPR);
    let a3 = wl(which, ba + c + 3u * TPR);
    let b0 = wl(which, bb + c);
    let b1 = wl(which, bb + c + TPR);
    let b2 = wl(which, bb + c + 2u * TPR);
    let b3 = wl(which, bb + c + 3u * TPR);
    let l = c - c0;
    a.x += cdot(a0, l) + cdot(a1, l + TPR) + cdot(a2, l + 2u * TPR) + cdot(a3, l + 3u * TPR);
    a.y += cdot(b0, l) + cdot(b1, l + TPR) + cdot(b2, l + 2u * TPR) + cdot(b3, l + 3u * TPR);
  }
  for (; c < c1; c += TPR) {
    a.x += cdot(wl(which, ba + c), c - c0);
    a.y += cdot(wl(which, bb + c), c - c0);
  }
  return a;
}

// Stages x[src ..] * norms[w ..] (cols floats, zero up to the rows' padding) and returns
// 1 / rms(x): the rows' sums are scaled by it at the end (as matvec_x_norm.wgsl's X_LATE).
fn stage_norm(src: u32, w: u32, cols: u32, lid: u32) -> f32 {
  workgroupBarrier();
  var ss = 0.0;
  let nj = 2u * ((cols + 7u) / 8u);
  for (var j0 = lid; j0 < nj; j0 += LB * WG) {
    let x4 = ld4x4(src, j0, cols);
    for (var k = 0u; k < LB; k++) {
      let j = j0 + k * WG;
      if (j >= nj) { break; }
      var v = vec4<f32>(0.0);
      if (4u * j < cols) {
        let x = x4[k];
        ss += dot(x, x);
        v = x * vec4<f32>(norms[w + 4u * j], norms[w + 4u * j + 1u], norms[w + 4u * j + 2u], norms[w + 4u * j + 3u]);
      }
      xs_set(j, v);
    }
  }
  let inv = inverseSqrt(group_sum(ss, lid, WG) / f32(cols) + p.eps);
  workgroupBarrier();
  return inv;
}

// Stages the attention output merged from the partials (matvec_x_combine.wgsl's sums).
fn stage_combine(lid: u32) {
  let w = HD + 2u;
  let cols = p.nh * HD;
  workgroupBarrier();
  // every split's (m, l), all lanes at once
  for (var i = lid; i < p.nh * p.n_splits; i += WG) {
    let ml = ld2(p.part + i * w + HD);
    xc_f[i] = ml.x;
    xc_l[i] = ml.y;
  }
  workgroupBarrier();
  for (var h = lid; h < p.nh; h += WG) {
    var mx = MASKED;
    for (var sp = 0u; sp < p.n_splits; sp++) { mx = max(mx, xc_f[h * p.n_splits + sp]); }
    var l = 0.0;
    for (var sp = 0u; sp < p.n_splits; sp++) {
      let f = exp(xc_f[h * p.n_splits + sp] - mx);
      l += f * xc_l[h * p.n_splits + sp];
      xc_f[h * p.n_splits + sp] = f;
    }
    xc_s[h] = l;
  }
  workgroupBarrier();
  for (var j = lid; j < 2u * ((cols + 7u) / 8u); j += WG) {
    var a = vec4<f32>(0.0);
    if (4u * j < cols) {
      let h = (4u * j) / HD;
      let b = p.part + h * p.n_splits * w + (4u * j) % HD;
      for (var s0 = 0u; s0 < p.n_splits; s0 += LB) {
        var raw: array<vec4<u32>, 4>;
        for (var k = 0u; k < LB; k++) {
          if (s0 + k < p.n_splits && xc_f[h * p.n_splits + s0 + k] != 0.0) { raw[k] = raw4(b + (s0 + k) * w); }
        }
        for (var k = 0u; k < LB; k++) {
          let f = select(0.0, xc_f[h * p.n_splits + s0 + k], s0 + k < p.n_splits);
          if (f != 0.0) { a += f * got4(raw[k], b + (s0 + k) * w); }
        }
      }
      a /= xc_s[h];
    }
    xs_set(j, a);
  }
  workgroupBarrier();
}

// A: RoPE pair pi's rows of the fused QKV weight (q heads, k heads, v heads), as rope_store.wgsl
// does, with q, k and v also handed over in scratch.
fn qkv_out(ra: u32, rb: u32, a: f32, b: f32) {
  let head = ra / HD;
  let crow = positions[1];
  if (head >= p.nh + p.nkv) {
    let vh = head - p.nh - p.nkv;
    let dst = p.cache_off + (vh * p.max_ctx + crow) * HD;
    v_cache[(dst + ra % HD) / 4u][(ra % HD) % 4u] = a;
    v_cache[(dst + rb % HD) / 4u][(rb % HD) % 4u] = b;
    st(p.v + vh * HD + ra % HD, a);
    st(p.v + vh * HD + rb % HD, b);
    return;
  }
  let pos = min(positions[0], p.max_pos - 1u);
  let i = select(ra % HD, (ra % HD) / 2u, (p.rflags & 2u) != 0u);
  let r = rope_rotate(a, b, rope_table[pos * (HD / 2u) + i]);
  if (head < p.nh) {
    st(p.q + ra, r.x);
    st(p.q + rb, r.y);
  } else {
    let kh = head - p.nh;
    let dst = p.cache_off + (kh * p.max_ctx + crow) * HD;
    k_cache[(dst + ra % HD) / 4u][(ra % HD) % 4u] = r.x;
    k_cache[(dst + rb % HD) / 4u][(rb % HD) % 4u] = r.y;
    st(p.k + kh * HD + ra % HD, r.x);
    st(p.k + kh * HD + rb % HD, r.y);
  }
}

fn item_qkv(it: u32, lid: u32) {
  let npairs = (p.nh + 2u * p.nkv) * (HD / 2u);
  let pi = it * GROUPS + lid / TPR;
  let pc = min(pi, npairs - 1u);
  let ra = rope_pair_row(pc, 0u, HD, (p.rflags & 2u) != 0u);
  let rb = rope_pair_row(pc, 1u, HD, (p.rflags & 2u) != 0u);
  let rs = (p.hidden + 7u) / 8u;
  var pre = prefetch(0u, ra, rb, rs, rs, lid % TPR);
  let inv = stage_norm(p.xin, p.ln1, p.hidden, lid);
  let a = mv_tile(0u, ra, rb, rs, 0u, rs, lid % TPR, &pre, true);
  let sa = group_sum(a.x, lid, TPR) * inv;
  let sb = group_sum(a.y, lid, TPR) * inv;
  if (lid % TPR == 0u && pi < npairs) { qkv_out(ra, rb, sa, sb); }
  finish(0u);
}

// B: keys split * split_len .. of kv head kvh for its G query heads: the partial (unnormalised
// acc, max m, sum l; attn_partial.wgsl's layout) in scratch. The current position's key and
// value come from scratch (stored by A in this dispatch), the others from the cache.
fn item_attn(it: u32, lid: u32) {
  let kvh = it / p.n_splits;
  let split = it % p.n_splits;
  let start = positions[0];
  let kb0 = split * p.split_len;
  let ke = min(kb0 + p.split_len, start + 1u);
  let cb = p.cache_off / 4u + kvh * p.max_ctx * HD4;
  let vb = BK * (HD4 + 1u);
  wait_step(0u, p.end_a);
  for (var i = lid; i < G * HD4; i += WG) { qs[i] = ld4(p.q + (kvh * G + i / HD4) * HD + 4u * (i % HD4)) * p.scale; }
  if (lid < G) {
    hm[lid] = MASKED;
    hl[lid] = 0.0;
  }
  var acc = vec4<f32>(0.0);  // invocation (g, c) = (lid / HD4, lid % HD4): head g's vec4 c
  workgroupBarrier();
  for (var kb = kb0; kb < ke; kb += BK) {
    workgroupBarrier();
    for (var i = lid; i < BK * HD4; i += WG) {
      let j = kb + i / HD4;
      let c = i % HD4;
      var kv = vec4<f32>(0.0);
      var vv = vec4<f32>(0.0);
      if (j == start) {
        kv = ld4(p.k + kvh * HD + 4u * c);
        vv = ld4(p.v + kvh * HD + 4u * c);
      } else if (j < ke) {
        kv = k_cache[cb + j * HD4 + c];
        vv = v_cache[cb + j * HD4 + c];
      }
      xs[(i / HD4) * (HD4 + 1u) + c] = kv;
      xs[vb + i] = vv;
    }
    workgroupBarrier();
    for (var i = lid; i < G * BK; i += WG) {
      let g = i / BK;
      let k = i % BK;
      var d = 0.0;
      for (var c = 0u; c < HD4; c++) { d += dot(qs[g * HD4 + c], xs[k * (HD4 + 1u) + c]); }
      sc[i] = select(d, MASKED, kb + k >= ke);
    }
    workgroupBarrier();
    if (lid < G) {
      var bm = MASKED;
      for (var k = 0u; k < BK; k++) { bm = max(bm, sc[lid * BK + k]); }
      let mn = max(hm[lid], bm);
      let corr = exp(hm[lid] - mn);
      var l = hl[lid] * corr;
      for (var k = 0u; k < BK; k++) {
        let e = select(exp(sc[lid * BK + k] - mn), 0.0, sc[lid * BK + k] <= MASKED);
        sc[lid * BK + k] = e;
        l += e;
      }
      hm[lid] = mn;
      hl[lid] = l;
      hc[lid] = corr;
    }
    workgroupBarrier();
    if (lid < G * HD4) {
      let g = lid / HD4;
      var a = acc * hc[g];
      for (var k = 0u; k < BK; k++) { a += sc[g * BK + k] * xs[vb + k * HD4 + lid % HD4]; }
      acc = a;
    }
  }
  if (lid < G * HD4) {
    let g = lid / HD4;
    let c = lid % HD4;
    let ob = p.part + ((kvh * G + g) * p.n_splits + split) * (HD + 2u);
    st(ob + 4u * c, acc.x);
    st(ob + 4u * c + 1u, acc.y);
    st(ob + 4u * c + 2u, acc.z);
    st(ob + 4u * c + 3u, acc.w);
    if (c == 0u) {
      st(ob + HD, hm[g]);
      st(ob + HD + 1u, hl[g]);
    }
  }
  finish(1u);
}

// C: rows 16 it .. of the o projection on the merged attention output, plus the residual: x2.
fn item_o(it: u32, lid: u32) {
  let r = it * (2u * GROUPS) + 2u * (lid / TPR);
  let ra = min(r, p.hidden - 1u);
  let rb = min(r + 1u, p.hidden - 1u);
  let rs = (p.nh * HD + 7u) / 8u;
  var pre = prefetch(1u, ra, rb, rs, rs, lid % TPR);
  var res = vec2<f32>(0.0);  // the residual, loaded while the weights stream
  if (lid % TPR == 0u) { res = ld2x(p.xin + ra, p.xin + rb); }
  wait_step(1u, p.end_b - p.end_a);
  stage_combine(lid);
  let a = mv_tile(1u, ra, rb, rs, 0u, rs, lid % TPR, &pre, true);
  let sa = group_sum(a.x, lid, TPR);
  let sb = group_sum(a.y, lid, TPR);
  if (lid % TPR == 0u) {
    if (r < p.hidden) { st(p.x2 + r, sa + res.x); }
    if (r + 1u < p.hidden) { st(p.x2 + r + 1u, sb + res.y); }
  }
  finish(2u);
}

// D: gate rows j and up rows ffn + j (j = 8 it ..) on RMSNorm(x2): act[j] = silu(gate) * up.
fn item_swiglu(it: u32, lid: u32) {
  let j = it * GROUPS + lid / TPR;
  let jc = min(j, p.ffn - 1u);
  let rs = (p.hidden + 7u) / 8u;
  var pre = prefetch(2u, jc, p.ffn + jc, rs, rs, lid % TPR);
  wait_step(2u, p.end_c - p.end_b);
  let inv = stage_norm(p.x2, p.ln2, p.hidden, lid);
  let a = mv_tile(2u, jc, p.ffn + jc, rs, 0u, rs, lid % TPR, &pre, true);
  let g = group_sum(a.x, lid, TPR) * inv;
  let u = group_sum(a.y, lid, TPR) * inv;
  if (lid % TPR == 0u && j < p.ffn) { st(p.act + j, g / (1.0 + exp(-g)) * u); }
  finish(3u);
}

// E: rows 16 it .. of the down projection on act (in tiles of XT), plus x2: the layer's output.
fn item_down(it: u32, lid: u32) {
  let r = it * (2u * GROUPS) + 2u * (lid / TPR);
  let ra = min(r, p.hidden - 1u);
  let rb = min(r + 1u, p.hidden - 1u);
  let rs = (p.ffn + 7u) / 8u;
  var pre = prefetch(3u, ra, rb, rs, min(rs, XH), lid % TPR);
  wait_step(3u, p.end_d - p.end_c);
  var res = vec2<f32>(0.0);
  if (lid % TPR == 0u) { res = ld2x(p.x2 + ra, p.x2 + rb); }
  var a = vec2<f32>(0.0);
  for (var t0 = 0u; t0 < rs; t0 += XH) {
    let t1 = min(t0 + XH, rs);
    workgroupBarrier();
    let nj = 2u * (t1 - t0);
    for (var j0 = lid; j0 < nj; j0 += LB * WG) {
      let x4 = ld4x4(p.act + 8u * t0, j0, p.ffn - 8u * t0);
      for (var k = 0u; k < LB; k++) {
        let j = j0 + k * WG;
        if (j < nj) { xs_set(j, select(vec4<f32>(0.0), x4[k], 8u * t0 + 4u * j < p.ffn)); }
      }
    }
    workgroupBarrier();
    a += mv_tile(3u, ra, rb, rs, t0, t1, lid % TPR, &pre, t0 == 0u);
  }
  let sa = group_sum(a.x, lid, TPR);
  let sb = group_sum(a.y, lid, TPR);
  if (lid % TPR == 0u) {
    if (r < p.hidden) { st(p.out + r, sa + res.x); }
    if (r + 1u < p.hidden) { st(p.out + r + 1u, sb + res.y); }
  }
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
  // the next region, for the next layer (its words were last used two dispatches ago)
  let wg = wg_linear(wid, nwg);
  let stride = nwg.x * nwg.y * WG;
  for (var i = p.reset0 + wg * WG + lid; i < p.reset1; i += stride) { atomicStore(&s[i], SENTINEL); }
  if (wg == 0u && lid < 5u) { atomicStore(&s[p.next_cnt + lid], 0u); }  // its ticket and step counters
  lid0 = lid == 0u;
  loop {
    if (lid0) { ticket = atomicAdd(&s[p.cnt], 1u); }
    let t = workgroupUniformLoad(&ticket);
    if (t >= p.n_items) { break; }
    if (t < p.end_a) {
      item_qkv(t, lid);
    } else if (t < p.end_b) {
      item_attn(t - p.end_a, lid);
    } else if (t < p.end_c) {
      item_o(t - p.end_b, lid);
    } else if (t < p.end_d) {
      item_swiglu(t - p.end_c, lid);
    } else {
      item_down(t - p.end_d, lid);
    }
  }
}
