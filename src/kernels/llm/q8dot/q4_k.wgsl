// Q4_K weights (weights/q4_k.wgsl) against 8-bit activations (q8_act.wgsl). A unit is one group
// of 64 elements (group j of a super-block: qs bytes 32j .. 32j + 31, the low nibbles x block
// 2j's elements, the high ones block 2j + 1's), each half with its 6-bit scale and min:
//   sum = dx * (d * sc * sum q * qx - dmin * mn * sum qx)   per x block.
// MV_HALF (a prelude constant, matvec_q8.wgsl only): the matvec's unit is half a group instead
// (32 elements: qs vec4 c = 2j + p of the super-block, elements 16p .. 16p + 15 of blocks 2j and
// 2j + 1), so that the lanes of a row load consecutive qs vec4s and hold 8 words per unit, not 12.
const MQ_UB: u32 = 2u;     // x blocks per unit
const MQ_SW: u32 = 8u;     // matmul: words per scale
const MV_UE: u32 = select(64u, 32u, MV_HALF);  // matvec_q8.wgsl: elements per unit
const MQ_MIN: bool = true;  // matmul: scales come with a min
// x_slot's swizzle (q8_act.wgsl): unit u's vec4s 4u .. 4u + 3, or (MV_HALF) 16 sb + 4j + 2h + p
// (h: block 2j or 2j + 1) for unit u = 8 sb + 2j + p.
const MV_SWM: u32 = select(3u, 1u, MV_HALF);
const MV_SWS: u32 = select(0u, 1u, MV_HALF);

// matvec_q8.wgsl: the x data of unit u (MV_HALF: a0 and b0 the halves of blocks 2j and 2j + 1,
// e0 and e1 their (d, half sum); a1 and b1 unused), and a row's dot product with it.
struct XU { a0: vec4<u32>, b0: vec4<u32>, a1: vec4<u32>, b1: vec4<u32>, e0: vec2<f32>, e1: vec2<f32> }
fn u_x(u: u32) -> XU {
  if (MV_HALF) {
    let b = 2u * (u / 2u);  // block 2j of the whole row: 8 sb + 2j
    let p = u & 1u;
    let i = 2u * b + p;
    let ea = xd[b];
    let eb = xd[b + 1u];
    let sa = select(q8_lo(ea), q8_hi(ea), p == 1u);
    let sb = select(q8_lo(eb), q8_hi(eb), p == 1u);
    return XU(xw[x_slot(i)], xw[x_slot(i + 2u)], vec4<u32>(), vec4<u32>(), vec2<f32>(q8_d(ea), f32(sa)),
              vec2<f32>(q8_d(eb), f32(sb)));
  }
  return XU(xw[x_slot(4u * u)], xw[x_slot(4u * u + 1u)], xw[x_slot(4u * u + 2u)], xw[x_slot(4u * u + 3u)],
            q8_block(2u * u), q8_block(2u * u + 1u));
}
fn u_dotw(w: WV, x: XU) -> f32 {
  let j = w.j;
  let h = w.h;
  let q0 = w.q0;
  let q1 = w.q1;
  let m = 0x0f0f0f0fu;
  var lo = dot4I8Packed(q0.x & m, x.a0.x) + dot4I8Packed(q0.y & m, x.a0.y) + dot4I8Packed(q0.z & m, x.a0.z) +
           dot4I8Packed(q0.w & m, x.a0.w);
  var hi: i32;
  if (MV_HALF) {
    hi = dot4I8Packed((q0.x >> 4u) & m, x.b0.x) + dot4I8Packed((q0.y >> 4u) & m, x.b0.y) +
         dot4I8Packed((q0.z >> 4u) & m, x.b0.z) + dot4I8Packed((q0.w >> 4u) & m, x.b0.w);
  } else {
    lo += dot4I8Packed(q1.x & m, x.b0.x) + dot4I8Packed(q1.y & m, x.b0.y) + dot4I8Packed(q1.z & m, x.b0.z) +
          dot4I8Packed(q1.w & m, x.b0.w);
    hi = dot4I8Packed((q0.x >> 4u) & m, x.a1.x) + dot4I8Packed((q0.y >> 4u) & m, x.a1.y) +
         dot4I8Packed((q0.z >> 4u) & m, x.a1.z) + dot4I8Packed((q0.w >> 4u) & m, x.a1.w) +
         dot4I8Packed((q1.x >> 4u) & m, x.b1.x) + dot4I8Packed((q1.y >> 4u) & m, x.b1.y) +
         dot4I8Packed((q1.z >> 4u) & m, x.b1.z) + dot4I8Packed((q1.w >> 4u) & m, x.b1.w);
  }
  let dm = unpack2x16float(h.x);
  let s1 = q4k_scale_min(h, 2u * j);
  let s2 = q4k_scale_min(h, 2u * j + 1u);
  return x.e0.x * (dm.x * s1.x * f32(lo) - dm.y * s1.y * x.e0.y) + x.e1.x * (dm.x * s2.x * f32(hi) - dm.y * s2.y * x.e1.y);
}

// matmul_q8.wgsl (and matvec_q8.wgsl: WV, v_load): a row's unit as loaded, its 16 words (0..7: block 2j, the low nibbles; 8..15:
// block 2j + 1, the high ones) and the (d * sc, dmin * mn) of each block.
struct WU { h: vec4<u32>, q0: vec4<u32>, q1: vec4<u32>, j: u32 }
fn mq_load(row: u32, u: u32) -> WU {
  let j = u & 3u;
  let base = row * w_rs4 + (u / 4u) * 9u;
  return WU(wq[base], wq[base + 1u + 2u * j], wq[base + 2u + 2u * j], j);
}
fn mq_word(wu: WU, k: u32) -> u32 {
  let i = k & 7u;
  let v = select(wu.q0[i & 3u], wu.q1[i & 3u], i >= 4u);
  return (v >> select(0u, 4u, k >= 8u)) & 0x0f0f0f0fu;
}
fn mq_scale(wu: WU, g: u32) -> vec2<f32> {
  let dm = unpack2x16float(wu.h.x);
  let s = q4k_scale_min(wu.h, 2u * wu.j + g);
  return vec2<f32>(dm.x * s.x, dm.y * s.y);
}
alias WV = WU;
fn v_load(row: u32, u: u32) -> WU {
  if (MV_HALF) {  // q0: qs vec4 u % 8 of super-block u / 8 (q1 unused)
    let c = u & 7u;
    let base = row * w_rs4 + (u / 8u) * 9u;
    return WU(wq[base], wq[base + 1u + c], vec4<u32>(), c / 2u);
  }
  return mq_load(row, u);
}
