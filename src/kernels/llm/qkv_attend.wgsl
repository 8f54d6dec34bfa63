// matvec_kx.wgsl's QA: the decode attention of one token inside its QKV + RoPE matvec, so that a
// layer needs no attention dispatch of its own. Each tile's epilogue stages its rows' final
// values (queries and keys rotated, values as they are) in `hand` with atomic stores, besides
// the cache append; when its tiles are done a workgroup counts each in its kv group's counter,
// and the workgroup that counts a group's last tile (of its QA_G query heads, its key head and
// its value head) attends that group over cache rows 0 .. crow - 1 and the staged row crow,
// writes its heads' outputs to the first words of `hand` (where the o projection reads them in
// the next dispatch), and resets the staged words and the counter for the next layer.
// No workgroup waits for one that has not done its part: a group's counter reaches its end only
// after every tile of the group has made its stores (a barrier before the counts), so a wait is
// only for stores already made to become visible. WGSL's atomics are relaxed, so no word vouches
// for another: each staged word is read until it is no longer the sentinel, at most QA_SPIN
// times, past which the error word is set (the host reports it; the tokens are wrong).
// hand, in words (LlmOps::make_qkv_attend_scratch): the outputs [0, heads * hd), a counter per
// kv head, the error word, then the staged rows ((heads + 2 n_kv) * hd, the sentinel between uses).
// Needs the prelude's QA_G, QA_HD (head_dim, a multiple of 4 and of T: a tile inside one head),
// at most 32 kv heads, QA_HD4 <= WG, the kernel's WG, KSG and p (the ROPE fields), and binding 9
// (P_BINDING 10).
@group(0) @binding(9) var<storage, read_write> hand: array<atomic<u32>>;
override QA_SCALE: f32 = 1.0;  // the attention's scale (1 / sqrt(head_dim) for Llama)
const QA_SENT: u32 = 0xffffffffu;
const QA_SPIN: u32 = 1u << 22;
const QA_HD4: u32 = QA_HD / 4u;
const QA_TILES: u32 = (QA_G + 2u) * QA_HD / T;  // tiles per kv group (T / 2 pairs a tile)
const QA_MASKED: f32 = -3.0e38;
override QA_KS: u32 = WG / QA_HD4;  // key slots of the value sums (an invocation: a slot's vec4 column)

var<workgroup> qa_q: array<vec4<f32>, QA_G * QA_HD4>;  // the group's queries, scaled
var<workgroup> qa_k: array<vec4<f32>, QA_HD4>;         // the new key
var<workgroup> qa_v: array<vec4<f32>, QA_HD4>;         // the new value
var<workgroup> qa_w: array<f32, QA_G * WG>;            // a chunk's scores' weights [head][key]
var<workgroup> qa_mx: array<f32, QA_G * (WG / KSG)>;   // [head][subgroup]: the chunk's maxima
var<workgroup> qa_sm: array<f32, QA_G * (WG / KSG)>;   // [head][subgroup]: the weights' sums
var<workgroup> qa_red: array<vec4<f32>, WG>;           // one head's value sums of every slot
var<workgroup> qa_done: atomic<u32>;                   // bit g: this workgroup completed group g
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
fn qa_wait(i: u32) -> u32 {
  var v = atomicLoad(&hand[i]);
  for (var n = 0u; v == QA_SENT && n < QA_SPIN; n++) { v = atomicLoad(&hand[i]); }
  if (v == QA_SENT) { atomicStore(&hand[qa_err()], 1u); }
  return v;
}

// Staged words w .. w + 3, reset to the sentinel for the next layer: four loads at once, a
// word's wait only where one is not visible yet.
fn qa_take4(w: u32) -> vec4<f32> {
  var u = vec4<u32>(atomicLoad(&hand[w]), atomicLoad(&hand[w + 1u]), atomicLoad(&hand[w + 2u]),
                    atomicLoad(&hand[w + 3u]));
  if (any(u == vec4<u32>(QA_SENT))) { u = vec4<u32>(qa_wait(w), qa_wait(w + 1u), qa_wait(w + 2u), qa_wait(w + 3u)); }
  for (var c = 0u; c < 4u; c++) { atomicStore(&hand[w + c], QA_SENT); }
  return bitcast<vec4<f32>>(u);
}

// The kv group of tile t's head.
fn qa_group(t: u32) -> u32 {
  let head = rope_head(tile_row(t, 0u).x - p.row0);
  if (head < p.heads) { return head / QA_G; }
  if (head < p.heads + p.n_kv) { return head - p.heads; }
  return head - p.heads - p.n_kv;
}

// After the workgroup's tiles (g0, g0 + ng, .. below tiles; uniform control flow): each counted
// in its group (a lane per tile, the counts at once); the groups it completes, it attends.
fn qa_finish(g0: u32, ng: u32, tiles: u32, lid: u32) {
  if (QA_MODE == 3u) { return; }
  if (lid == 0u) { atomicStore(&qa_done, 0u); }
  workgroupBarrier();  // every lane's staged stores made before the counts
  for (var i = lid; g0 + i * ng < tiles; i += WG) {
    let g = qa_group(g0 + i * ng);
    let c = qa_cnt() + g;
    if (atomicAdd(&hand[c], 1u) + 1u == QA_TILES) {
      atomicStore(&hand[c], 0u);
      atomicOr(&qa_done, 1u << g);
    }
  }
  workgroupBarrier();
  if (lid == 0u) { qa_last = atomicLoad(&qa_done); }
  var done = workgroupUniformLoad(&qa_last);
  while (done != 0u) {
    qa_attend(firstTrailingBit(done), lid);
    done &= done - 1u;
  }
}

