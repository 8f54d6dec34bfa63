// RoPE's pair rotation, shared by rope.wgsl, rope_kv_append.wgsl and the matvecs that rotate their
// own outputs (so all round alike).

// Element offsets inside a head of pair i < half: (2i, 2i+1) when interleaved (GGML "norm"),
// else (i, i + half) (neox / HF).
fn rope_pair(i: u32, half: u32, interleaved: bool) -> vec2<u32> {
  if (interleaved) { return vec2<u32>(2u * i, 2u * i + 1u); }
  return vec2<u32>(i, i + half);
}

// The row, in a weight of heads of head_dim rows, of element u (0, 1) of RoPE pair pi (pairs
// numbered head by head): what a matvec that rotates its own outputs computes.
fn rope_pair_row(pi: u32, u: u32, head_dim: u32, interleaved: bool) -> u32 {
  let half = head_dim / 2u;
  let pr = rope_pair(pi % half, half, interleaved);
  return (pi / half) * head_dim + select(pr.x, pr.y, u == 1u);
}

// (x0, x1) rotated by the angle whose (cos, sin) is c.
fn rope_rotate(x0: f32, x1: f32, c: vec2<f32>) -> vec2<f32> {
  return vec2<f32>(x0 * c.x - x1 * c.y, x1 * c.x + x0 * c.y);
}
