// Q6_K weights (weights/q6_k.wgsl) against 8-bit activations (q8_act.wgsl). A unit is one half
// h of a super-block (128 elements): quarter k (0..3) is x block 4u + k, its element l (0..31)
// the 6-bit q from ql[64h + l + 32(k & 1)] (>> 4 for k >= 2) and qh[32h + l] >> 2k, value
// d * sc[8h + l / 16 + 2k] * (q - 32). Per 16 elements (one scale):
//   sum = d * dx * sc * (sum q * qx - 32 * sum qx).
const MQ_UB: u32 = 4u;      // x blocks per unit
const MQ_SW: u32 = 4u;      // matmul: words per scale
const MQ_MIN: bool = false;  // matmul: scales come with a min
// matvec_q8.wgsl: elements per unit (half a matmul unit; MV_HALF, a prelude constant: a quarter).
const MV_UE: u32 = select(64u, 32u, MV_HALF);
// x_slot's swizzle (q8_act.wgsl): unit v = 2u + p's vec4s 8u + 2k + p, or (MV_HALF) unit
// v = 8 sb + c's 16 sb + 8h + 2kk + lh and 4 past it.
const MV_SWM: u32 = select(3u, 1u, MV_HALF);
const MV_SWS: u32 = select(1u, 2u, MV_HALF);

// The quants of quarter k, words 4p .. 4p + 3 of its block (l = 16p + 4i ..), from the ql words
// of l (qa), of l + 32 (qb) and the qh words of l.
fn q6_quarter(qa: u32, qb: u32, qh: u32, k: u32) -> u32 {
  let lo = (select(qa, qb, (k & 1u) == 1u) >> (4u * (k / 2u))) & 0x0f0f0f0fu;
  return lo | (((qh >> (2u * k)) & 0x03030303u) << 4u);
}

