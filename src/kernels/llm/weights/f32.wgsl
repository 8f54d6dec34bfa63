// F32 weights: row stride round_up(cols, 4) floats, zero padded. The scales binding is the data.
@group(0) @binding(0) var<storage, read> wq: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read> ws: array<u32>;
var<private> w_rs4: u32;
const W_PADDED: bool = true;  // rows padded past cols (x reads masked)
const W_STAGE_X: bool = false;  // matvec: x through shared memory (measured on the H200)
const W_CHUNK: u32 = 4u;  // elements per w_chunk (one vec4<u32> of weights)

fn w_setup(cols: u32) {
  _ = &ws;
  w_rs4 = (cols + 3u) / 4u;
}
fn w_nchunks(cols: u32) -> u32 { return (cols + 3u) / 4u; }
// Elements 4q .. 4q+3 of a row.
fn w_quad(row: u32, q: u32) -> vec4<f32> { return bitcast<vec4<f32>>(wq[row * w_rs4 + q]); }
// Dot product of chunk c of a row with x (read through xq, x as vec4 by index).
fn w_chunk(row: u32, c: u32) -> f32 { return dot(bitcast<vec4<f32>>(wq[row * w_rs4 + c]), xq(c)); }
// Batched kernels (linear_batched.wgsl): chunk c of a row loaded once, then decoded in W_PARTS
// vec4s; part j holds x elements 4 * wc_xoff(c, j) .. + 3.
const W_PARTS: u32 = 1u;
struct WChunk { v: vec4<u32> }
fn wc_load(row: u32, c: u32) -> WChunk { return WChunk(wq[row * w_rs4 + c]); }
fn wc_part(ch: WChunk, j: u32) -> vec4<f32> { return bitcast<vec4<f32>>(ch.v); }
fn wc_xoff(c: u32, j: u32) -> u32 { return c; }
