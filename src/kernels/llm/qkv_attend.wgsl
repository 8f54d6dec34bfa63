// matvec_kx.wgsl's QA: the decode attention of one token inside its QKV + RoPE matvec, so that a
// layer needs no attention dispatch of its own. Each tile's epilogue stages its rows' final
// values (queries and keys rotated, values as they are) in `hand` with atomic stores, besides
// the cache append, and counts the tile in its kv group's counter; the workgroup that counts a
// group's last tile (its QA_G query heads, its key head and its value head) attends that group
// over cache rows 0 .. crow - 1 and the staged row crow, writes its heads' outputs to the first
// words of `hand` (where the o projection reads them in the next dispatch), and resets the staged
// words and the counter for the next layer.
// No workgroup waits for one that has not done its part: a group's counter reaches its end only
// after every tile of the group has made its stores (a barrier before each count), so a wait is
// only for stores already made to become visible. WGSL's atomics are relaxed, so no word vouches
// for another: each staged word is read until it is no longer the sentinel, at most QA_SPIN
// times, past which the error word is set (the host reports it; the tokens are wrong).
// hand, in words (LlmOps::make_qkv_attend_scratch): the outputs [0, heads * hd), a counter per
// kv head, the error word, then the staged rows ((heads + 2 n_kv) * hd, the sentinel between uses).
// Needs the prelude's QA_G, QA_HD (head_dim, a multiple of 4), QA_E (output elements per
// invocation: ceil(QA_G * QA_HD / WG)), T dividing 2 * (QA_HD / 2) pairs' worth (a tile in one
// head), the kernel's WG, KSG and p (the ROPE fields), and binding 9 (P_BINDING 10).
@group(0) @binding(9) var<storage, read_write> hand: array<atomic<u32>>;
override QA_SCALE: f32 = 1.0;  // the attention's scale (1 / sqrt(head_dim) for Llama)
const QA_SENT: u32 = 0xffffffffu;
const QA_SPIN: u32 = 1u << 22;
const QA_NONE: u32 = 0xffffffffu;
const QA_HD4: u32 = QA_HD / 4u;
const QA_TILES: u32 = (QA_G + 2u) * QA_HD / T;  // tiles per kv group (T / 2 pairs a tile)
const QA_MASKED: f32 = -3.0e38;

var<workgroup> qa_q: array<vec4<f32>, QA_G * QA_HD4>;  // the group's queries, scaled
var<workgroup> qa_k: array<vec4<f32>, QA_HD4>;         // the new key
var<workgroup> qa_v: array<f32, QA_HD>;                // the new value
var<workgroup> qa_w: array<f32, QA_G * WG>;            // a chunk's scores' weights [head][key]
var<workgroup> qa_mx: array<f32, QA_G * (WG / KSG)>;   // [head][subgroup]: the chunk's maxima
var<workgroup> qa_sm: array<f32, QA_G * (WG / KSG)>;   // [head][subgroup]: the weights' sums
var<workgroup> qa_last: u32;

fn qa_cnt() -> u32 { return p.heads * p.head_dim; }
fn qa_err() -> u32 { return qa_cnt() + p.n_kv; }
fn qa_staged() -> u32 { return qa_err() + 1u; }

// The bits staged for v (a computed NaN never reads as the sentinel).
fn qa_bits(v: f32) -> u32 {
  let u = bitcast<u32>(v);
  return select(u, 0x7fc00000u, u == QA_SENT);
}

// The ROPE epilogue with QA: the pair into the cache (keys, values) and staged (all rows); the
// queries are not stored in y (the attention's output takes their place in hand).
fn qa_store(ra: u32, rb: u32, a: f32, b: f32, cs: vec2<f32>) {
  let r = rope_out(ra, a, b, cs);
  rope_store_kv(ra, rb, r);
  atomicStore(&hand[qa_staged() + ra], qa_bits(r.x));
  atomicStore(&hand[qa_staged() + rb], qa_bits(r.y));
}

// Staged word i, once it is set.
fn qa_wait(i: u32) -> f32 {
  var v = atomicLoad(&hand[i]);
  for (var n = 0u; v == QA_SENT && n < QA_SPIN; n++) { v = atomicLoad(&hand[i]); }
  if (v == QA_SENT) { atomicStore(&hand[qa_err()], 1u); }
  return bitcast<f32>(v);
}

// The kv group of tile t's head.
fn qa_group(t: u32) -> u32 {
  let head = rope_head(tile_row(t, 0u).x - p.row0);
  if (head < p.heads) { return head / QA_G; }
  if (head < p.heads + p.n_kv) { return head - p.heads; }
  return head - p.heads - p.n_kv;
}

// After tile t's epilogue (uniform control flow): count it; the group's last tile attends.
fn qa_arrive(t: u32, lid: u32) {
  workgroupBarrier();  // every lane's staged stores made before the count
  if (lid == 0u) {
    let g = qa_group(t);
    let c = qa_cnt() + g;
    var last = QA_NONE;
    if (atomicAdd(&hand[c], 1u) + 1u == QA_TILES) {
      atomicStore(&hand[c], 0u);
      last = g;
    }
    qa_last = last;
  }
  let g = workgroupUniformLoad(&qa_last);
  if (g != QA_NONE) { qa_attend(g, lid); }
}

