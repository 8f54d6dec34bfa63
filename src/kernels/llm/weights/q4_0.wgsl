// Q4_0 weights: per 32-element block 4 words holding the 16 nibble bytes (low nibbles are
// elements 0..15, high 16..31, value (q - 8) * d); scales as Q8_0 (f16, two per word).
@group(0) @binding(0) var<storage, read> wq: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read> ws: array<u32>;
var<private> w_rs4: u32;
var<private> w_nb: u32;
const W_CHUNK: u32 = 32u;

fn w_setup(cols: u32) {
  w_rs4 = cols / 32u;
  w_nb = cols / 32u;
}
fn w_nchunks(cols: u32) -> u32 { return cols / 32u; }
fn w_scale(row: u32, b: u32) -> f32 {
  let i = row * w_nb + b;
  return unpack2x16float(ws[i / 2u])[i & 1u];
}
fn w_quad(row: u32, q: u32) -> vec4<f32> {
  let b = q / 8u;
  let qi = q & 7u;
  let w = wq[row * w_rs4 + b][qi & 3u] >> (select(0u, 4u, qi >= 4u));
  return (u8x4(w & 0x0f0f0f0fu) - 8.0) * w_scale(row, b);
}
fn w_chunk(row: u32, c: u32) -> f32 {
  let v = wq[row * w_rs4 + c];
  let x0 = 8u * c;
  var s = 0.0;
  for (var i = 0u; i < 4u; i++) {
    let xl = xq(x0 + i);
    let xh = xq(x0 + 4u + i);
    s += dot(u8x4(v[i] & 0x0f0f0f0fu), xl) + dot(u8x4((v[i] >> 4u) & 0x0f0f0f0fu), xh) - 8.0 * (hsum(xl) + hsum(xh));
  }
  return s * w_scale(row, c);
}
