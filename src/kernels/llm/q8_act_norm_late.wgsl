// One token's x for matvec_q8.wgsl, RMS-normalised and quantized by every workgroup into its own
// workgroup memory like q8_act_norm.wgsl, with the norm's scale applied late: per block of 32,
// v = x * w is quantized (d = max|v| / 127, q = round(v / d)) without waiting for the sum of
// squares, and x_scale() = 1 / sqrt(mean(x^2) + eps) multiplies each row's sum after the dot
// products (the same value as quantizing x / sqrt(..) * w, up to the rounding of the scale's
// product: a value on a rounding boundary may round the other way). One read of x, the block's
// two halves exchanged with the partner invocation (lid ^ 1: partner() from the reduce file), two
// barriers in all with subgroups. x f32 at binding 2, the norm weight at 3; XC (a prelude
// constant): the columns, a multiple of 32. Uses the kernel's `red` (WG floats), group_sum,
// partner, WG and p.eps.
@group(0) @binding(2) var<storage, read> xf: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> xn: array<vec4<f32>>;
var<workgroup> xw: array<vec4<u32>, XC / 16u>;
var<workgroup> xd: array<vec2<u32>, XC / 32u>;
var<private> x_inv: f32;

fn x_scale() -> f32 { return x_inv; }

// Each invocation quantizes 16 elements (half a block: one vec4 of xw) per pass, its partner
// (lid ^ 1) the other half. Call in uniform control flow.
fn x_prologue(lid: u32) {
  var ss = 0.0;
  for (var e0 = 0u; e0 < XC; e0 += 16u * WG) {
    let e = e0 + 16u * lid;
    let on = e < XC;  // partners are on or off together: XC % 32 == 0
    var v: array<vec4<f32>, 4>;
    var amax = 0.0;
    if (on) {
      for (var k = 0u; k < 4u; k++) {
        let xv = xf[e / 4u + k];
        ss += dot(xv, xv);
        v[k] = xv * xn[e / 4u + k];
        let a = abs(v[k]);
        amax = max(amax, max(max(a.x, a.y), max(a.z, a.w)));
      }
    }
    amax = max(amax, partner(amax, lid));
    let d = amax / 127.0;
    let id = select(0.0, 1.0 / d, d > 0.0);
    let qh = q8_half(v, id);
    let qw = qh.w;
    let s = qh.s;
    let hi = i32(partner(f32(s), lid));  // exact: |s| <= 16 * 127
    if (on) {
      xw[e / 16u] = qw;
      if ((lid & 1u) == 0u) {
        xd[e / 32u] = vec2<u32>(bitcast<u32>(d), (bitcast<u32>(s) & 0xffffu) | (bitcast<u32>(hi) << 16u));
      }
    }
  }
  workgroupBarrier();  // xw and xd written (group_sum of one subgroup has no barrier)
  x_inv = inverseSqrt(group_sum(ss, lid, WG) / f32(XC) + p.eps);
}
