// The cache row of key position `key` for the attention kernels over a contiguous cache (the
// includer's p.max_ctx rows per KV head): every position has its own row. kv_row_ring.wgsl is the
// sliding-window layers' ring; one of the two is added to a kernel by its variant (KvLayer::ring).
fn kv_row(key: u32) -> u32 { return key; }
