// matvec_q8.wgsl's ROPE epilogue (rope_store.wgsl): the rows are whole heads from head p.head0
// on, (cos, sin) from the table bound at yd's binding 6, y as f32 bits.
@group(0) @binding(7) var<storage, read> positions: array<u32>;
@group(0) @binding(8) var<storage, read_write> k_cache: array<f32>;
@group(0) @binding(9) var<storage, read_write> v_cache: array<f32>;

fn rope_head(ra: u32) -> u32 { return p.head0 + ra / p.head_dim; }
fn rope_cs(i: u32) -> vec2<f32> { return bitcast<vec2<f32>>(yd[i]); }
fn rope_set_q(i: u32, v: f32) { y[i] = bitcast<u32>(v); }
//!include "llm/rope_store.wgsl"
