// Q6_K weights: per 256-element super-block 13 vec4<u32>: ql[128] bytes ([0..7]), qh[64]
// ([8..11]), int8 scales[16] ([12]); scales binding: f32 d per block, index row * nb + b.
// As ggml's dequantize_row_q6_K: in half h (128 elements), for l in 0..31, quarter k (0..3)
// element 128h + 32k + l = d * sc[8h + l/16 + 2k] * (6-bit q - 32), the low 4 bits from
// ql[64h + l + 32(k&1)] (>> 4 for k >= 2), the high 2 from qh[32h + l] >> 2k.
@group(0) @binding(0) var<storage, read> wq: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read> ws: array<u32>;
var<private> w_rs4: u32;
var<private> w_nb: u32;
const W_PADDED: bool = false;  // rows padded past cols (x reads masked)
const W_STAGE_X: bool = false;  // matvec: x through shared memory (measured on the H200)
const W_CHUNK: u32 = 64u;

fn w_setup(cols: u32) {
  w_nb = cols / 256u;
  w_rs4 = w_nb * 13u;
}
fn w_nchunks(cols: u32) -> u32 { return cols / 64u; }
fn q6k_sc(sv: vec4<u32>, k: u32) -> f32 {
  return f32(bitcast<i32>(((sv[k / 4u] >> (8u * (k & 3u))) & 0xffu) << 24u) >> 24u);
}
fn w_quad(row: u32, q: u32) -> vec4<f32> {
  let b = q / 64u;
  let eb = (q & 63u) * 4u;
  let h = eb / 128u;
  let r = eb & 127u;
  let k = r / 32u;
  let l = r & 31u;
  let base = row * w_rs4 + b * 13u;
  let qlb = 64u * h + l + 32u * (k & 1u);
  let qhb = 128u + 32u * h + l;
  let ql = (wq[base + qlb / 16u][(qlb / 4u) & 3u] >> (4u * (k / 2u))) & 0x0f0f0f0fu;
  let qh = (wq[base + qhb / 16u][(qhb / 4u) & 3u] >> (2u * k)) & 0x03030303u;
  let d = bitcast<f32>(ws[row * w_nb + b]);
  return bytes_f(ql | (qh << 4u), 32.0) * (d * q6k_sc(wq[base + 12u], 8u * h + l / 16u + 2u * k));
}
// One word of ql[l], ql[l+32], qh[l] (4 consecutive l): the four quarters' dot products.
fn q6k_word(qa: u32, qb: u32, qh: u32, x0: u32) -> vec4<f32> {
  let q1 = (qa & 0x0f0f0f0fu) | ((qh & 0x03030303u) << 4u);
  let q2 = (qb & 0x0f0f0f0fu) | (((qh >> 2u) & 0x03030303u) << 4u);
  let q3 = ((qa >> 4u) & 0x0f0f0f0fu) | (((qh >> 4u) & 0x03030303u) << 4u);
  let q4 = ((qb >> 4u) & 0x0f0f0f0fu) | (((qh >> 6u) & 0x03030303u) << 4u);
  return vec4<f32>(dot(bytes_f(q1, 32.0), xq(x0)), dot(bytes_f(q2, 32.0), xq(x0 + 8u)),
                   dot(bytes_f(q3, 32.0), xq(x0 + 16u)), dot(bytes_f(q4, 32.0), xq(x0 + 24u)));
}
fn w_chunk(row: u32, c: u32) -> f32 {
  let b = c / 4u;
  let cc = c & 3u;
  let h = cc / 2u;
  let p = cc & 1u;
  let base = row * w_rs4 + b * 13u;
  let qa = wq[base + 4u * h + p];
  let qb = wq[base + 4u * h + 2u + p];
  let qh = wq[base + 8u + 2u * h + p];
  let sv = wq[base + 12u];
  let x0 = 64u * b + 32u * h + 4u * p;
  let s = q6k_word(qa.x, qb.x, qh.x, x0) + q6k_word(qa.y, qb.y, qh.y, x0 + 1u) + q6k_word(qa.z, qb.z, qh.z, x0 + 2u) +
          q6k_word(qa.w, qb.w, qh.w, x0 + 3u);
  let t = 8u * h + p;
  let d = bitcast<f32>(ws[row * w_nb + b]);
  return d * (q6k_sc(sv, t) * s.x + q6k_sc(sv, t + 2u) * s.y + q6k_sc(sv, t + 4u) * s.z + q6k_sc(sv, t + 6u) * s.w);
}
// Batched kernels (linear_batched.wgsl): chunk c (4 words each of ql[l], ql[l+32], qh[l] in half
// h of super-block c / 4) loaded once, then decoded in W_PARTS vec4s as w_quad does; part
// j = 4 * quarter + word holds x elements 4 * wc_xoff(c, j) .. + 3.
const W_PARTS: u32 = 16u;
struct WChunk { qa: vec4<u32>, qb: vec4<u32>, qh: vec4<u32>, s: vec4<f32> }  // s: d * scale of each quarter
fn wc_load(row: u32, c: u32) -> WChunk {
  let b = c / 4u;
  let cc = c & 3u;
  let h = cc / 2u;
  let p = cc & 1u;
  let base = row * w_rs4 + b * 13u;
  let sv = wq[base + 12u];
  let d = bitcast<f32>(ws[row * w_nb + b]);
  let t = 8u * h + p;
  let s = d * vec4<f32>(q6k_sc(sv, t), q6k_sc(sv, t + 2u), q6k_sc(sv, t + 4u), q6k_sc(sv, t + 6u));
  return WChunk(wq[base + 4u * h + p], wq[base + 4u * h + 2u + p], wq[base + 8u + 2u * h + p], s);
}
fn wc_part(ch: WChunk, j: u32) -> vec4<f32> {
  let k = j / 4u;  // quarter
  let i = j & 3u;  // word
  let q = select(ch.qa[i], ch.qb[i], (k & 1u) == 1u) >> (4u * (k / 2u));
  let qh = (ch.qh[i] >> (2u * k)) & 0x03030303u;
  return bytes_f((q & 0x0f0f0f0fu) | (qh << 4u), 32.0) * ch.s[k];
}
fn wc_xoff(c: u32, j: u32) -> u32 {
  let cc = c & 3u;
  return 64u * (c / 4u) + 32u * (cc / 2u) + 4u * (cc & 1u) + 8u * (j / 4u) + (j & 3u);
}
