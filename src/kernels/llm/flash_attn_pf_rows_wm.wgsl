// flash_attn_tiled_pf.wgsl's row groups through workgroup memory: invocation lid owns row quad
// ty = lid % 16 and keys tx * 4 .. + 3 with tx = lid / 16 (a row group's 16 invocations in 8
// subgroups); P at key * 16 + quad (the stores of a subgroup: 16 consecutive quads); a block's
// row max over the group through wm, between two barriers.
fn lane_ty(lid: u32) -> u32 { return lid % 16u; }
fn lane_tx(lid: u32) -> u32 { return lid / 16u; }
fn p_at(key: u32, g: u32) -> u32 { return PS + key * 16u + g; }
fn row_max(bm: vec4<f32>, tx: u32, ty: u32) -> vec4<f32> {
  workgroupBarrier();
  wm[tx * 16u + ty] = bm;
  workgroupBarrier();
  var x = bm;
  for (var j = 0u; j < 16u; j++) { x = max(x, wm[j * 16u + ty]); }
  return x;
}
