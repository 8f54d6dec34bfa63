// conv/depthwise_reg.wgsl's values from the lanes beside an invocation (SHFL), appended to it
// where the adapter has subgroups (the host prepends `enable subgroups;`);
// conv/depthwise_reg_nolanes.wgsl is the stand-in where it does not. Call in uniform control flow.
// v of the lane before / after this one (undefined in the subgroup's first / last lane).
fn lane_left4(v: vec4<f32>) -> vec4<f32> { return subgroupShuffleUp(v, 1u); }
fn lane_right4(v: vec4<f32>) -> vec4<f32> { return subgroupShuffleDown(v, 1u); }
fn index_left(v: u32) -> u32 { return subgroupShuffleUp(v, 1u); }
fn index_right(v: u32) -> u32 { return subgroupShuffleDown(v, 1u); }

// The kernel's entry point with the invocation's lane and the subgroup's size.
@compute @workgroup_size(THREADS)
fn main_sg(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
           @builtin(subgroup_invocation_id) lane: u32, @builtin(subgroup_size) size: u32) {
  sg_lane = lane;
  sg_size = size;
  run(gid, nwg);
}
