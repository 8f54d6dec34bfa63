// conv/depthwise_reg_lanes.wgsl's functions for pipelines without subgroups (the code that calls
// them is switched off by a constant): every lane's own value.
fn lane_value(v: f32, src: u32) -> f32 { return v; }
fn lane_index(v: u32, src: u32) -> u32 { return v; }
fn lane_left(v: f32) -> f32 { return v; }
fn lane_right(v: f32) -> f32 { return v; }
fn index_left(v: u32) -> u32 { return v; }
fn index_right(v: u32) -> u32 { return v; }
