// linear_batched_q8.wgsl without ROPE: rows in order, stored by store_rows_n.
fn rope_rows(gg: u32) -> array<u32, 4> { return array<u32, 4>(); }
fn rope_store_rows(tok: u32, gg: u32, rows: array<u32, 4>, v: vec4<f32>) {}
