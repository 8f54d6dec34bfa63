// Shared helpers of the LLM kernels.

// Linear workgroup index of a groups_1d dispatch.
fn wg_linear(wid: vec3<u32>, nwg: vec3<u32>) -> u32 { return wid.x + wid.y * nwg.x; }

// Four unsigned / signed bytes of a word as floats (byte 0 first).
fn u8x4(w: u32) -> vec4<f32> { return vec4<f32>((vec4<u32>(w) >> vec4<u32>(0u, 8u, 16u, 24u)) & vec4<u32>(0xffu)); }
fn i8x4(w: u32) -> vec4<f32> {
  return vec4<f32>((vec4<i32>(bitcast<i32>(w)) << vec4<u32>(24u, 16u, 8u, 0u)) >> vec4<u32>(24u));
}
// Two bf16 of a word (low half first).
fn bf16x2(w: u32) -> vec2<f32> { return vec2<f32>(bitcast<f32>(w << 16u), bitcast<f32>(w & 0xffff0000u)); }
// Four halves / bf16 of two words.
fn f16x4(a: u32, b: u32) -> vec4<f32> { return vec4<f32>(unpack2x16float(a), unpack2x16float(b)); }
fn bf16x4(a: u32, b: u32) -> vec4<f32> { return vec4<f32>(bf16x2(a), bf16x2(b)); }
fn hsum(v: vec4<f32>) -> f32 { return v.x + v.y + v.z + v.w; }

// Four bytes of w (byte 0 first) as floats minus off, exactly and without integer-to-float
// conversions: bitcast<f32>(0x4B000000 | b) = 2^23 + b.
fn bytes_f(w: u32, off: f32) -> vec4<f32> {
  let b = ((vec4<u32>(w) >> vec4<u32>(0u, 8u, 16u, 24u)) & vec4<u32>(0xffu)) | vec4<u32>(0x4B000000u);
  return bitcast<vec4<f32>>(b) - (8388608.0 + off);
}
// Four signed bytes of w as floats (exact).
fn sbytes_f(w: u32) -> vec4<f32> { return bytes_f(w ^ 0x80808080u, 128.0); }
// Half i of a word array of packed f16 pairs.
fn half_at(h: u32, i: u32) -> f32 {
  let v = unpack2x16float(h);
  return select(v.x, v.y, (i & 1u) == 1u);
}
