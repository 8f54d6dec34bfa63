// Q4_K weights, repacked at load (ops/llm/weights.h; lossless): per 32-element sub-block s of a
// row one vec4<u32> of nibbles as Q4_0's (byte b: element b in the low nibble, 16 + b in the
// high one); scales binding: per 256-element super-block 5 words, d | dmin (f16 pair), then
// sc | mn << 8 (the 6-bit scale and min as bytes) of sub-blocks 2i and 2i + 1 in word 1 + i.
// Element value d * sc * q - dmin * mn, as ggml's dequantize_row_q4_K.
@group(0) @binding(0) var<storage, read> wq: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read> ws: array<u32>;
var<private> w_rs4: u32;
var<private> w_nb: u32;
const W_PADDED: bool = false;  // rows padded past cols (x reads masked)
const W_STAGE_X: bool = false;  // matvec: x through shared memory (measured on the H200)
const W_CHUNK: u32 = 32u;

fn w_setup(cols: u32) {
  w_rs4 = cols / 32u;
  w_nb = cols / 256u;
}
fn w_nchunks(cols: u32) -> u32 { return cols / 32u; }
// The scale words of super-block sb of a row: d | dmin, and the word of sub-block s's (sc, mn)
// (in its low half for even s).
fn q4k_head(row: u32, sb: u32) -> u32 { return ws[(row * w_nb + sb) * 5u]; }
fn q4k_sm(row: u32, s: u32) -> u32 { return ws[(row * w_nb + s / 8u) * 5u + 1u + (s & 7u) / 2u]; }
// (d * sc, dmin * mn) of a sub-block from d | dmin and its 16 bits of (sc, mn).
fn q4k_dm(head: u32, sm: u32) -> vec2<f32> {
  let dm = unpack2x16float(head);
  return vec2<f32>(dm.x * f32(sm & 0xffu), dm.y * f32((sm >> 8u) & 0xffu));
}
fn q4k_sub(row: u32, s: u32) -> vec2<f32> {
  return q4k_dm(q4k_head(row, s / 8u), q4k_sm(row, s) >> (16u * (s & 1u)));
}
fn w_quad(row: u32, q: u32) -> vec4<f32> {
  let s = q / 8u;
  let qi = q & 7u;
  let w = wq[row * w_rs4 + s][qi & 3u] >> select(0u, 4u, qi >= 4u);
  let sm = q4k_sub(row, s);
  return bytes_f(w & 0x0f0f0f0fu, 0.0) * sm.x - sm.y;
}
fn w_chunk(row: u32, c: u32) -> f32 {
  let v = wq[row * w_rs4 + c];
  let x0 = 8u * c;
  var a = 0.0;
  var sx = 0.0;
  for (var i = 0u; i < 4u; i++) {
    let xl = xq(x0 + i);
    let xh = xq(x0 + 4u + i);
    a += dot(bytes_f(v[i] & 0x0f0f0f0fu, 0.0), xl) + dot(bytes_f((v[i] >> 4u) & 0x0f0f0f0fu, 0.0), xh);
    sx += hsum(xl) + hsum(xh);
  }
  let sm = q4k_sub(row, c);
  return sm.x * a - sm.y * sx;
}
// Batched kernels (linear_batched.wgsl): chunk c (sub-block c) loaded once with its scale and
// min, then decoded in W_PARTS vec4s as w_quad does; part j holds x elements 4 * wc_xoff(c, j)
// .. + 3 (parts 0-3: the low nibbles, elements 0-15; parts 4-7: the high ones, 16-31).
const W_PARTS: u32 = 8u;
struct WChunk { v: vec4<u32>, sm: vec2<f32> }  // (d * sc, dmin * mn)
fn wc_load(row: u32, c: u32) -> WChunk { return WChunk(wq[row * w_rs4 + c], q4k_sub(row, c)); }
fn wc_part(ch: WChunk, j: u32) -> vec4<f32> {
  let w = ch.v[j & 3u] >> select(0u, 4u, j >= 4u);
  return bytes_f(w & 0x0f0f0f0fu, 0.0) * ch.sm.x - ch.sm.y;
}
fn wc_xoff(c: u32, j: u32) -> u32 { return 8u * c + j; }
