// The parameters of flash_attn.wgsl, flash_decode.wgsl, flash_decode_sg.wgsl and
// flash_attn_tiled_pf.wgsl: LlmOps::attention_prefill / attention_decode_pass fill them.
struct P {
  n: u32,
  n_heads: u32,
  n_kv: u32,
  max_ctx: u32,
  start: u32,
  q_stride: u32,
  q_off: u32,
  o_stride: u32,
  o_off: u32,
  cache_off: u32,
  scale: f32,
  split_len: u32,
  n_splits: u32,
  partial: u32,
  // 1: start from dynpos[0] and split_len from it (flash_attn_range.wgsl), so
  // that one recorded decode step serves every position.
  dyn: u32,
  // Sliding-window attention: a query at position q sees keys q - window + 1 .. q (0: every key
  // from 0; attn_window.wgsl).
  window: u32,
  softcap: f32,  // scores -> softcap * tanh(scores / softcap) (Gemma 2; 0: none)
}
// The layer's first word and quant words in the caches (kv_read_q8.wgsl; HD: the includer's head_dim).
fn kv_layer() -> vec2<u32> { return vec2<u32>(p.cache_off / 4u, p.n_kv * p.max_ctx * (HD / 4u)); }
