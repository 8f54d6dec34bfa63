// matvec_q8.wgsl (and matvec_kx.wgsl) without ROPE: nothing after the rows are stored.
fn rope_store(ra: u32, rb: u32, a: f32, b: f32) {}
fn rope_rotated(ra: u32) -> bool { return false; }
fn rope_cs_of(ra: u32) -> vec2<f32> { return vec2<f32>(1.0, 0.0); }
fn rope_store_cs(ra: u32, rb: u32, a: f32, b: f32, cs: vec2<f32>) {}
