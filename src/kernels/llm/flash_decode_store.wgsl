// Vec4 c of query head h's result from one split of flash decoding (flash_decode.wgsl,
// flash_decode_sg.wgsl): with p.partial == 0 the output a / ls, else the split's partial
// (attn_partial.wgsl's layout: the unnormalised acc, then the max mx and the sum ls, written by
// the c == 0 invocation). Needs p (flash_attn_params.wgsl), out and HD declared by the includer.
fn store_decode(h: u32, split: u32, c: u32, a: vec4<f32>, mx: f32, ls: f32) {
  if (p.partial == 0u) {
    let v = a / ls;
    let ob = p.o_off + h * HD + 4u * c;
    out[ob] = v.x;
    out[ob + 1u] = v.y;
    out[ob + 2u] = v.z;
    out[ob + 3u] = v.w;
  } else {
    let ob = (h * p.n_splits + split) * (HD + 2u);
    out[ob + 4u * c] = a.x;
    out[ob + 4u * c + 1u] = a.y;
    out[ob + 4u * c + 2u] = a.z;
    out[ob + 4u * c + 3u] = a.w;
    if (c == 0u) {
      out[ob + HD] = mx;
      out[ob + HD + 1u] = ls;
    }
  }
}
