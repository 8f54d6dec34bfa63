// conv/lanes_sg.wgsl's functions for pipelines without subgroups (the kernel's code that calls
// them is switched off by a constant): every lane's own value.
fn lane_value(v: f32, src: u32) -> f32 { return v; }
fn lane_index(v: u32, src: u32) -> u32 { return v; }
