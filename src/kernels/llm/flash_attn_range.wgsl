// The start position and keys per split of a flash-attention pass over n new tokens: the
// parameters' own, or (p.dyn) the start read on the GPU from dynpos[0] and the split length
// ceil((start + n) / n_splits) in whole BK, so that one recorded decode step serves every
// position. Needs p (flash_attn_params.wgsl), dynpos and BK declared by the includer.
fn start_and_split_len(n: u32) -> vec2<u32> {
  if (p.dyn == 0u) { return vec2<u32>(p.start, p.split_len); }
  let start = dynpos[0];
  return vec2<u32>(start, (start + n + p.n_splits * BK - 1u) / (p.n_splits * BK) * BK);
}
