// matvec.wgsl's x: one token's attention output combined from its flash-decoding partials
// (attn_partial.wgsl's layout, [XC_NH heads][XC_S splits][XC_HD + 2]: the unnormalised acc, the
// max m, the sum l), so that the o projection does attn_combine.wgsl's pass itself. x4 (binding
// 2) holds the partials (read as floats: a split's row is not vec4-aligned). x_prologue weighs
// every head's splits once per workgroup (exp(m_s - max) and the weighted sum of l, in split
// order: attn_merge.wgsl's merge_strided with one invocation per element), then x_load4 adds the
// weighted accs of the splits that have keys in split order and divides by the sum, so x is
// what attn_combine.wgsl writes with combine_sp 1. Needs XS (each element loaded once, into the
// staged x) and the prelude constants XC_NH, XC_S, XC_HD (a multiple of 4), XC_PREFIX.
const_assert XS && XC_HD % 4u == 0u;
var<workgroup> xc_f: array<f32, XC_NH * XC_S>;  // the splits' weights exp(m_s - max), per head
var<workgroup> xc_l: array<f32, XC_NH>;         // each head's weighted sum of l
var<workgroup> xc_n: array<u32, XC_NH>;         // each head's splits that hold keys (a prefix)

const XC_W: u32 = XC_HD + 2u;  // floats per split of a head
const XC_EMPTY: f32 = -3.0e38;  // the m of a split with no keys (flash_decode*.wgsl's MASKED)
fn xc_at(i: u32) -> f32 { return x4[i / 4u][i % 4u]; }

// A recorded step's splits cover the whole cache, so early on most hold no keys (m = XC_EMPTY,
// weight exactly 0). XC_PREFIX: only the keyed prefix is weighed and added, in loops whose trip
// count is read at run time; else every split, in loops of XC_S (the same sums either way).
fn x_prologue(lid: u32) {
  for (var h = lid; h < XC_NH; h += WG) {
    let b = h * XC_S * XC_W + XC_HD;
    var mx = -3.0e38;
    var n = 0u;
    for (var s = 0u; s < XC_S; s++) {
      let m = xc_at(b + s * XC_W);
      mx = max(mx, m);
      if (m > XC_EMPTY) { n = s + 1u; }
    }
    if (!XC_PREFIX) { n = XC_S; }
    var l = 0.0;
    for (var s = 0u; s < n; s++) {
      let f = exp(xc_at(b + s * XC_W) - mx);
      xc_f[h * XC_S + s] = f;
      l += f * xc_at(b + s * XC_W + 1u);
    }
    xc_l[h] = l;
    xc_n[h] = n;
  }
  workgroupBarrier();
}
fn x_load4(i4: u32) -> vec4<f32> {
  let h = (4u * i4) / XC_HD;
  let b = h * XC_S * XC_W + (4u * i4) % XC_HD;
  var a = vec4<f32>(0.0);
  let ns = select(XC_S, xc_n[h], XC_PREFIX);
  for (var s = 0u; s < ns; s++) {
    let f = xc_f[h * XC_S + s];
    if (f != 0.0) {  // a keyed split far below the maximum
      let e = b + s * XC_W;
      a += f * vec4<f32>(xc_at(e), xc_at(e + 1u), xc_at(e + 2u), xc_at(e + 3u));
    }
  }
  return a / xc_l[h];
}
fn x_scale(lid: u32) -> f32 { return 1.0; }
