// Q8_0 weights: per 32-element block 8 words of int8 quants; scales: f16 d per block, two per
// word, block index row * nb + b.
@group(0) @binding(0) var<storage, read> wq: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read> ws: array<u32>;
var<private> w_rs4: u32;
var<private> w_nb: u32;
const W_PADDED: bool = false;  // rows padded past cols (x reads masked)
const W_STAGE_X: bool = false;  // matvec: x through shared memory (measured on the H200)
const W_CHUNK: u32 = 16u;

fn w_setup(cols: u32) {
  w_rs4 = cols / 16u;
  w_nb = cols / 32u;
}
fn w_nchunks(cols: u32) -> u32 { return cols / 16u; }
fn w_scale(row: u32, b: u32) -> f32 {
  let i = row * w_nb + b;
  return half_at(ws[i / 2u], i);
}
fn w_quad(row: u32, q: u32) -> vec4<f32> {
  return sbytes_f(wq[row * w_rs4 + q / 4u][q & 3u]) * w_scale(row, q / 8u);
}
fn w_chunk(row: u32, c: u32) -> f32 {
  let v = wq[row * w_rs4 + c];
  let s = dot(sbytes_f(v.x), xq(4u * c)) + dot(sbytes_f(v.y), xq(4u * c + 1u)) +
          dot(sbytes_f(v.z), xq(4u * c + 2u)) + dot(sbytes_f(v.w), xq(4u * c + 3u));
  return s * w_scale(row, c / 2u);
}
// Batched kernels (linear_batched.wgsl): chunk c of a row loaded once, then decoded in W_PARTS
// vec4s; part j holds x elements 4 * wc_xoff(c, j) .. + 3.
const W_PARTS: u32 = 4u;
struct WChunk { v: vec4<u32>, d: f32 }
fn wc_load(row: u32, c: u32) -> WChunk { return WChunk(wq[row * w_rs4 + c], w_scale(row, c / 2u)); }
fn wc_part(ch: WChunk, j: u32) -> vec4<f32> { return sbytes_f(ch.v[j]) * ch.d; }
fn wc_xoff(c: u32, j: u32) -> u32 { return 4u * c + j; }
