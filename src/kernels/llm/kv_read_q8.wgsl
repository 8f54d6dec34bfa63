// kv_read_f32.wgsl's loads from a q8_0 cache (llm_ops.h's KvType::Q8_0): vec4 i of values is
// quant word i (four int8, the lowest value in the low byte) times its block's f32 scale, which
// lies after the layer's quants: the includer defines kv_layer() = (the layer's first word,
// its quant words).
alias KvWords = array<u32>;
fn kv_i8x4(w: u32) -> vec4<f32> {
  return vec4<f32>((vec4<i32>(bitcast<i32>(w)) << vec4<u32>(24u, 16u, 8u, 0u)) >> vec4<u32>(24u));
}
fn kv_scale_word(i: u32) -> u32 {
  let l = kv_layer();
  return l.x + l.y + (i - l.x) / 8u;
}
fn k_at(i: u32) -> vec4<f32> { return kv_i8x4(k4[i]) * bitcast<f32>(k4[kv_scale_word(i)]); }
fn v_at(i: u32) -> vec4<f32> { return kv_i8x4(v4[i]) * bitcast<f32>(v4[kv_scale_word(i)]); }
