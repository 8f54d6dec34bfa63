// Values of other invocations of the subgroup, for kernels that take them where the adapter has
// subgroups (the host prepends `enable subgroups;`); conv/lanes_none.wgsl is the stand-in where
// it does not. Call in uniform control flow.
// v of the invocation at subgroup lane src.
fn lane_value(v: f32, src: u32) -> f32 { return subgroupShuffle(v, src); }
fn lane_index(v: u32, src: u32) -> u32 { return subgroupShuffle(v, src); }
