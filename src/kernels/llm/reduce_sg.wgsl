// group_sum with subgroup operations (needs `enable subgroups;`, which the host prepends).
// Sums v over aligned groups of GS consecutive invocations (GS a power of two); every
// invocation of the group gets the sum. SG: the subgroup size (an override the host sets from
// the adapter; subgroups are assumed to cover consecutive invocation indices). red: workgroup
// scratch of at least WG floats, declared by the kernel. Call in uniform control flow.
override SG: u32 = 32;
fn group_sum(v: f32, lid: u32, GS: u32) -> f32 {
  if (GS == SG) { return subgroupAdd(v); }
  if (GS < SG) {
    var t = v;
    for (var o = GS / 2u; o > 0u; o /= 2u) { t += subgroupShuffleXor(t, o); }
    return t;
  }
  let s = subgroupAdd(v);
  workgroupBarrier();
  red[lid] = s;
  workgroupBarrier();
  let g0 = lid - lid % GS;
  var t = 0.0;
  for (var i = 0u; i < GS; i += SG) { t += red[g0 + i]; }
  return t;
}
// v of invocation lid ^ 1 (SG >= 2). Call in uniform control flow.
fn partner(v: f32, lid: u32) -> f32 { return subgroupShuffleXor(v, 1u); }
