// Element d of one row's attention output from its first ns flash-decoding partials at
// part[b ..] (each hd + 2 floats: the unnormalised acc, max m, sum l; flash_attn.wgsl,
// paged_attn.wgsl): the splits rescaled to their common maximum and added in split order.
// Shared by attn_combine.wgsl, paged_attn_combine.wgsl and attn_combine_q8.wgsl, which bind part.
fn merge_splits(b: u32, ns: u32, hd: u32, d: u32) -> f32 {
  let r = merge_strided(b, 0u, 1u, ns, hd, d);
  return r.z / r.y;
}
// The same over splits s0, s0 + step, .. < ns, unnormalised: (their max m, sum l and acc
// rescaled to m), for combining again.
fn merge_strided(b: u32, s0: u32, step: u32, ns: u32, hd: u32, d: u32) -> vec3<f32> {
  let w = hd + 2u;
  var mx = -3.0e38;
  for (var s = s0; s < ns; s += step) { mx = max(mx, part[b + s * w + hd]); }
  var l = 0.0;
  var a = 0.0;
  for (var s = s0; s < ns; s += step) {
    let f = exp(part[b + s * w + hd] - mx);
    l += f * part[b + s * w + hd + 1u];
    a += f * part[b + s * w + d];
  }
  return vec3<f32>(mx, l, a);
}
