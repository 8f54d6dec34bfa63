// matvec.wgsl's x RMS-normalised as rms_norm.wgsl does (x / sqrt(mean(x^2) + EPS) * w), by every
// workgroup (instead of an rms_norm pass before the matvec; the sum of squares is added in
// another order). The norm weight w comes in the bias binding (no bias is added then); p.cols a
// multiple of 4. Uses the kernel's `red` (WG floats), group_sum and WG.
override EPS: f32 = 1e-5;
var<private> x_inv: f32;

fn x_prologue(lid: u32) {
  var ss = 0.0;
  for (var i = lid; i < p.cols / 4u; i += WG) {
    let v = x4[i];
    ss += dot(v, v);
  }
  x_inv = inverseSqrt(group_sum(ss, lid, WG) / f32(p.cols) + EPS);
}
fn x_load4(i4: u32) -> vec4<f32> {
  let w = vec4<f32>(bias[4u * i4], bias[4u * i4 + 1u], bias[4u * i4 + 2u], bias[4u * i4 + 3u]);
  return x4[i4] * x_inv * w;
}
