// Reading quant_act.wgsl's 8-bit activations: xw (the quants, 8 words per block of 32) and xd
// ((d, the two 16-element sums) per block), declared by q8_act_global.wgsl (bindings 2 and 3 of
// matvec_q8.wgsl and matmul_q8.wgsl) or q8_act_norm.wgsl / q8_act_stage.wgsl (workgroup memory,
// filled by x_prologue).

// Where xw's vec4 i is: with XSWZ (workgroup copies of x), bit groups of i >> 3 XORed into i
// within its 128 bytes (the q8dot file's MV_SWM, MV_SWS), so that the lanes of a quarter warp,
// each reading its unit's vec4 k, hit eight different 16-byte bank groups (without, a K-quant's
// units 64 bytes apart put four lanes on the same banks).
fn x_slot(i: u32) -> u32 {
  if (XSWZ) { return i ^ (((i >> 3u) & MV_SWM) << MV_SWS); }
  return i;
}

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
// Half a block (16 values) quantized with 1 / d = id as quant_act.wgsl does: the quants as four
// words of bytes (the first in the lowest) and their sum (q8_act_norm*.wgsl's x_prologue).
struct Q8Half { w: vec4<u32>, s: i32 }
fn q8_half(v: array<vec4<f32>, 4>, id: f32) -> Q8Half {
  var r: Q8Half;
  for (var k = 0u; k < 4u; k++) {
    let q = vec4<i32>(clamp(round(v[k] * id), vec4<f32>(-127.0), vec4<f32>(127.0)));
    r.s += q.x + q.y + q.z + q.w;
    let b = bitcast<vec4<u32>>(q) & vec4<u32>(0xffu);
    r.w[k] = b.x | (b.y << 8u) | (b.z << 16u) | (b.w << 24u);
  }
  return r;
}