// matvec_q8.wgsl's unit (MV_UE elements): half p of a matmul unit u = v / 2, p = v % 2: words
// 4p .. 4p + 3 of its four quarters' blocks, so a lane holds 4 weight and 4 x vec4s per unit
// instead of 7 and 8 (registers, and twice the units to spread over the lanes). Its x data, its
// weights (the ql words of l (qa), of l + 32 (qb) and the qh words of l; the scales; d), and a
// row's dot product with it.
// MV_HALF: the unit is one ql vec4 c of a super-block instead (32 elements: h = c / 4, kk =
// (c / 2) & 1, lh = c & 1: its low nibbles quarter kk, its high ones quarter kk + 2 of half h,
// elements l = 16 lh .. 16 lh + 15), with the qh vec4 of those l: the lanes of a row load
// consecutive ql vec4s; x.x[0], x.x[1] the two quarters' x (x.x[2], x.x[3] unused), qb unused, t
// scale 8h + lh + 2kk.
struct XU { x: array<vec4<u32>, 4>, e: array<vec2<u32>, 4>, p: u32 }
fn u_x(v: u32) -> XU {
  var r: XU;
  if (MV_HALF) {
    let c = v & 7u;
    let a = 8u * (v / 8u) + 4u * (c / 4u) + ((c / 2u) & 1u);  // quarter kk's block
    r.p = c & 1u;
    for (var q = 0u; q < 2u; q++) {
      r.x[q] = xw[x_slot(2u * (a + 2u * q) + r.p)];
      r.e[q] = xd[a + 2u * q];
    }
    return r;
  }
  let u = v / 2u;
  r.p = v & 1u;
  for (var k = 0u; k < 4u; k++) {
    r.x[k] = xw[x_slot(2u * (4u * u + k) + r.p)];
    r.e[k] = xd[4u * u + k];
  }
  return r;
}
struct WV { qa: vec4<u32>, qb: vec4<u32>, qh: vec4<u32>, sv: vec4<u32>, d: f32, t: u32 }  // t: scale 8h + p
fn v_load(row: u32, v: u32) -> WV {
  if (MV_HALF) {
    let c = v & 7u;
    let h = c / 4u;
    let sb = v / 8u;
    let base = row * w_rs4 + sb * 13u;
    return WV(wq[base + c], vec4<u32>(), wq[base + 8u + 2u * h + (c & 1u)], wq[base + 12u],
              bitcast<f32>(ws[row * w_nb + sb]), 8u * h + (c & 1u) + 2u * ((c / 2u) & 1u));
  }
  let u = v / 2u;
  let p = v & 1u;
  let h = u & 1u;
  let sb = u / 2u;
  let base = row * w_rs4 + sb * 13u;
  return WV(wq[base + 4u * h + p], wq[base + 4u * h + 2u + p], wq[base + 8u + 2u * h + p], wq[base + 12u],
            bitcast<f32>(ws[row * w_nb + sb]), 8u * h + p);
}
fn u_dotw(w: WV, x: XU) -> f32 {
  var acc = 0.0;
  let qb = select(w.qb, w.qa, MV_HALF);  // MV_HALF: both quarters from qa's nibbles
  for (var q = 0u; q < select(4u, 2u, MV_HALF); q++) {
    let k = select(q, ((w.t >> 1u) & 1u) + 2u * q, MV_HALF);  // the quarter
    let xv = x.x[q];
    let s = dot4I8Packed(q6_quarter(w.qa.x, qb.x, w.qh.x, k), xv.x) +
            dot4I8Packed(q6_quarter(w.qa.y, qb.y, w.qh.y, k), xv.y) +
            dot4I8Packed(q6_quarter(w.qa.z, qb.z, w.qh.z, k), xv.z) +
            dot4I8Packed(q6_quarter(w.qa.w, qb.w, w.qh.w, k), xv.w);
    let e = x.e[q];
    let sx = select(q8_lo(e), q8_hi(e), x.p == 1u);
    acc += q8_d(e) * q6k_sc(w.sv, select(w.t + 2u * k, w.t + 4u * q, MV_HALF)) * f32(s - 32 * sx);
  }
  return w.d * acc;
}

// matmul_q8.wgsl: a row's unit as loaded, its 32 words as signed bytes (q - 32: bit 5 flipped,
// sign-extended; word k = quarter k / 8, word k % 8 of its block) and the d * sc of each 16.
struct WU { qa0: vec4<u32>, qa1: vec4<u32>, qb0: vec4<u32>, qb1: vec4<u32>, qh0: vec4<u32>, qh1: vec4<u32>, sv: vec4<u32>, d: f32, h: u32 }
fn mq_load(row: u32, u: u32) -> WU {
  let h = u & 1u;
  let sb = u / 2u;
  let base = row * w_rs4 + sb * 13u;
  return WU(wq[base + 4u * h], wq[base + 4u * h + 1u], wq[base + 4u * h + 2u], wq[base + 4u * h + 3u],
            wq[base + 8u + 2u * h], wq[base + 9u + 2u * h], wq[base + 12u], bitcast<f32>(ws[row * w_nb + sb]), h);
}
fn mq_word(wu: WU, k: u32) -> u32 {
  let q = k / 8u;
  let i = k & 3u;
  let p = (k / 4u) & 1u;
  let qa = select(wu.qa0[i], wu.qa1[i], p == 1u);
  let qb = select(wu.qb0[i], wu.qb1[i], p == 1u);
  let qh = select(wu.qh0[i], wu.qh1[i], p == 1u);
  let r = q6_quarter(qa, qb, qh, q) ^ 0x20202020u;
  return r | ((r & 0x20202020u) * 6u);
}
fn mq_scale(wu: WU, g: u32) -> vec2<f32> {
  // group g = 2 * quarter + p
  return vec2<f32>(wu.d * q6k_sc(wu.sv, 8u * wu.h + (g & 1u) + 2u * (g / 2u)), 0.0);
}
