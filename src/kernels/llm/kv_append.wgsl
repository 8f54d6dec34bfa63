// Writes the K and V rows of n new tokens into the cache at positions pos0 .. pos0 + n - 1.
// Source: k_src[t * src_stride + k_off + h * head_dim + d] (and v_src with v_off); cache
// layout per layer: [n_kv][max_ctx][head_dim] f32 starting at element cache_off.
@group(0) @binding(0) var<storage, read> k_src: array<f32>;
@group(0) @binding(1) var<storage, read> v_src: array<f32>;
@group(0) @binding(2) var<storage, read_write> k_cache: array<f32>;
@group(0) @binding(3) var<storage, read_write> v_cache: array<f32>;
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

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
  let g = wg_linear(wid, nwg) * WG + lid;
  let per_t = p.n_kv * p.head_dim;
  if (g >= p.n * per_t) { return; }
  let t = g / per_t;
  let hd = g % per_t;
  let h = hd / p.head_dim;
  let d = hd % p.head_dim;
  let dst = p.cache_off + (h * p.max_ctx + (p.pos0 + t) % p.max_ctx) * p.head_dim + d;
  k_cache[dst] = k_src[t * p.src_stride + p.k_off + hd];
  v_cache[dst] = v_src[t * p.src_stride + p.v_off + hd];
}
