// matvec.wgsl's residual with a column-split matvec's partial sums still to be added (matvec.wgsl
// with KS wrote them, [RES_S ranges][RES_ROWS]): matvec_sum.wgsl's arithmetic (the ranges in
// order, then the old value) done where the residual is read, so that no sum pass comes between.
// x_res4: x plus the sums, for matvec_x_norm.wgsl (x itself is not written); y_old: y plus the
// sums, what the rows' sums are added to where they accumulate (element yi of y is element yi of
// the partials' rows). The same values as matvec_sum.wgsl writing y before. Prelude constants
// RES_S, RES_ROWS (a multiple of 4) and RES_BINDING.
@group(0) @binding(RES_BINDING) var<storage, read> res_part: array<vec4<f32>>;
const RES_R4: u32 = RES_ROWS / 4u;

fn x_res4(i4: u32) -> vec4<f32> {
  var s = res_part[i4];
  for (var k = 1u; k < RES_S; k++) { s += res_part[k * RES_R4 + i4]; }
  return s + x4[i4];
}
fn y_old(yi: u32) -> f32 {
  var s = res_part[yi / 4u][yi % 4u];
  for (var k = 1u; k < RES_S; k++) { s += res_part[k * RES_R4 + yi / 4u][yi % 4u]; }
  return s + y[yi];
}
