// Q4_K weights (weights/q4_k.wgsl, repacked: a sub-block of 32 is Q4_0's nibble vec4 with a byte
// scale and min) against 8-bit activations (q8_act.wgsl). A unit is two sub-blocks (x blocks 2u
// and 2u + 1, one scale word), each
//   sum = dx * (d * sc * sum q * qx - dmin * mn * sum qx).
// MV_HALF (a prelude constant, matvec_q8.wgsl only): the matvec's unit is one sub-block (32
// elements, one x block: Q4_0's unit) instead.
const MQ_UB: u32 = 2u;     // x blocks per unit
const MQ_SW: u32 = 8u;     // matmul: words per scale
const MV_UE: u32 = select(64u, 32u, MV_HALF);  // matvec_q8.wgsl: elements per unit
const MQ_MIN: bool = true;  // matmul: scales come with a min
// x_slot's swizzle (q8_act.wgsl): unit u's vec4s 4u .. 4u + 3, or (MV_HALF) 2u, 2u + 1.
const MV_SWM: u32 = select(3u, 1u, MV_HALF);
const MV_SWS: u32 = 0u;

// The nibbles of a sub-block (v) dotted with an x block (xa: its quants 0..15, xb: 16..31).
fn q4k_dot(v: vec4<u32>, xa: vec4<u32>, xb: vec4<u32>) -> i32 {
  let m = 0x0f0f0f0fu;
  return dot4I8Packed(v.x & m, xa.x) + dot4I8Packed(v.y & m, xa.y) + dot4I8Packed(v.z & m, xa.z) +
         dot4I8Packed(v.w & m, xa.w) + dot4I8Packed((v.x >> 4u) & m, xb.x) + dot4I8Packed((v.y >> 4u) & m, xb.y) +
         dot4I8Packed((v.z >> 4u) & m, xb.z) + dot4I8Packed((v.w >> 4u) & m, xb.w);
}

// matvec_q8.wgsl: the x data of unit u (MV_HALF: a0, b0 and e0 only), and a row's dot product with it.
struct XU { a0: vec4<u32>, b0: vec4<u32>, a1: vec4<u32>, b1: vec4<u32>, e0: vec2<f32>, e1: vec2<f32> }
fn u_x(u: u32) -> XU {
  if (MV_HALF) { return XU(xw[x_slot(2u * u)], xw[x_slot(2u * u + 1u)], vec4<u32>(), vec4<u32>(), q8_block(u), vec2<f32>()); }
  return XU(xw[x_slot(4u * u)], xw[x_slot(4u * u + 1u)], xw[x_slot(4u * u + 2u)], xw[x_slot(4u * u + 3u)],
            q8_block(2u * u), q8_block(2u * u + 1u));
}
fn u_dotw(w: WV, x: XU) -> f32 {
  let s0 = q4k_dm(w.head, w.sm);
  let r = x.e0.x * (s0.x * f32(q4k_dot(w.q0, x.a0, x.b0)) - s0.y * x.e0.y);
  if (MV_HALF) { return r; }
  let s1 = q4k_dm(w.head, w.sm >> 16u);
  return r + x.e1.x * (s1.x * f32(q4k_dot(w.q1, x.a1, x.b1)) - s1.y * x.e1.y);
}

// matmul_q8.wgsl (and matvec_q8.wgsl: WV, v_load): a row's unit as loaded (sub-blocks 2u: q0,
// 2u + 1: q1; d | dmin; their (sc, mn) word), its 16 words (0..7: sub-block 2u, 8..15: 2u + 1; word
// k of a sub-block its elements 4k .. 4k + 3) and the (d * sc, dmin * mn) of each sub-block.
struct WU { q0: vec4<u32>, q1: vec4<u32>, head: u32, sm: u32 }
fn mq_load(row: u32, u: u32) -> WU {
  let base = row * w_rs4 + 2u * u;
  return WU(wq[base], wq[base + 1u], q4k_head(row, u / 4u), q4k_sm(row, 2u * u));
}
fn mq_word(wu: WU, k: u32) -> u32 {
  let i = k & 7u;
  let v = select(wu.q0[i & 3u], wu.q1[i & 3u], k >= 8u);
  return (v >> select(0u, 4u, i >= 4u)) & 0x0f0f0f0fu;
}
fn mq_scale(wu: WU, g: u32) -> vec2<f32> { return q4k_dm(wu.head, wu.sm >> (16u * g)); }
alias WV = WU;
fn v_load(row: u32, u: u32) -> WU {
  if (MV_HALF) {  // sub-block u: q0 (q1 unused), its (sc, mn) in sm's low half
    return WU(wq[row * w_rs4 + u], vec4<u32>(), q4k_head(row, u / 8u), q4k_sm(row, u) >> (16u * (u & 1u)));
  }
  return mq_load(row, u);
}
