// kv_read_f32.wgsl's loads from an f16 cache: two halves per word (the lower value in the low
// half), so vec4 i of values is word pair i.
alias KvWords = array<vec2<u32>>;
fn kv_f16x4(w: vec2<u32>) -> vec4<f32> { return vec4<f32>(unpack2x16float(w.x), unpack2x16float(w.y)); }
fn k_at(i: u32) -> vec4<f32> { return kv_f16x4(k4[i]); }
fn v_at(i: u32) -> vec4<f32> { return kv_f16x4(v4[i]); }
