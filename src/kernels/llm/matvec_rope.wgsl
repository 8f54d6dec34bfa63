// matvec.wgsl's ROPE epilogue (rope_store.wgsl): the rows are all of a fused QKV weight, (cos,
// sin) from its own binding.
@group(0) @binding(5) var<storage, read> rope_table: array<vec2<f32>>;
@group(0) @binding(6) var<storage, read> positions: array<u32>;
@group(0) @binding(7) var<storage, read_write> k_cache: array<f32>;
@group(0) @binding(8) var<storage, read_write> v_cache: array<f32>;

fn rope_head(ra: u32) -> u32 { return ra / p.head_dim; }
fn rope_cs(i: u32) -> vec2<f32> { return rope_table[i]; }
fn rope_set_q(i: u32, v: f32) { y[i] = v; }
//!include "llm/rope_store.wgsl"
