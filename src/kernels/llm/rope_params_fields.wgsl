  // rope_kv_append.wgsl's fields, included into the P of the kernels that do RoPE and the KV-cache
  // append in their epilogue (matvec.wgsl, matvec_q8.wgsl, batched_q8_blocks.wgsl); zero without.
  heads: u32,
  n_kv: u32,
  head_dim: u32,
  pos0: u32,
  rflags: u32,  // 1: position(s) from the positions buffer, 2: interleaved pairs, 4: cache row(s) from it
  max_pos: u32,
  max_ctx: u32,
  cache_off: u32,
