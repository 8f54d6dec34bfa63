// RoPE in place on x[t * stride + offset + h * head_dim + d], t < n, h < heads, with a table of
// (cos, sin) per position and pair: cs[pos * (head_dim / 2) + i]. pos = positions[t] or
// pos0 + t. interleaved: pairs (2i, 2i+1) (GGML "norm"); else (i, i + head_dim/2) (neox / HF).
//!include "llm/rope_pair.wgsl"
@group(0) @binding(0) var<storage, read_write> x: array<f32>;
@group(0) @binding(1) var<storage, read> cs: array<vec2<f32>>;
@group(0) @binding(2) var<storage, read> positions: array<u32>;
struct P {
  n: u32,
  heads: u32,
  head_dim: u32,
  stride: u32,
  offset: u32,
  pos0: u32,
  flags: u32,  // 1: positions from the buffer, 2: interleaved pairs
  max_pos: u32,
}
@group(0) @binding(3) var<uniform> p: P;
override WG: u32 = 256;

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
  let half = p.head_dim / 2u;
  let g = wg_linear(wid, nwg) * WG + lid;
  if (g >= p.n * p.heads * half) { return; }
  let i = g % half;
  let h = (g / half) % p.heads;
  let t = g / (half * p.heads);
  var pos = p.pos0 + t;
  if ((p.flags & 1u) != 0u) { pos = positions[t]; }
  pos = min(pos, p.max_pos - 1u);
  let ab = t * p.stride + p.offset + h * p.head_dim + rope_pair(i, half, (p.flags & 2u) != 0u);
  let r = rope_rotate(x[ab.x], x[ab.y], cs[pos * half + i]);
  x[ab.x] = r.x;
  x[ab.y] = r.y;
}