// Vec4 d4 of cache row `row` of the values at kvb.
fn qa_value4(kvb: u32, row: u32, d4: u32) -> vec4<f32> {
  let i = kvb + row * QA_HD + 4u * d4;
  return vec4<f32>(v_cache[i], v_cache[i + 1u], v_cache[i + 2u], v_cache[i + 3u]);
}

// Group g's attention: QA_G heads over keys 0 .. n - 1 (the last one staged), in chunks of WG
// keys: a key per invocation for the scores; for the values, invocation (slot, d4) sums vec4 d4
// of every QA_KS-th key from its slot, four keys' loads at a time, the slots added at the end.
// The softmax's running maximum and sum are carried across chunks.
fn qa_attend(g: u32, lid: u32) {
  let st = qa_staged();
  for (var i4 = lid; i4 < (QA_G + 2u) * QA_HD4; i4 += WG) {
    if (i4 < QA_G * QA_HD4) {
      qa_q[i4] = qa_take4(st + g * QA_G * QA_HD + 4u * i4) * QA_SCALE;
    } else if (i4 < (QA_G + 1u) * QA_HD4) {
      let c = i4 - QA_G * QA_HD4;
      qa_k[c] = qa_take4(st + (p.heads + g) * QA_HD + 4u * c);
    } else {
      let c = i4 - (QA_G + 1u) * QA_HD4;
      qa_v[c] = qa_take4(st + (p.heads + p.n_kv + g) * QA_HD + 4u * c);
    }
  }
  workgroupBarrier();
  if (QA_MODE == 2u) { return; }
  var crow = p.pos0;
  if ((p.rflags & 4u) != 0u) { crow = positions[1]; }
  let n = min(crow, p.max_ctx - 1u) + 1u;  // keys, the staged one last
  let kvb = p.cache_off + g * p.max_ctx * QA_HD;
  let sl = lid % KSG;
  let sgi = lid / KSG;
  let ks = lid / QA_HD4;
  let d4 = lid % QA_HD4;
  var m: array<f32, QA_G>;
  var l: array<f32, QA_G>;
  var acc: array<vec4<f32>, QA_G>;
  for (var h = 0u; h < QA_G; h++) {
    m[h] = QA_MASKED;
    l[h] = 0.0;
    acc[h] = vec4<f32>(0.0);
  }
  for (var c0 = 0u; c0 < n; c0 += WG) {
    // this invocation's key's scores (the staged key, or a cached row: row 0 stands in for keys
    // past them, whose scores are masked)
    let key = c0 + lid;
    let own = key + 1u == n;
    let kb = kvb + select(key, 0u, key + 1u >= n) * QA_HD;
    var s: array<f32, QA_G>;
    for (var h = 0u; h < QA_G; h++) { s[h] = 0.0; }
    for (var c = 0u; c < QA_HD4; c++) {
      let i = kb + 4u * c;
      let kv = select(vec4<f32>(k_cache[i], k_cache[i + 1u], k_cache[i + 2u], k_cache[i + 3u]), qa_k[c], own);
      for (var h = 0u; h < QA_G; h++) { s[h] += dot(qa_q[h * QA_HD4 + c], kv); }
    }
    // the chunk's maximum per head, then its weights and their sum
    for (var h = 0u; h < QA_G; h++) {
      s[h] = select(QA_MASKED, s[h], key < n);
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
    // the values: this invocation's slot's keys of the chunk
    let nk = min(WG, n - c0);
    let nc = select(nk, nk - 1u, c0 + nk == n);  // from the cache (the staged key is the last)
    if (ks < QA_KS) {
      for (var h = 0u; h < QA_G; h++) { acc[h] *= corr[h]; }
      var j = ks;
      for (; j + 3u * QA_KS < nc; j += 4u * QA_KS) {
        let v0 = qa_value4(kvb, c0 + j, d4);
        let v1 = qa_value4(kvb, c0 + j + QA_KS, d4);
        let v2 = qa_value4(kvb, c0 + j + 2u * QA_KS, d4);
        let v3 = qa_value4(kvb, c0 + j + 3u * QA_KS, d4);
        for (var h = 0u; h < QA_G; h++) {
          let w = h * WG + j;
          acc[h] += qa_w[w] * v0 + qa_w[w + QA_KS] * v1 + qa_w[w + 2u * QA_KS] * v2 + qa_w[w + 3u * QA_KS] * v3;
        }
      }
      for (; j < nc; j += QA_KS) {
        let v = qa_value4(kvb, c0 + j, d4);
        for (var h = 0u; h < QA_G; h++) { acc[h] += qa_w[h * WG + j] * v; }
      }
      if (ks == 0u && nc < nk) {
        for (var h = 0u; h < QA_G; h++) { acc[h] += qa_w[h * WG + nc] * qa_v[d4]; }
      }
    }
    workgroupBarrier();  // qa_w, qa_mx and qa_sm are the next chunk's
  }
  // each head's slots added, over its sum of weights, into hand's outputs
  for (var h = 0u; h < QA_G; h++) {
    qa_red[lid] = acc[h];
    workgroupBarrier();
    if (lid < QA_HD4) {
      var a = vec4<f32>(0.0);
      for (var k = 0u; k < QA_KS; k++) { a += qa_red[k * QA_HD4 + lid]; }
      a /= l[h];
      let o = (g * QA_G + h) * QA_HD + 4u * lid;
      for (var c = 0u; c < 4u; c++) { atomicStore(&hand[o + c], bitcast<u32>(a[c])); }
    }
    workgroupBarrier();
  }
}
