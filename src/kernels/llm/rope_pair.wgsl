// RoPE's pair rotation, shared by rope.wgsl and rope_kv_append.wgsl (so both round alike).

// Element offsets inside a head of pair i < half: (2i, 2i+1) when interleaved (GGML "norm"),
// else (i, i + half) (neox / HF).
fn rope_pair(i: u32, half: u32, interleaved: bool) -> vec2<u32> {
  if (interleaved) { return vec2<u32>(2u * i, 2u * i + 1u); }
  return vec2<u32>(i, i + half);
}

// (x0, x1) rotated by the angle whose (cos, sin) is c.
fn rope_rotate(x0: f32, x1: f32, c: vec2<f32>) -> vec2<f32> {
  return vec2<f32>(x0 * c.x - x1 * c.y, x1 * c.x + x0 * c.y);
}
