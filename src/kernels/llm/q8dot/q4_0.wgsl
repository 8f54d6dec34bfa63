// Q4_0 weights (weights/q4_0.wgsl) against 8-bit activations (q8_act.wgsl). A unit is one block
// of 32: (q - 8) * dw against qx * dx, so sum = dw * dx * (sum q * qx - 8 * sum qx).
const MQ_UB: u32 = 1u;      // x blocks per unit
const MQ_SW: u32 = 8u;      // matmul: words per scale
const MV_UE: u32 = 32u;      // matvec_q8.wgsl: elements per unit
const MQ_MIN: bool = false;  // matmul: scales come with a min (K-quants)
const MV_SWM: u32 = 1u;      // x_slot's swizzle (q8_act.wgsl): unit u's vec4s 2u, 2u + 1
const MV_SWS: u32 = 0u;

// matvec_q8.wgsl: its unit is the matmul's (MV_UE elements; weights WV, loaded by v_load), the
// x data of unit u, and a row's dot product with it.
struct XU { a: vec4<u32>, b: vec4<u32>, e: vec2<f32> }
fn u_x(u: u32) -> XU { return XU(xw[x_slot(2u * u)], xw[x_slot(2u * u + 1u)], q8_block(u)); }
fn u_dotw(w: WV, x: XU) -> f32 {
  let v = w.v;
  let m = 0x0f0f0f0fu;
  let s = dot4I8Packed(v.x & m, x.a.x) + dot4I8Packed(v.y & m, x.a.y) + dot4I8Packed(v.z & m, x.a.z) +
          dot4I8Packed(v.w & m, x.a.w) + dot4I8Packed((v.x >> 4u) & m, x.b.x) + dot4I8Packed((v.y >> 4u) & m, x.b.y) +
          dot4I8Packed((v.z >> 4u) & m, x.b.z) + dot4I8Packed((v.w >> 4u) & m, x.b.w);
  return w.d * x.e.x * (f32(s) - 8.0 * x.e.y);
}

// matmul_q8.wgsl (and matvec_q8.wgsl: WV, v_load): a row's unit as loaded, its words as signed bytes (q - 8: the nibble with its
// top bit flipped, sign-extended) and its scale.
struct WU { v: vec4<u32>, d: f32 }
fn mq_load(row: u32, u: u32) -> WU { return WU(wq[row * w_rs4 + u], w_scale(row, u)); }
fn mq_word(wu: WU, k: u32) -> u32 {
  let r = ((wu.v[k & 3u] >> select(0u, 4u, k >= 4u)) & 0x0f0f0f0fu) ^ 0x08080808u;
  return r | ((r & 0x08080808u) * 30u);
}
fn mq_scale(wu: WU, g: u32) -> vec2<f32> { return vec2<f32>(wu.d, 0.0); }
alias WV = WU;
fn v_load(row: u32, u: u32) -> WU { return mq_load(row, u); }
