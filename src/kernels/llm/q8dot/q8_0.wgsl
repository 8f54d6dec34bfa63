// Q8_0 weights (weights/q8_0.wgsl) against 8-bit activations (q8_act.wgsl). A unit is one block
// of 32: sum = dw * dx * sum q * qx.
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
  let v0 = w.v0;
  let v1 = w.v1;
  let s = dot4I8Packed(v0.x, x.a.x) + dot4I8Packed(v0.y, x.a.y) + dot4I8Packed(v0.z, x.a.z) +
          dot4I8Packed(v0.w, x.a.w) + dot4I8Packed(v1.x, x.b.x) + dot4I8Packed(v1.y, x.b.y) +
          dot4I8Packed(v1.z, x.b.z) + dot4I8Packed(v1.w, x.b.w);
  return w.d * x.e.x * f32(s);
}

// matmul_q8.wgsl (and matvec_q8.wgsl: WV, v_load): a row's unit as loaded, its words (signed bytes already) and its scale.
struct WU { v0: vec4<u32>, v1: vec4<u32>, d: f32 }
fn mq_load(row: u32, u: u32) -> WU {
  return WU(wq[row * w_rs4 + 2u * u], wq[row * w_rs4 + 2u * u + 1u], w_scale(row, u));
}
fn mq_word(wu: WU, k: u32) -> u32 { return select(wu.v0[k & 3u], wu.v1[k & 3u], k >= 4u); }
fn mq_scale(wu: WU, g: u32) -> vec2<f32> { return vec2<f32>(wu.d, 0.0); }
alias WV = WU;
fn v_load(row: u32, u: u32) -> WU { return mq_load(row, u); }
