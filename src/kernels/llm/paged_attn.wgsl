// Paged flash attention (serving): causal GQA attention of the new tokens of many sequences, each
// over its own KV cache blocks, for prefill chunks and decode tokens alike. Writes flash-decoding
// partials that paged_attn_combine.wgsl adds up.
//
// Cache: [n_kv][n_slots][HD] values per layer (k and v; f32, or packed: kv_read_*.wgsl); a
// sequence's position p lives in slot tables[table_off + p / block] * block + p % block.
// Sequences: seqs[s] = (tok0, n_q, pos0, table_off): its new tokens are batch rows tok0 ..
// tok0 + n_q - 1 at positions pos0 .. (their K/V already in the cache).
// Work items (workgroup x, from item0): items[i] = (s, row0): query rows row0 .. row0 + BQ - 1 of
// sequence s, row R = t * G + g (token t, head kvh * G + g, G = n_heads / n_kv); workgroup y: the
// kv head; z: the split, keys [z * split_len, (z + 1) * split_len).
// q[tok * q_stride + q_off + h * HD + d]; partials [tok][n_heads][n_splits][HD + 2] = acc, max m,
// sum l of the split's keys (only splits z <= pos / split_len are written for a row at pos).
//
// A row's arithmetic depends only on its position and data: keys in blocks of BK from the split
// start, the same order and operations whatever BQ, the batch or the other rows (masked keys
// add exact zeros; blocks that hold none of its keys leave its sums as they are, so skipping
// those below the window changes no bit). So a token's attention is the same alone, in a batch,
// or in a prefill chunk.
@group(0) @binding(0) var<storage, read> q4: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> k4: KvWords;  // kv_read_*.wgsl: k_at
@group(0) @binding(2) var<storage, read> v4: KvWords;  // kv_read_*.wgsl: v_at
@group(0) @binding(3) var<storage, read> tables: array<u32>;
@group(0) @binding(4) var<storage, read> seqs: array<vec4<u32>>;
@group(0) @binding(5) var<storage, read> items: array<vec2<u32>>;
@group(0) @binding(6) var<storage, read_write> out: array<f32>;  // the partials
struct P {
  n_heads: u32,
  n_kv: u32,
  n_slots: u32,
  block: u32,
  q_stride: u32,
  q_off: u32,
  scale: f32,
  split_len: u32,  // a multiple of BK
  n_splits: u32,   // splits per row in the partials' layout
  item0: u32,
  window: u32,   // sliding window (attn_window.wgsl; 0: none)
  softcap: f32,  // score soft-cap (attn_window.wgsl; 0: none)
}
@group(0) @binding(7) var<uniform> p: P;
// The layer's first word and quant words in the caches (kv_read_q8.wgsl): a pool layer per tensor.
fn kv_layer() -> vec2<u32> { return vec2<u32>(0u, p.n_kv * p.n_slots * (HD / 4u)); }
//!include "llm/attn_window.wgsl"
//!include "llm/attn_partial.wgsl"
override HD: u32 = 128;  // head_dim, a multiple of 4
override TPQ: u32 = 8;   // invocations per query row; (HD / 4) % TPQ == 0, NV <= 4 (TPQ > BK: some score no key)
override BQ: u32 = 16;   // query rows per workgroup
override PF: bool = false;  // prefetch the next key block into registers (needs BK * HD / 4 <= 4 * BQ * TPQ)
const BK: u32 = 16u;     // keys per block (fixed: it is part of every row's arithmetic)
// vec4s of padding after each row of qs and ks (0 or 1): with 1 the invocations that compute a
// block's scores read ks without bank conflicts (rows HD / 4 + 1 vec4s apart). Only where the
// operands sit: never a result.
override KP: u32 = 0u;
const MASKED: f32 = -3.0e38;

var<workgroup> qs: array<vec4<f32>, BQ * (HD / 4u + KP)>;
var<workgroup> ks: array<vec4<f32>, BK * (HD / 4u + KP)>;
var<workgroup> vs: array<vec4<f32>, BK * HD / 4u>;
var<workgroup> sc: array<f32, BQ * BK>;

