// Q6_K weights, repacked at load (ops/llm/weights.h; lossless): a row is its 32-element
// sub-blocks' low nibbles, one vec4<u32> each as Q4_0's (byte b: element b's in the low nibble,
// 16 + b's in the high one), then their top two bits, a vec2<u32> each (two per vec4: x y sub-block
// 2t, z w 2t + 1; word h, bits 8k + 2i: element 16h + 4i + k's); scales binding: per 256-element
// super-block 5 words, f32 d, then the 16 int8 scales (scale 2s: sub-block s's elements 0..15,
// 2s + 1: 16..31). Element value d * sc * (q - 32), as ggml's dequantize_row_q6_K.
@group(0) @binding(0) var<storage, read> wq: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read> ws: array<u32>;
var<private> w_rs4: u32;
var<private> w_lo4: u32;
var<private> w_nb: u32;
const W_PADDED: bool = false;  // rows padded past cols (x reads masked)
const W_STAGE_X: bool = false;  // matvec: x through shared memory (measured on the H200)
const W_CHUNK: u32 = 32u;

fn w_setup(cols: u32) {
  w_nb = cols / 256u;
  w_lo4 = cols / 32u;
  w_rs4 = w_lo4 + cols / 64u;
}
fn w_nchunks(cols: u32) -> u32 { return cols / 32u; }
// Sub-block s of a row: its low nibbles, and the vec4 holding its top bits (and its neighbour's).
fn q6k_lo(row: u32, s: u32) -> vec4<u32> { return wq[row * w_rs4 + s]; }
fn q6k_hi4(row: u32, s: u32) -> vec4<u32> { return wq[row * w_rs4 + w_lo4 + s / 2u]; }
fn q6k_hi(h4: vec4<u32>, s: u32) -> vec2<u32> { return select(h4.xy, h4.zw, (s & 1u) == 1u); }
// Word j (0..7: elements 4j .. 4j + 3) of a sub-block as four unsigned 6-bit quants.
fn q6k_word(lo: vec4<u32>, hi: vec2<u32>, j: u32) -> u32 {
  let l = (lo[j & 3u] >> select(0u, 4u, j >= 4u)) & 0x0f0f0f0fu;
  return l | (((select(hi.x, hi.y, j >= 4u) >> (2u * (j & 3u))) & 0x03030303u) << 4u);
}
// The scale words of super-block sb of a row: d, and the word of sub-block s's two int8 scales
// (in its low half for even s).
fn q6k_d(row: u32, sb: u32) -> f32 { return bitcast<f32>(ws[(row * w_nb + sb) * 5u]); }
fn q6k_scw(row: u32, s: u32) -> u32 { return ws[(row * w_nb + s / 8u) * 5u + 1u + (s & 7u) / 2u]; }
// The two int8 scales in the low 16 bits of v.
fn q6k_sc2(v: u32) -> vec2<f32> {
  return vec2<f32>(f32(bitcast<i32>(v << 24u) >> 24u), f32(bitcast<i32>(v << 16u) >> 24u));
}
// (d * scale) of sub-block s's two halves.
fn q6k_sub(row: u32, s: u32) -> vec2<f32> {
  return q6k_d(row, s / 8u) * q6k_sc2(q6k_scw(row, s) >> (16u * (s & 1u)));
}
fn w_quad(row: u32, q: u32) -> vec4<f32> {
  let s = q / 8u;
  let j = q & 7u;
  let w = q6k_word(q6k_lo(row, s), q6k_hi(q6k_hi4(row, s), s), j);
  return bytes_f(w, 32.0) * q6k_sub(row, s)[j / 4u];
}
fn w_chunk(row: u32, c: u32) -> f32 {
  let lo = q6k_lo(row, c);
  let hi = q6k_hi(q6k_hi4(row, c), c);
  let x0 = 8u * c;
  var a = vec2<f32>(0.0);
  for (var j = 0u; j < 4u; j++) {
    a.x += dot(bytes_f(q6k_word(lo, hi, j), 32.0), xq(x0 + j));
    a.y += dot(bytes_f(q6k_word(lo, hi, j + 4u), 32.0), xq(x0 + 4u + j));
  }
  return dot(q6k_sub(row, c), a);
}
// Batched kernels (linear_batched.wgsl): chunk c (sub-block c) loaded once with its scales, then
// decoded in W_PARTS vec4s as w_quad does; part j holds x elements 4 * wc_xoff(c, j) .. + 3.
const W_PARTS: u32 = 8u;
struct WChunk { lo: vec4<u32>, hi: vec2<u32>, s: vec2<f32> }  // s: d * scale of each half
fn wc_load(row: u32, c: u32) -> WChunk { return WChunk(q6k_lo(row, c), q6k_hi(q6k_hi4(row, c), c), q6k_sub(row, c)); }
fn wc_part(ch: WChunk, j: u32) -> vec4<f32> { return bytes_f(q6k_word(ch.lo, ch.hi, j), 32.0) * ch.s[j / 4u]; }
fn wc_xoff(c: u32, j: u32) -> u32 { return 8u * c + j; }
