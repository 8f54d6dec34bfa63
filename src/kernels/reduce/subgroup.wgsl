// Reduction, grid-stride over vec4s with subgroup operations: as vec4.wgsl, but each subgroup
// reduces its values with subgroupAdd/Max/Min, one invocation per subgroup puts the result in a
// slot of workgroup memory (slots handed out by an atomic counter, so nothing is assumed about how
// invocations map to subgroups), and invocation 0 combines the slots. Needs the Subgroups feature.
enable subgroups;
//!include "reduce/common.wgsl"
//!include "reduce/vec4_partial.wgsl"
@group(0) @binding(0) var<storage, read> xs: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

override WG: u32 = 256;
const U: u32 = 4u;  // vec4 loads in flight per invocation per step

var<workgroup> sh: array<f32, WG>;  // one slot per subgroup (at most WG subgroups)
var<workgroup> slots: atomic<u32>;

fn subgroup_combine(v: f32) -> f32 {
  if (OP == 1u) { return subgroupMax(v); }
  if (OP == 2u) { return subgroupMin(v); }
  return subgroupAdd(v);
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>, @builtin(subgroup_invocation_id) lane: u32) {
  if (lid == 0u) { atomicStore(&slots, 0u); }  // workgroup memory is not zeroed (a Dawn toggle)
  let g = wid.x;
  let s = subgroup_combine(thread_partial(g * WG + lid, nwg.x * WG));
  workgroupBarrier();  // the counter's reset is seen by all
  if (lane == 0u) { sh[atomicAdd(&slots, 1u)] = s; }
  workgroupBarrier();
  if (lid == 0u) {
    let m = atomicLoad(&slots);
    var r = sh[0];
    for (var j = 1u; j < m; j++) { r = combine(r, sh[j]); }
    out[g] = r * p.scale;
  }
}
