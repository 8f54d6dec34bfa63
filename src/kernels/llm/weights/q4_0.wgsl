// Q4_0 weights: per 32-element block 4 words holding the 16 nibble bytes (low nibbles are
// elements 0..15, high 16..31, value (q - 8) * d); scales as Q8_0 (f16, two per word).
@group(0) @binding(0) var<storage, read> wq: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read> ws: array<u32>;
var<private> w_rs4: u32;
var<private> w_nb: u32;
const W_PADDED: bool = false;  // rows padded past cols (x reads masked)
const W_STAGE_X: bool = true;  // matvec: x through shared memory (measured on the H200)
const W_CHUNK: u32 = 32u;

fn w_setup(cols: u32) {
  w_rs4 = cols / 32u;
  w_nb = cols / 32u;
}
fn w_nchunks(cols: u32) -> u32 { return cols / 32u; }
fn w_scale(row: u32, b: u32) -> f32 {
  let i = row * w_nb + b;
  return half_at(ws[i / 2u], i);
}
fn w_quad(row: u32, q: u32) -> vec4<f32> {
  let b = q / 8u;
  let qi = q & 7u;
  let w = wq[row * w_rs4 + b][qi & 3u] >> (select(0u, 4u, qi >= 4u));
  return bytes_f(w & 0x0f0f0f0fu, 8.0) * w_scale(row, b);
}
// Word i of a block: low nibbles are elements 4i..4i+3, high ones 16+4i..16+4i+3.
fn q4_0_word(w: u32, xl: vec4<f32>, xh: vec4<f32>) -> f32 {
  return dot(bytes_f(w & 0x0f0f0f0fu, 8.0), xl) + dot(bytes_f((w >> 4u) & 0x0f0f0f0fu, 8.0), xh);
}
fn w_chunk(row: u32, c: u32) -> f32 {
  let v = wq[row * w_rs4 + c];
  let x0 = 8u * c;
  let s = q4_0_word(v.x, xq(x0), xq(x0 + 4u)) + q4_0_word(v.y, xq(x0 + 1u), xq(x0 + 5u)) +
          q4_0_word(v.z, xq(x0 + 2u), xq(x0 + 6u)) + q4_0_word(v.w, xq(x0 + 3u), xq(x0 + 7u));
  return s * w_scale(row, c);
}
// Batched kernels (linear_batched.wgsl): chunk c of a row loaded once, then decoded in W_PARTS
// vec4s; part j holds x elements 4 * wc_xoff(c, j) .. + 3 (parts 0-3: the low nibbles of words
// 0-3, elements 0-15; parts 4-7: the high nibbles, elements 16-31).
const W_PARTS: u32 = 8u;
struct WChunk { v: vec4<u32>, d: f32 }
fn wc_load(row: u32, c: u32) -> WChunk { return WChunk(wq[row * w_rs4 + c], w_scale(row, c)); }
fn wc_part(ch: WChunk, j: u32) -> vec4<f32> {
  let w = ch.v[j & 3u] >> select(0u, 4u, j >= 4u);
  return bytes_f(w & 0x0f0f0f0fu, 8.0) * ch.d;
}
fn wc_xoff(c: u32, j: u32) -> u32 { return 8u * c + j; }
