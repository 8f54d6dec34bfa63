// (block row, block column) of workgroup `wid` when consecutive workgroups sweep `group_m`
// block-rows column by column, so that those running at once share panels of B in L2
// (group_m 1: row-major order).
fn grouped_block(wid: vec3<u32>, nwg: vec3<u32>, group_m: u32) -> vec2<u32> {
  let pid = wid.x + wid.y * nwg.x;
  let group = group_m * nwg.x;
  let first_m = (pid / group) * group_m;
  let gm = min(nwg.y - first_m, group_m);
  return vec2<u32>(first_m + (pid % group) % gm, (pid % group) / gm);
}
