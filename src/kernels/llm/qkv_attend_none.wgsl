// matvec_kx.wgsl without QA: no attention in the QKV matvec (qkv_attend.wgsl's entry points).
fn qa_store(ra: u32, rb: u32, a: f32, b: f32, cs: vec2<f32>) {}
fn qa_finish(g0: u32, ng: u32, tiles: u32, lid: u32) {}