// Element i of the key block from kb (key kb + i / HD4): its key and value vec4s (zero past kv_end;
// table_off: the sequence's block table).
fn kv_at(i: u32, kb: u32, kv_end: u32, cb: u32, table_off: u32) -> array<vec4<f32>, 2> {
  let key = kb + i / (HD / 4u);
  var o: array<vec4<f32>, 2>;
  if (i < BK * HD / 4u && key < kv_end) {
    let slot = tables[table_off + key / p.block] * p.block + key % p.block;
    let at = cb + slot * (HD / 4u) + i % (HD / 4u);
    o[0] = k_at(at);
    o[1] = v_at(at);
  }
  return o;
}

@compute @workgroup_size(BQ * TPQ)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
  let HD4 = HD / 4u;
  let KS = HD4 + KP;
  let NV = HD4 / TPQ;
  let NT = BQ * TPQ;
  let G = p.n_heads / p.n_kv;
  let item = items[p.item0 + wid.x];
  let sq = seqs[item.x];
  let kvh = wid.y;
  let split = wid.z;
  let r = lid / TPQ;
  let j = lid % TPQ;
  let nrows = sq.y * G;
  let R = item.y + r;
  let Rc = min(R, nrows - 1u);
  let t = Rc / G;
  let h = kvh * G + Rc % G;
  let qpos = sq.z + t;
  let klo = window_lo(qpos);  // the row's first visible key
  let tok = sq.x + t;

  // the workgroup's keys: this split, up to its last row's position
  let last_pos = sq.z + (min(item.y + BQ, nrows) - 1u) / G;
  let kv_begin = split * p.split_len;
  if (kv_begin > last_pos) { return; }
  let kv_end = min(kv_begin + p.split_len, last_pos + 1u);
  // sliding window: the blocks before the first row's first key hold no key any row sees; skipped
  // in whole blocks from the split start (each row's blocks and sums stay those of walking them)
  let lo_wg = window_lo(sq.z + item.y / G);
  let kb0 = kv_begin + (max(lo_wg, kv_begin) - kv_begin) / BK * BK;

  // this row's query, pre-scaled, into shared memory
  let qb = (tok * p.q_stride + p.q_off + h * HD) / 4u;
  for (var i = 0u; i < NV; i++) { qs[r * KS + j + TPQ * i] = q4[qb + j + TPQ * i] * p.scale; }

  let cb = kvh * p.n_slots * HD4;
  var m = MASKED;
  var l = 0.0;
  var acc: array<vec4<f32>, 4>;
  // PF: this invocation's part of the next block's keys and values is loaded into registers
  // before the current block is computed (BK * HD4 <= 4 * NT), so the loads are in flight.
  var pk: array<vec4<f32>, 4>;
  var pv: array<vec4<f32>, 4>;
  if (PF) {
    for (var c = 0u; c < 4u; c++) {
      let kv = kv_at(lid + c * NT, kb0, kv_end, cb, sq.w);
      pk[c] = kv[0];
      pv[c] = kv[1];
    }
  }
  for (var kb = kb0; kb < kv_end; kb += BK) {
    workgroupBarrier();
    if (PF) {
      for (var c = 0u; c < 4u; c++) {
        let i = lid + c * NT;
        if (i < BK * HD4) {
          ks[i + i / HD4 * KP] = pk[c];
          vs[i] = pv[c];
        }
      }
      if (kb + BK < kv_end) {
        for (var c = 0u; c < 4u; c++) {
          let kv = kv_at(lid + c * NT, kb + BK, kv_end, cb, sq.w);
          pk[c] = kv[0];
          pv[c] = kv[1];
        }
      }
    } else {
      for (var i = lid; i < BK * HD4; i += NT) {
        let kv = kv_at(i, kb, kv_end, cb, sq.w);
        ks[i + i / HD4 * KP] = kv[0];
        vs[i] = kv[1];
      }
    }
//!include "llm/attn_block.wgsl"
  }
  if (R >= nrows || kv_begin > qpos) { return; }
  store_partial(((tok * p.n_heads + h) * p.n_splits + split) * (HD + 2u), j, acc, m, l);
}
