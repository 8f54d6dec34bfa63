// Shared by vec4.wgsl and subgroup.wgsl (which declare xs, p and U): invocation tid's partial over
// the vec4 view of the data, walked with a grid stride, U independent vec4 loads in flight per
// step; invocation 0 folds in the last, partial vec4 (lanes past n count as the identity).
fn thread_partial(tid: u32, stride: u32) -> f32 {
  let full = p.n >> 2u;
  let ident = bitcast<f32>(p.identity);
  var acc = vec4<f32>(ident);
  var i = tid;
  while (full >= U * stride && i < full - (U - 1u) * stride) {
    let a0 = xs[i];
    let a1 = xs[i + stride];
    let a2 = xs[i + 2u * stride];
    let a3 = xs[i + 3u * stride];
    acc = combine4(acc, combine4(combine4(a0, a1), combine4(a2, a3)));
    i += U * stride;
  }
  for (; i < full; i += stride) { acc = combine4(acc, xs[i]); }
  if (tid == 0u && (p.n & 3u) != 0u) {
    let keep = vec4<u32>(0u, 1u, 2u, 3u) < vec4<u32>(p.n & 3u);
    acc = combine4(acc, select(vec4<f32>(ident), xs[full], keep));
  }
  return lanes(acc);
}
