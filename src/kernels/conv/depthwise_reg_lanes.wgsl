// conv/depthwise_reg.wgsl's values from other invocations of the subgroup (SHFL), appended to it
// where the adapter has subgroups (the host prepends `enable subgroups;`);
// conv/depthwise_reg_nolanes.wgsl is the stand-in where it does not. Call in uniform control flow.
// v of the invocation at subgroup lane src.
fn lane_value(v: f32, src: u32) -> f32 { return subgroupShuffle(v, src); }
fn lane_index(v: u32, src: u32) -> u32 { return subgroupShuffle(v, src); }
// v of the lane before / after this one (undefined in the first / last lane).
fn lane_left(v: f32) -> f32 { return subgroupShuffleUp(v, 1u); }
fn lane_right(v: f32) -> f32 { return subgroupShuffleDown(v, 1u); }
fn index_left(v: u32) -> u32 { return subgroupShuffleUp(v, 1u); }
fn index_right(v: u32) -> u32 { return subgroupShuffleDown(v, 1u); }

// conv/depthwise_reg.wgsl's entry point with the invocation's lane (SHFL_UD).
@compute @workgroup_size(THREADS)
fn main_sg(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
           @builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32,
           @builtin(subgroup_invocation_id) lane: u32, @builtin(subgroup_size) size: u32) {
  sg_lane = lane;
  sg_size = size;
  run(gid, nwg, wid, lid);
}
