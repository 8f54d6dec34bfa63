// 16-bit float weights (F16, BF16): two per word, row stride round_up(cols, 8) values, zero
// padded; the includer defines half4(a, b), the four values of two words as f32s.
@group(0) @binding(0) var<storage, read> wq: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read> ws: array<u32>;
var<private> w_rs4: u32;
const W_PADDED: bool = true;  // rows padded past cols (x reads masked)
const W_STAGE_X: bool = false;  // matvec: x through shared memory (measured on the H200)
const W_CHUNK: u32 = 8u;

fn w_setup(cols: u32) {
  _ = &ws;
  w_rs4 = (cols + 7u) / 8u;
}
fn w_nchunks(cols: u32) -> u32 { return (cols + 7u) / 8u; }
fn w_quad(row: u32, q: u32) -> vec4<f32> {
  let v = wq[row * w_rs4 + q / 2u];
  if ((q & 1u) == 0u) { return half4(v.x, v.y); }
  return half4(v.z, v.w);
}
fn w_chunk(row: u32, c: u32) -> f32 {
  let v = wq[row * w_rs4 + c];
  return dot(half4(v.x, v.y), xq(2u * c)) + dot(half4(v.z, v.w), xq(2u * c + 1u));
}
// Batched kernels (linear_batched.wgsl): chunk c of a row loaded once, then decoded in W_PARTS
// vec4s; part j holds x elements 4 * wc_xoff(c, j) .. + 3.
const W_PARTS: u32 = 2u;
struct WChunk { v: vec4<u32> }
fn wc_load(row: u32, c: u32) -> WChunk { return WChunk(wq[row * w_rs4 + c]); }
fn wc_part(ch: WChunk, j: u32) -> vec4<f32> {
  if (j == 0u) { return half4(ch.v.x, ch.v.y); }
  return half4(ch.v.z, ch.v.w);
}
fn wc_xoff(c: u32, j: u32) -> u32 { return 2u * c + j; }
