// F16 weights: two halves per word, row stride round_up(cols, 8) halves, zero padded.
fn half4(a: u32, b: u32) -> vec4<f32> { return f16x4(a, b); }
//!include "llm/weights/half.wgsl"
