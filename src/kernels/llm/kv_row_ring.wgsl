// kv_row_flat.wgsl's rows in a ring (KvLayer::ring: a sliding-window layer keeps its last p.max_ctx
// positions, position `key` at row key % p.max_ctx). The writers (rope_kv_append, kv_append, the
// RoPE epilogues) store at the same rows; a pass reads only keys the ring still holds (its window
// and the chunk: LlmOps checks window + tokens - 1 <= max_ctx), or masked ones.
fn kv_row(key: u32) -> u32 { return key % p.max_ctx; }
