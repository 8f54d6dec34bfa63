// Q6_K weights (weights/q6_k.wgsl, repacked: a sub-block of 32 is Q4_0's nibble vec4, a vec2 of
// top bits and two int8 scales, one per 16 elements) against 8-bit activations (q8_act.wgsl). A
// unit is two sub-blocks (x blocks 2u and 2u + 1: two nibble vec4s, one top-bits vec4, one scale
// word); per 16 elements (one scale):
//   sum = d * dx * sc * (sum q * qx - 32 * sum qx).
// MV_HALF (a prelude constant, matvec_q8.wgsl only): the matvec's unit is one sub-block instead.
const MQ_UB: u32 = 2u;      // x blocks per unit
const MQ_SW: u32 = 4u;      // matmul: words per scale
const MQ_MIN: bool = false;  // matmul: scales come with a min
const MV_UE: u32 = select(64u, 32u, MV_HALF);  // matvec_q8.wgsl: elements per unit
// x_slot's swizzle (q8_act.wgsl): unit u's vec4s 4u .. 4u + 3, or (MV_HALF) 2u, 2u + 1.
const MV_SWM: u32 = select(3u, 1u, MV_HALF);
const MV_SWS: u32 = 0u;

// A sub-block's quants (lo, hi) dotted with an x block (xa: its quants 0..15, xb: 16..31, e: its
// (d, half sums)) and scaled by its two scales (sc: the low 16 bits).
fn q6k_dotx(lo: vec4<u32>, hi: vec2<u32>, sc: u32, xa: vec4<u32>, xb: vec4<u32>, e: vec2<u32>) -> f32 {
  let s0 = dot4I8Packed(q6k_word(lo, hi, 0u), xa.x) + dot4I8Packed(q6k_word(lo, hi, 1u), xa.y) +
           dot4I8Packed(q6k_word(lo, hi, 2u), xa.z) + dot4I8Packed(q6k_word(lo, hi, 3u), xa.w);
  let s1 = dot4I8Packed(q6k_word(lo, hi, 4u), xb.x) + dot4I8Packed(q6k_word(lo, hi, 5u), xb.y) +
           dot4I8Packed(q6k_word(lo, hi, 6u), xb.z) + dot4I8Packed(q6k_word(lo, hi, 7u), xb.w);
  let s = q6k_sc2(sc);
  return q8_d(e) * (s.x * f32(s0 - 32 * q8_lo(e)) + s.y * f32(s1 - 32 * q8_hi(e)));
}

// matvec_q8.wgsl: the x data of unit u (MV_HALF: a0, b0 and e0 only), and a row's dot product with it.
struct XU { a0: vec4<u32>, b0: vec4<u32>, a1: vec4<u32>, b1: vec4<u32>, e0: vec2<u32>, e1: vec2<u32> }
fn u_x(u: u32) -> XU {
  if (MV_HALF) { return XU(xw[x_slot(2u * u)], xw[x_slot(2u * u + 1u)], vec4<u32>(), vec4<u32>(), xd[u], vec2<u32>()); }
  return XU(xw[x_slot(4u * u)], xw[x_slot(4u * u + 1u)], xw[x_slot(4u * u + 2u)], xw[x_slot(4u * u + 3u)], xd[2u * u],
            xd[2u * u + 1u]);
}
fn u_dotw(w: WV, x: XU) -> f32 {
  let r = q6k_dotx(w.lo0, w.hi.xy, w.sc, x.a0, x.b0, x.e0);
  if (MV_HALF) { return w.d * r; }
  return w.d * (r + q6k_dotx(w.lo1, w.hi.zw, w.sc >> 16u, x.a1, x.b1, x.e1));
}

// matmul_q8.wgsl (and matvec_q8.wgsl: WV, v_load): a row's unit as loaded (sub-blocks 2u: lo0,
// 2u + 1: lo1; their top bits; their scale word; d), its 16 words as signed bytes (q - 32: bit 5
// flipped, sign-extended; 0..7 sub-block 2u, 8..15 2u + 1) and the d * sc of each 4 words.
struct WU { lo0: vec4<u32>, lo1: vec4<u32>, hi: vec4<u32>, sc: u32, d: f32 }
fn mq_load(row: u32, u: u32) -> WU {
  return WU(q6k_lo(row, 2u * u), q6k_lo(row, 2u * u + 1u), q6k_hi4(row, 2u * u), q6k_scw(row, 2u * u), q6k_d(row, u / 4u));
}
fn mq_word(wu: WU, k: u32) -> u32 {
  let b = k >= 8u;
  let r = q6k_word(select(wu.lo0, wu.lo1, b), select(wu.hi.xy, wu.hi.zw, b), k & 7u) ^ 0x20202020u;
  return r | ((r & 0x20202020u) * 6u);
}
fn mq_scale(wu: WU, g: u32) -> vec2<f32> {
  // group g: sub-block g / 2's half g % 2, scale byte g of the word
  return vec2<f32>(wu.d * f32(bitcast<i32>(wu.sc << (24u - 8u * g)) >> 24u), 0.0);
}
alias WV = WU;
fn v_load(row: u32, u: u32) -> WU {
  if (MV_HALF) {  // sub-block u: lo0, its top bits in hi.xy, its scales in sc's low half
    let h4 = q6k_hi4(row, u);
    return WU(q6k_lo(row, u), vec4<u32>(), vec4<u32>(q6k_hi(h4, u), 0u, 0u), q6k_scw(row, u) >> (16u * (u & 1u)),
              q6k_d(row, u / 8u));
  }
  return mq_load(row, u);
}
