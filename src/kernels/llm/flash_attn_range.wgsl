// The start position, keys per split and first key of a flash-attention pass over n new tokens:
// the parameters' own start and split length, or (p.dyn) the start read on the GPU from
// dynpos[0] and the split length ceil((start + n - first) / n_splits) in whole BK, so that one
// recorded decode step serves every position. The splits cover keys from `first`: the window's
// first key of the start position (attn_window.wgsl), rounded down to a multiple of `align`
// (1 for the decode kernels, whose keys are then all visible; BK for flash_attn.wgsl, whose
// prefill rows' blocks stay at multiples of BK from key 0 whatever the chunking).
// LlmOps::attention_decode_pass computes the same. Needs p (flash_attn_params.wgsl), dynpos, BK
// and attn_window.wgsl declared by the includer.
fn key_range(n: u32, align: u32) -> vec3<u32> {
  let start = select(p.start, dynpos[0], p.dyn != 0u);
  let first = window_lo(start) / align * align;
  if (p.dyn == 0u) { return vec3<u32>(start, p.split_len, first); }
  return vec3<u32>(start, (start + n - first + p.n_splits * BK - 1u) / (p.n_splits * BK) * BK, first);
}
