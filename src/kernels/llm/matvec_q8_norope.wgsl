// matvec_q8.wgsl without ROPE: nothing after the rows are stored.
fn rope_store(ra: u32, rb: u32, a: f32, b: f32) {}
