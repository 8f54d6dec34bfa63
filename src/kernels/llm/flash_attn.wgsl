// Flash attention (online softmax) over a KV cache, causal, with GQA. Used for prefill (one
// split) and, with partial = 1 and several splits, for flash decoding (attn_combine.wgsl adds
// the splits up).
//
// Rows: for kv head kvh (workgroup y), the n * G query rows (token t, head h = kvh * G + g,
// G = n_heads / n_kv) in blocks of BQ (workgroup x); keys of split z (workgroup z):
// [first + z * split_len, first + (z + 1) * split_len) within 0 .. start + n - 1 (first: 0, or with
// a sliding window the start position's first key rounded down to a block; flash_attn_range.wgsl),
// and causal: token t (position start + t) sees keys window_lo(start + t) .. start + t.
// q[t * q_stride + q_off + h * HD + d]; caches: [n_kv][max_ctx][HD] values from value
// cache_off (f32, or packed: kv_read_*.wgsl);
// out (partial = 0): o[t * o_stride + o_off + h * HD + d];
// out (partial = 1): [n][n_heads][n_splits][HD + 2] = unnormalised acc, running max m, sum l.
// TPQ invocations per row, each owning NV = HD / 4 / TPQ vec4 of the output (d4 = j + TPQ * i);
// keys in blocks of BK (a multiple of TPQ), staged in shared memory with the block's queries.
@group(0) @binding(0) var<storage, read> q4: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> k4: KvWords;  // kv_read_*.wgsl: k_at
@group(0) @binding(2) var<storage, read> v4: KvWords;  // kv_read_*.wgsl: v_at
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
@group(0) @binding(4) var<storage, read> dynpos: array<u32>;  // dyn = 1: the start position
//!include "llm/flash_attn_params.wgsl"
//!include "llm/attn_window.wgsl"
//!include "llm/flash_attn_range.wgsl"
@group(0) @binding(5) var<uniform> p: P;
//!include "llm/attn_partial.wgsl"
override HD: u32 = 128;  // head_dim, a multiple of 4
override TPQ: u32 = 8;   // invocations per query row; (HD / 4) % TPQ == 0, NV <= 4
override BQ: u32 = 16;   // query rows per workgroup
override BK: u32 = 16;   // keys per block, a multiple of TPQ
const MASKED: f32 = -3.0e38;

var<workgroup> qs: array<vec4<f32>, BQ * HD / 4u>;
var<workgroup> ks: array<vec4<f32>, BK * HD / 4u>;
var<workgroup> vs: array<vec4<f32>, BK * HD / 4u>;
var<workgroup> sc: array<f32, BQ * BK>;

@compute @workgroup_size(BQ * TPQ)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
  let HD4 = HD / 4u;
  let KS = HD4;  // vec4s per row of qs and ks (attn_block.wgsl)
  let NV = HD4 / TPQ;
  let NT = BQ * TPQ;
  let G = p.n_heads / p.n_kv;
  let kvh = wid.y;
  let split = wid.z;
  let range = key_range(p.n, BK);
  let start = range.x;
  let split_len = range.y;
  let r = lid / TPQ;
  let j = lid % TPQ;
  let nrows = p.n * G;
  let R = wid.x * BQ + r;
  let Rc = min(R, nrows - 1u);
  let t = Rc / G;
  let h = kvh * G + Rc % G;
  let qpos = start + t;
  let klo = window_lo(qpos);  // the row's first visible key

  // this row's query, pre-scaled, into shared memory
  let qb = (t * p.q_stride + p.q_off + h * HD) / 4u;
  for (var i = 0u; i < NV; i++) { qs[r * HD4 + j + TPQ * i] = q4[qb + j + TPQ * i] * p.scale; }

  // the workgroup's key range
  let t_last = (min(wid.x * BQ + BQ, nrows) - 1u) / G;
  let kv_begin = range.z + split * split_len;
  let kv_end = min(min(kv_begin + split_len, start + p.n), start + t_last + 1u);
  // blocks before the first row's window hold no key any row sees: skipped (whole blocks from
  // kv_begin, so each row's blocks and sums stay the same as if they were walked)
  let lo_wg = window_lo(start + (wid.x * BQ) / G);
  let kb0 = kv_begin + (max(lo_wg, kv_begin) - kv_begin) / BK * BK;
  let cb = p.cache_off / 4u + kvh * p.max_ctx * HD4;

  var m = MASKED;
  var l = 0.0;
  var acc: array<vec4<f32>, 4>;
  for (var kb = kb0; kb < kv_end; kb += BK) {
    workgroupBarrier();
    for (var i = lid; i < BK * HD4; i += NT) {
      let key = kb + i / HD4;
      var kv = vec4<f32>(0.0);
      var vv = vec4<f32>(0.0);
      if (key < kv_end) {
        let at = cb + kv_row(key) * HD4 + i % HD4;
        kv = k_at(at);
        vv = v_at(at);
      }
      ks[i] = kv;
      vs[i] = vv;
    }
//!include "llm/attn_block.wgsl"
  }
  if (R >= nrows) { return; }
  if (p.partial == 0u) {
    let ob = t * p.o_stride + p.o_off + h * HD;
    let inv = 1.0 / l;
    for (var i = 0u; i < NV; i++) {
      let d = 4u * (j + TPQ * i);
      let v = acc[i] * inv;
      out[ob + d] = v.x;
      out[ob + d + 1u] = v.y;
      out[ob + d + 2u] = v.z;
      out[ob + d + 3u] = v.w;
    }
  } else {
    store_partial(((t * p.n_heads + h) * p.n_splits + split) * (HD + 2u), j, acc, m, l);
  }
}
