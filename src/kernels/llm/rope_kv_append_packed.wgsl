// rope_kv_append.wgsl for a packed cache (f16, q8_0: the kv_store_*.wgsl included beside it), with
// the same parameters and arithmetic (each rotated key value is rope_rotate of its pair, as
// there): one invocation per query pair (rotated in place), then per unit of KV_CH values of a
// key head (rotated) and of a value head (copied), so each invocation owns whole words of the
// cache (and for q8_0 the whole block its scale covers).
//!include "llm/rope_pair.wgsl"
@group(0) @binding(0) var<storage, read_write> qkv: array<f32>;
@group(0) @binding(1) var<storage, read> cs: array<vec2<f32>>;
@group(0) @binding(2) var<storage, read> positions: array<u32>;
@group(0) @binding(3) var<storage, read_write> k_cache: KvStore;
@group(0) @binding(4) var<storage, read_write> v_cache: KvStore;
struct P {
  n: u32,
  heads: u32,
  n_kv: u32,
  head_dim: u32,
  stride: u32,
  q_off: u32,
  k_off: u32,
  v_off: u32,
  pos0: u32,
  flags: u32,  // 1: positions from the buffer, 2: interleaved pairs, 4: cache rows from the buffer
  max_pos: u32,
  max_ctx: u32,
  cache_off: u32,
}
@group(0) @binding(5) var<uniform> p: P;
override WG: u32 = 256;

fn kv_layer() -> vec2<u32> { return vec2<u32>(p.cache_off, p.n_kv * p.max_ctx * p.head_dim); }

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
  let half = p.head_dim / 2u;
  let units = p.head_dim / KV_CH;
  let q_pairs = p.heads * half;
  let per_t = q_pairs + 2u * p.n_kv * units;
  let g = wg_linear(wid, nwg) * WG + lid;
  if (g >= p.n * per_t) { return; }
  let t = g / per_t;
  let u = g % per_t;
  let inter = (p.flags & 2u) != 0u;
  let row = t * p.stride;
  var pos = p.pos0 + t;
  if ((p.flags & 1u) != 0u) { pos = positions[t]; }
  pos = min(pos, p.max_pos - 1u);
  if (u < q_pairs) {
    let i = u % half;
    let ab = row + p.q_off + (u / half) * p.head_dim + rope_pair(i, half, inter);
    let r = rope_rotate(qkv[ab.x], qkv[ab.y], cs[pos * half + i]);
    qkv[ab.x] = r.x;
    qkv[ab.y] = r.y;
    return;
  }
  let w = u - q_pairs;
  let is_v = w >= p.n_kv * units;
  let wu = select(w, w - p.n_kv * units, is_v);
  let h = wu / units;
  let e0 = (wu % units) * KV_CH;
  var crow = p.pos0 + t;
  if ((p.flags & 4u) != 0u) { crow = positions[p.n + t]; }
  crow = crow % p.max_ctx;  // a ring (sliding-window layer): the row of the position
  let dst = p.cache_off + (h * p.max_ctx + crow) * p.head_dim + e0;
  var x: array<f32, KV_CH>;
  if (is_v) {
    let src = row + p.v_off + h * p.head_dim + e0;
    for (var j = 0u; j < KV_CH; j++) { x[j] = qkv[src + j]; }
    v_store(dst, x);
    return;
  }
  let kb = row + p.k_off + h * p.head_dim;
  for (var j = 0u; j < KV_CH; j++) {
    // value e of the head: element (e % half or e / 2) of its pair, the pair's first or second
    let e = e0 + j;
    let i = select(e % half, e / 2u, inter);
    let second = select(e >= half, (e & 1u) == 1u, inter);
    let ab = kb + rope_pair(i, half, inter);
    let r = rope_rotate(qkv[ab.x], qkv[ab.y], cs[pos * half + i]);
    x[j] = select(r.x, r.y, second);
  }
  k_store(dst, x);
}
