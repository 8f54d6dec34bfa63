// matvec_q8.wgsl / matvec.wgsl without ROPE: nothing after the rows are stored.
struct RopeAt {
  crow: u32,
  cs: vec2<f32>,
}
fn rope_at(ra: u32) -> RopeAt { return RopeAt(0u, vec2<f32>(1.0, 0.0)); }
fn rope_store(ra: u32, rb: u32, a: f32, b: f32) {}
fn rope_store_at(ra: u32, rb: u32, a: f32, b: f32, at: RopeAt) {}
