// flash_attn_tiled_pf.wgsl's row groups in subgroups: invocation lid owns row quad ty = lid / 16
// and keys tx * 4 .. + 3 with tx = lid % 16, so a row group's 16 invocations are consecutive
// lanes and a block's row max is subgroupShuffleXor steps (no barrier where subgroups have 16
// lanes or more; smaller ones, SwiftShader's 4, merge their maxima through wm). P at
// key * 16 + (quad ^ (key / 4 % 16)): a subgroup's stores (16 key quads, 2 row quads) spread
// over the banks, its reads (one key, 2 row quads) broadcasts. Max is exact: the same bits as
// flash_attn_pf_rows_wm.wgsl.
override SGS: u32 = 32;  // subgroup size, a power of two
fn lane_ty(lid: u32) -> u32 { return lid / 16u; }
fn lane_tx(lid: u32) -> u32 { return lid % 16u; }
fn p_at(key: u32, g: u32) -> u32 { return PS + key * 16u + (g ^ ((key / 4u) % 16u)); }
fn row_max(bm: vec4<f32>, tx: u32, ty: u32) -> vec4<f32> {
  var x = bm;
  for (var o = 1u; o < min(16u, SGS); o *= 2u) { x = max(x, subgroupShuffleXor(x, o)); }
  if (SGS < 16u) {
    workgroupBarrier();
    wm[tx * 16u + ty] = x;
    workgroupBarrier();
    for (var j = 0u; j < 16u; j += SGS) { x = max(x, wm[j * 16u + ty]); }
  }
  return x;
}
