// Sliding-window attention (Mistral, Gemma, Phi-3): the first key a query at position pos sees,
// pos - window + 1 (0 without a window, or where the window reaches back past key 0). Needs p
// with a `window` field (0: none) declared by the includer.
fn window_lo(pos: u32) -> u32 {
  return select(0u, pos + 1u - p.window, p.window != 0u && pos + 1u > p.window);
}
