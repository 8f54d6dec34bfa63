// Flash decoding's partial result of one row and split (flash_attn.wgsl with partial = 1,
// paged_attn.wgsl): HD + 2 floats at out[ob ..]: the unnormalised acc, the running max m and the
// sum l, which attn_merge.wgsl combines. Lane j of the row's TPQ writes its vec4s j + TPQ * i.
fn store_partial(ob: u32, j: u32, acc: array<vec4<f32>, 4>, m: f32, l: f32) {
  for (var i = 0u; i < HD / 4u / TPQ; i++) {
    let d = 4u * (j + TPQ * i);
    out[ob + d] = acc[i].x;
    out[ob + d + 1u] = acc[i].y;
    out[ob + d + 2u] = acc[i].z;
    out[ob + d + 3u] = acc[i].w;
  }
  if (j == 0u) {
    out[ob + HD] = m;
    out[ob + HD + 1u] = l;
  }
}
