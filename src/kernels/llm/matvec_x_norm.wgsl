// matvec.wgsl's x RMS-normalised as rms_norm.wgsl does (x / sqrt(mean(x^2) + EPS) * w), by every
// workgroup (instead of an rms_norm pass before the matvec; the sum of squares is added in
// another order). The norm weight w comes in the bias binding (no bias is added then); the columns
// (mv_cols) a multiple of 4. Uses the kernel's `red` (WG floats), group_sum and WG.
// X_LATE (a prelude constant; with XS: x staged whole, each element through x_load4 once): x * w
// is staged before the sum of squares is known, the squares added as it is staged, and each
// row's sum scaled by 1 / rms at the end (x_scale): no reduction and one read of x before the
// weights are used.
override EPS: f32 = 1e-5;
var<private> x_inv: f32;
var<private> x_ss: f32;

fn x_prologue(lid: u32) {
  if (X_LATE) { return; }
  var ss = 0.0;
  for (var i = lid; i < mv_cols() / 4u; i += WG) {
    let v = x4[i];
    ss += dot(v, v);
  }
  x_inv = inverseSqrt(group_sum(ss, lid, WG) / f32(mv_cols()) + EPS);
}
fn x_load4(i4: u32) -> vec4<f32> {
  let w = vec4<f32>(bias[4u * i4], bias[4u * i4 + 1u], bias[4u * i4 + 2u], bias[4u * i4 + 3u]);
  let v = x4[i4];
  if (X_LATE) {
    x_ss += dot(v, v);
    return v * w;
  }
  return v * x_inv * w;
}
// What each row's sum is multiplied by (call in uniform control flow, after x is staged).
fn x_scale(lid: u32) -> f32 {
  if (X_LATE) { return inverseSqrt(group_sum(x_ss, lid, WG) / f32(mv_cols()) + EPS); }
  return 1.0;
}
