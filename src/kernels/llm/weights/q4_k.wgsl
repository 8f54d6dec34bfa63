// Q4_K weights: the GGUF 144-byte super-blocks of 256 elements unchanged, 9 vec4<u32> each:
// [0] = d|dmin (f16 pair), 12 bytes of 6-bit scales/mins; [1..8] = 128 bytes of nibbles.
// As ggml's dequantize_row_q4_K: group j (64 elements) uses scale/min 2j for its low nibbles
// (elements 64j..64j+31) and 2j+1 for its high nibbles (64j+32..64j+63).
@group(0) @binding(0) var<storage, read> wq: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read> ws: array<u32>;
var<private> w_rs4: u32;
const W_PADDED: bool = false;  // rows padded past cols (x reads masked)
const W_STAGE_X: bool = false;  // matvec: x through shared memory (measured on the H200)
const W_CHUNK: u32 = 32u;

fn w_setup(cols: u32) {
  _ = &ws;
  w_rs4 = cols / 256u * 9u;
}
fn w_nchunks(cols: u32) -> u32 { return cols / 32u; }
fn q4k_byte(h: vec4<u32>, k: u32) -> u32 { return (h[1u + k / 4u] >> (8u * (k & 3u))) & 0xffu; }
// (scale, min) of sub-block j (0..7), as ggml's get_scale_min_k4.
fn q4k_scale_min(h: vec4<u32>, j: u32) -> vec2<f32> {
  if (j < 4u) { return vec2<f32>(f32(q4k_byte(h, j) & 63u), f32(q4k_byte(h, j + 4u) & 63u)); }
  let sc = (q4k_byte(h, j + 4u) & 0xfu) | ((q4k_byte(h, j - 4u) >> 6u) << 4u);
  let mn = (q4k_byte(h, j + 4u) >> 4u) | ((q4k_byte(h, j) >> 6u) << 4u);
  return vec2<f32>(f32(sc), f32(mn));
}
fn w_quad(row: u32, q: u32) -> vec4<f32> {
  let b = q / 64u;
  let eb = (q & 63u) * 4u;  // element in block
  let j = eb / 64u;
  let l = eb & 63u;
  let hi = l >= 32u;
  let byte = 32u * j + (l & 31u);
  let base = row * w_rs4 + b * 9u;
  let h = wq[base];
  let w = wq[base + 1u + byte / 16u][(byte / 4u) & 3u] >> select(0u, 4u, hi);
  let dm = unpack2x16float(h.x);
  let sm = q4k_scale_min(h, 2u * j + select(0u, 1u, hi));
  return bytes_f(w & 0x0f0f0f0fu, 0.0) * (dm.x * sm.x) - dm.y * sm.y;
}
// One qs word: (dot low nibbles . xl, dot high . xh, sum xl, sum xh).
fn q4k_word(w: u32, xl: vec4<f32>, xh: vec4<f32>) -> vec4<f32> {
  return vec4<f32>(dot(bytes_f(w & 0x0f0f0f0fu, 0.0), xl), dot(bytes_f((w >> 4u) & 0x0f0f0f0fu, 0.0), xh),
                   hsum(xl), hsum(xh));
}
fn w_chunk(row: u32, c: u32) -> f32 {
  let b = c / 8u;
  let cc = c & 7u;
  let j = cc / 2u;
  let base = row * w_rs4 + b * 9u;
  let h = wq[base];
  let v = wq[base + 1u + cc];
  let x0 = 64u * b + 16u * j + 4u * (cc & 1u);  // vec4 index of the first low-nibble element
  let a = q4k_word(v.x, xq(x0), xq(x0 + 8u)) + q4k_word(v.y, xq(x0 + 1u), xq(x0 + 9u)) +
          q4k_word(v.z, xq(x0 + 2u), xq(x0 + 10u)) + q4k_word(v.w, xq(x0 + 3u), xq(x0 + 11u));
  let dm = unpack2x16float(h.x);
  let s1 = q4k_scale_min(h, 2u * j);
  let s2 = q4k_scale_min(h, 2u * j + 1u);
  return dm.x * (s1.x * a.x + s2.x * a.y) - dm.y * (s1.y * a.z + s2.y * a.w);
}
// Batched kernels (linear_batched.wgsl): chunk c (qs vec4 c % 8 of super-block c / 8) loaded
// once with its header, then decoded in W_PARTS vec4s as w_quad does; part j holds x elements
// 4 * wc_xoff(c, j) .. + 3 (parts 0-3: the low nibbles of words 0-3, parts 4-7: the high ones).
const W_PARTS: u32 = 8u;
struct WChunk { v: vec4<u32>, lo: vec2<f32>, hi: vec2<f32>, x0: u32 }  // (d * scale, dmin * min) of each half
fn wc_load(row: u32, c: u32) -> WChunk {
  let b = c / 8u;
  let cc = c & 7u;
  let j = cc / 2u;
  let base = row * w_rs4 + b * 9u;
  let h = wq[base];
  let dm = unpack2x16float(h.x);
  let s1 = q4k_scale_min(h, 2u * j);
  let s2 = q4k_scale_min(h, 2u * j + 1u);
  return WChunk(wq[base + 1u + cc], vec2<f32>(dm.x * s1.x, dm.y * s1.y), vec2<f32>(dm.x * s2.x, dm.y * s2.y),
                64u * b + 16u * j + 4u * (cc & 1u));
}
fn wc_part(ch: WChunk, j: u32) -> vec4<f32> {
  let hi = j >= 4u;
  let w = ch.v[j & 3u] >> select(0u, 4u, hi);
  let sm = select(ch.lo, ch.hi, hi);
  return bytes_f(w & 0x0f0f0f0fu, 0.0) * sm.x - sm.y;
}
fn wc_xoff(c: u32, j: u32) -> u32 {
  let cc = c & 7u;
  return 64u * (c / 8u) + 16u * (cc / 2u) + 4u * (cc & 1u) + select(j, j + 4u, j >= 4u);
}