// Staged row `row`'s vec4 i4, reset to the sentinel for the next layer.
fn qa_take4(row: u32, i4: u32) -> vec4<f32> {
  let b = qa_staged() + row + 4u * i4;
  var v: vec4<f32>;
  for (var c = 0u; c < 4u; c++) {
    v[c] = qa_wait(b + c);
    atomicStore(&hand[b + c], QA_SENT);
  }
  return v;
}

// Group g's attention: QA_G heads over keys 0 .. n - 1 (the last one staged), in chunks of WG
// keys (a key per invocation for the scores, then an output element per invocation), with the
// softmax's running maximum and sum carried across chunks.
fn qa_attend(g: u32, lid: u32) {
  for (var i4 = lid; i4 < (QA_G + 2u) * QA_HD4; i4 += WG) {
    if (i4 < QA_G * QA_HD4) {
      qa_q[i4] = qa_take4(g * QA_G * QA_HD, i4) * QA_SCALE;
    } else if (i4 < (QA_G + 1u) * QA_HD4) {
      qa_k[i4 - QA_G * QA_HD4] = qa_take4((p.heads + g) * QA_HD, i4 - QA_G * QA_HD4);
    } else {
      let c = i4 - (QA_G + 1u) * QA_HD4;
      let v = qa_take4((p.heads + p.n_kv + g) * QA_HD, c);
      for (var e = 0u; e < 4u; e++) { qa_v[4u * c + e] = v[e]; }
    }
  }
  workgroupBarrier();
  var crow = p.pos0;
  if ((p.rflags & 4u) != 0u) { crow = positions[1]; }
  let n = min(crow, p.max_ctx - 1u) + 1u;  // keys, the staged one last
  let kvb = p.cache_off + g * p.max_ctx * QA_HD;
  let sl = lid % KSG;
  let sgi = lid / KSG;
  var m: array<f32, QA_G>;
  var l: array<f32, QA_G>;
  var o: array<f32, QA_E>;
  for (var h = 0u; h < QA_G; h++) {
    m[h] = QA_MASKED;
    l[h] = 0.0;
  }
  for (var e = 0u; e < QA_E; e++) { o[e] = 0.0; }
  for (var c0 = 0u; c0 < n; c0 += WG) {
    // this invocation's key's scores
    let key = c0 + lid;
    var s: array<f32, QA_G>;
    for (var h = 0u; h < QA_G; h++) { s[h] = QA_MASKED; }
    if (key < n) {
      for (var h = 0u; h < QA_G; h++) { s[h] = 0.0; }
      let kb = kvb + key * QA_HD;
      for (var d4 = 0u; d4 < QA_HD4; d4++) {
        var kv = qa_k[d4];
        if (key + 1u < n) {
          let i = kb + 4u * d4;
          kv = vec4<f32>(k_cache[i], k_cache[i + 1u], k_cache[i + 2u], k_cache[i + 3u]);
        }
        for (var h = 0u; h < QA_G; h++) { s[h] += dot(qa_q[h * QA_HD4 + d4], kv); }
      }
    }
    // the chunk's maximum per head, then its weights and their sum
    for (var h = 0u; h < QA_G; h++) {
      let mx = subgroupMax(s[h]);
      if (sl == 0u) { qa_mx[h * (WG / KSG) + sgi] = mx; }
    }
    workgroupBarrier();
    var corr: array<f32, QA_G>;
    for (var h = 0u; h < QA_G; h++) {
      var mc = m[h];
      for (var i = 0u; i < WG / KSG; i++) { mc = max(mc, qa_mx[h * (WG / KSG) + i]); }
      corr[h] = exp(m[h] - mc);
      m[h] = mc;
      let w = select(0.0, exp(s[h] - mc), key < n);
      qa_w[h * WG + lid] = w;
      let sw = subgroupAdd(w);
      if (sl == 0u) { qa_sm[h * (WG / KSG) + sgi] = sw; }
    }
    workgroupBarrier();
    for (var h = 0u; h < QA_G; h++) {
      var t = 0.0;
      for (var i = 0u; i < WG / KSG; i++) { t += qa_sm[h * (WG / KSG) + i]; }
      l[h] = l[h] * corr[h] + t;
    }
    // this invocation's output elements over the chunk's values
    let nk = min(WG, n - c0);
    let nc = select(nk, nk - 1u, c0 + nk == n);  // from the cache (the staged key is the last)
    for (var e = 0u; e < QA_E; e++) {
      let i = lid + e * WG;
      let h = min(i / QA_HD, QA_G - 1u);
      let d = i % QA_HD;
      var ch = 1.0;
      for (var hh = 0u; hh < QA_G; hh++) { ch = select(ch, corr[hh], hh == h); }
      var a = o[e] * ch;
      let vb = kvb + c0 * QA_HD + d;
      for (var j = 0u; j < nc; j++) { a += qa_w[h * WG + j] * v_cache[vb + j * QA_HD]; }
      if (nc < nk) { a += qa_w[h * WG + nc] * qa_v[d]; }
      o[e] = a;
    }
    workgroupBarrier();  // qa_w, qa_mx and qa_sm are the next chunk's
  }
  for (var e = 0u; e < QA_E; e++) {
    let i = lid + e * WG;
    if (i < QA_G * QA_HD) {
      let h = i / QA_HD;
      var lh = 1.0;
      for (var hh = 0u; hh < QA_G; hh++) { lh = select(lh, l[hh], hh == h); }
      atomicStore(&hand[g * QA_G * QA_HD + i], bitcast<u32>(o[e] / lh));
    }
  }
}
