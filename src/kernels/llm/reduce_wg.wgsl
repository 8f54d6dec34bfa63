// group_sum with shared memory only: sums v over aligned groups of GS consecutive invocations
// (GS a power of two); every invocation of the group gets the sum. red: workgroup scratch of at
// least WG floats, declared by the kernel. Call in uniform control flow.
fn group_sum(v: f32, lid: u32, GS: u32) -> f32 {
  workgroupBarrier();
  red[lid] = v;
  workgroupBarrier();
  let lane = lid % GS;
  for (var s = GS / 2u; s > 0u; s /= 2u) {
    if (lane < s) { red[lid] += red[lid + s]; }
    workgroupBarrier();
  }
  let r = red[lid - lane];
  return r;
}
// v of invocation lid ^ 1. Call in uniform control flow.
fn partner(v: f32, lid: u32) -> f32 {
  workgroupBarrier();
  red[lid] = v;
  workgroupBarrier();
  return red[lid ^ 1u];
}
