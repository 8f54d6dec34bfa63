// conv/depthwise_reg_lanes.wgsl's functions for pipelines without subgroups (the code that calls
// them is switched off by a constant): every lane's own value.
fn lane_left4(v: vec4<f32>) -> vec4<f32> { return v; }
fn lane_right4(v: vec4<f32>) -> vec4<f32> { return v; }
fn index_left(v: u32) -> u32 { return v; }
fn index_right(v: u32) -> u32 { return v; }
