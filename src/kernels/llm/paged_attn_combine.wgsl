// Adds up the partials of paged_attn.wgsl: for batch row tok at position pos = positions[tok],
// the splits 0 .. pos / split_len of [tok][n_heads][n_splits][head_dim + 2] (acc, m, l), in
// order, into o[tok * o_stride + o_off + h * head_dim + d]. One invocation per output element.
@group(0) @binding(0) var<storage, read> part: array<f32>;
@group(0) @binding(1) var<storage, read> positions: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
struct P {
  n: u32,
  n_heads: u32,
  n_splits: u32,
  head_dim: u32,
  o_stride: u32,
  o_off: u32,
  split_len: u32,
}
@group(0) @binding(3) var<uniform> p: P;
override WG: u32 = 128;
//!include "llm/attn_merge.wgsl"

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
  let g = wg_linear(wid, nwg) * WG + lid;
  if (g >= p.n * p.n_heads * p.head_dim) { return; }
  let d = g % p.head_dim;
  let th = g / p.head_dim;  // tok * n_heads + h
  let tok = th / p.n_heads;
  let h = th % p.n_heads;
  let ns = positions[tok] / p.split_len + 1u;
  let b = th * p.n_splits * (p.head_dim + 2u);
  out[tok * p.o_stride + p.o_off + h * p.head_dim + d] = merge_splits(b, ns, p.head_dim, d);
}
