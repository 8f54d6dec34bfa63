// kv_append.wgsl for a packed cache (f16, q8_0: the kv_store_*.wgsl included beside it): one
// invocation per unit of KV_CH values of a token's key or value head, so each invocation owns
// whole words (and for q8_0 the whole block its scale covers). Same sources and parameters.
@group(0) @binding(0) var<storage, read> k_src: array<f32>;
@group(0) @binding(1) var<storage, read> v_src: array<f32>;
@group(0) @binding(2) var<storage, read_write> k_cache: KvStore;
@group(0) @binding(3) var<storage, read_write> v_cache: KvStore;
struct P {
  n: u32,
  n_kv: u32,
  head_dim: u32,
  max_ctx: u32,
  pos0: u32,
  src_stride: u32,
  k_off: u32,
  v_off: u32,
  cache_off: u32,
}
@group(0) @binding(4) var<uniform> p: P;
override WG: u32 = 256;

fn kv_layer() -> vec2<u32> { return vec2<u32>(p.cache_off, p.n_kv * p.max_ctx * p.head_dim); }

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
  let g = wg_linear(wid, nwg) * WG + lid;
  let units = p.head_dim / KV_CH;
  let per_t = 2u * p.n_kv * units;  // key units, then value units
  if (g >= p.n * per_t) { return; }
  let t = g / per_t;
  let u = g % per_t;
  let is_v = u >= p.n_kv * units;
  let w = select(u, u - p.n_kv * units, is_v);
  let h = w / units;
  let e0 = (w % units) * KV_CH;
  let dst = p.cache_off + (h * p.max_ctx + (p.pos0 + t) % p.max_ctx) * p.head_dim + e0;
  var x: array<f32, KV_CH>;
  if (is_v) {
    let src = t * p.src_stride + p.v_off + h * p.head_dim + e0;
    for (var j = 0u; j < KV_CH; j++) { x[j] = v_src[src + j]; }
    v_store(dst, x);
  } else {
    let src = t * p.src_stride + p.k_off + h * p.head_dim + e0;
    for (var j = 0u; j < KV_CH; j++) { x[j] = k_src[src + j]; }
    k_store(dst, x);
  }
}
