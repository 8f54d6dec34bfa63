// BF16 weights: two bf16 per word, row stride round_up(cols, 8) values, zero padded.
fn half4(a: u32, b: u32) -> vec4<f32> { return bf16x4(a, b); }
//!include "llm/weights/half.wgsl"
