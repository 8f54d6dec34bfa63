// RoPE and the KV cache append in one pass over a fused QKV activation, for tokens t < n:
//   query heads h < heads at qkv[t * stride + q_off + h * head_dim + d] are rotated in place;
//   key heads h < n_kv at k_off are rotated into k_cache, value heads at v_off copied into v_cache,
//   at cache row pos0 + t, or positions[n + t] with flags & 4 (paged caches), of the layout
//   [n_kv][max_ctx][head_dim] from element cache_off.
// The key and value heads in qkv stay as they were. Rotation as rope.wgsl: (cos, sin) from
// cs[pos * (head_dim / 2) + i], pos = positions[t] or pos0 + t, clamped to max_pos - 1.
// One invocation per pair: per token, heads * half query pairs, then n_kv * half key pairs, then
// n_kv * half value pairs.
//!include "llm/rope_pair.wgsl"
@group(0) @binding(0) var<storage, read_write> qkv: array<f32>;
@group(0) @binding(1) var<storage, read> cs: array<vec2<f32>>;
@group(0) @binding(2) var<storage, read> positions: array<u32>;
@group(0) @binding(3) var<storage, read_write> k_cache: array<f32>;
@group(0) @binding(4) var<storage, read_write> v_cache: array<f32>;
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

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
  let half = p.head_dim / 2u;
  let per_t = (p.heads + 2u * p.n_kv) * half;
  let g = wg_linear(wid, nwg) * WG + lid;
  if (g >= p.n * per_t) { return; }
  let t = g / per_t;
  let u = g % per_t;
  let slot = u / half;  // q heads, then k heads, then v heads
  let i = u % half;
  let pair = rope_pair(i, half, (p.flags & 2u) != 0u);
  let row = t * p.stride;
  var crow = p.pos0 + t;
  if ((p.flags & 4u) != 0u) { crow = positions[p.n + t]; }
  crow = crow % p.max_ctx;  // a ring (sliding-window layer): the row of the position
  if (slot >= p.heads + p.n_kv) {
    let h = slot - p.heads - p.n_kv;
    let src = row + p.v_off + h * p.head_dim + pair;
    let dst = p.cache_off + (h * p.max_ctx + crow) * p.head_dim + pair;
    v_cache[dst.x] = qkv[src.x];
    v_cache[dst.y] = qkv[src.y];
    return;
  }
  var pos = p.pos0 + t;
  if ((p.flags & 1u) != 0u) { pos = positions[t]; }
  pos = min(pos, p.max_pos - 1u);
  let c = cs[pos * half + i];
  if (slot < p.heads) {
    let ab = row + p.q_off + slot * p.head_dim + pair;
    let r = rope_rotate(qkv[ab.x], qkv[ab.y], c);
    qkv[ab.x] = r.x;
    qkv[ab.y] = r.y;
  } else {
    let h = slot - p.heads;
    let src = row + p.k_off + h * p.head_dim + pair;
    let dst = p.cache_off + (h * p.max_ctx + crow) * p.head_dim + pair;
    let r = rope_rotate(qkv[src.x], qkv[src.y], c);
    k_cache[dst.x] = r.x;
    k_cache[dst.y] = r.y;
  }
}
