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
