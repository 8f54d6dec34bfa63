// What the attention kernels share of a model's attention rules. Needs p with the fields `window`
// (0: none) and `softcap` (0: none) declared by the includer.
// Sliding-window attention (Mistral, Gemma, Phi-3): the first key a query at position pos sees,
// pos - window + 1 (0 without a window, or where the window reaches back past key 0).
fn window_lo(pos: u32) -> u32 {
  return select(0u, pos + 1u - p.window, p.window != 0u && pos + 1u > p.window);
}

// A scaled score soft-capped (Gemma 2): softcap * tanh(s / softcap), s itself without a cap (tanh's
// argument clamped: |x| > 15 is +-1 in f32 anyway, and tanh through exp can overflow far out).
fn cap_score(s: f32) -> f32 {
  if (p.softcap == 0.0) { return s; }
  return p.softcap * tanh(clamp(s / p.softcap, -15.0, 15.0));
}
