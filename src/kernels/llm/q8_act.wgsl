// Reading quant_act.wgsl's 8-bit activations: xw (the quants, 8 words per block of 32) and xd
// ((d, the two 16-element sums) per block), declared by q8_act_global.wgsl (bindings 2 and 3 of
// matvec_q8.wgsl and matmul_q8.wgsl) or q8_act_norm.wgsl (workgroup memory, filled by x_prologue).

fn q8_d(e: vec2<u32>) -> f32 { return bitcast<f32>(e.x); }
// The sums of quants 0..15 and 16..31 of a block.
fn q8_lo(e: vec2<u32>) -> i32 { return bitcast<i32>(e.y << 16u) >> 16u; }
fn q8_hi(e: vec2<u32>) -> i32 { return bitcast<i32>(e.y) >> 16u; }
// (d, sum of the 32 quants) of block b.
fn q8_block(b: u32) -> vec2<f32> {
  let e = xd[b];
  return vec2<f32>(q8_d(e), f32(q8_lo(e) + q8_hi(e)));
}
// The integers of an int32 vector as floats, exactly for |v| < 2^22, with an integer add and a
// float subtract (1.5 * 2^23 + v has the value in its mantissa) instead of a conversion, which
// runs at a quarter of the rate on NVIDIA GPUs.
fn i2f4(v: vec4<i32>) -> vec4<f32> { return bitcast<vec4<f32>>(v + vec4<i32>(0x4B400000)) - vec4<f32>(12582912.0); }
