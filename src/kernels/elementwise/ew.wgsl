// Element-wise ops over up to three broadcast operands of any 4-byte element type (f32, or i32 for
// the device's integers and booleans 0 / 1): out[n] = op(a, b, c) at walk element n. OP is EwOp's
// order in cpu/elementwise.h; INTS says whether the operands are integers (Where: b and c).
//!include "elementwise/walk3.wgsl"
//!include "elementwise/functions.wgsl"
@group(0) @binding(0) var<storage, read> a: array<u32>;
@group(0) @binding(1) var<storage, read> b: array<u32>;
@group(0) @binding(2) var<storage, read> c: array<u32>;
@group(0) @binding(3) var<storage, read_write> out: array<u32>;
@group(0) @binding(4) var<uniform> p: Walk3;

override OP: u32 = 0u;
override INTS: u32 = 0u;
override WG: u32 = 256u;

fn f(v: u32) -> f32 { return bitcast<f32>(v); }
fn i(v: u32) -> i32 { return bitcast<i32>(v); }
fn uf(v: f32) -> u32 { return bitcast<u32>(v); }
fn ui(v: i32) -> u32 { return bitcast<u32>(v); }
fn ub(v: bool) -> u32 { return select(0u, 1u, v); }

fn compare(x: u32, y: u32, less: bool, equal: bool) -> bool {
  if (INTS != 0u) { return (less && i(x) < i(y)) || (equal && i(x) == i(y)); }
  return (less && f(x) < f(y)) || (equal && f(x) == f(y));
}

const I32_MIN: i32 = -2147483647 - 1;

fn arith(x: u32, y: u32) -> u32 {
  if (INTS != 0u) {
    let s = i(x);
    let t = i(y);
    switch (OP) {
      case 9u: { return ui(s + t); }
      case 10u: { return ui(s - t); }
      case 11u: { return ui(s * t); }
      case 12u: {  // toward zero; x / 0 = x (and the one overflowing quotient)
        if (t == 0 || (s == I32_MIN && t == -1)) { return ui(s); }
        return ui(s / t);
      }
      case 13u, 14u: {
        if (t == 0 || (s == I32_MIN && t == -1)) { return 0u; }
        var r = s % t;
        if (OP == 13u && r != 0 && ((r < 0) != (t < 0))) { r += t; }
        return ui(r);
      }
      case 15u: { return ui(max(s, t)); }
      default: { return ui(min(s, t)); }
    }
  }
  let s = f(x);
  let t = f(y);
  switch (OP) {
    case 9u: { return uf(s + t); }
    case 10u: { return uf(s - t); }
    case 11u: { return uf(s * t); }
    case 12u: { return uf(s / t); }
    case 13u, 14u: { return uf(s - t * trunc(s / t)); }
    case 15u: { return uf(max(s, t)); }
    default: { return uf(min(s, t)); }
  }
}

fn float_fn(x: f32) -> f32 {
  switch (OP) {
    case 26u: { return erf_f32(x); }
    case 27u: { return 0.5 * x * (1.0 + erf_f32(x * 0.70710678118654752)); }
    case 28u: { return 0.5 * x * (1.0 + tanh_f32(0.79788456080286536 * (x + 0.044715 * x * x * x))); }
    case 29u: { return softplus_f32(x); }
    case 30u: { return x / (1.0 + abs(x)); }
    case 31u: { return x * tanh_f32(softplus_f32(x)); }
    case 32u: { return 1.0 / x; }
    case 33u: { return floor(x); }
    case 34u: { return ceil(x); }
    case 35u: { return round(x); }
    case 36u: { return sin(x); }
    case 37u: { return cos(x); }
    case 38u: { return tan(x); }
    case 39u: { return asin(x); }
    case 40u: { return acos(x); }
    case 41u: { return atan(x); }
    case 42u: { return sinh(x); }
    case 43u: { return cosh(x); }
    case 44u: { return asinh(x); }
    case 45u: { return acosh(x); }
    case 46u: { return atanh(x); }
    case 47u: { return select(p.beta * p.alpha * (exp(x) - 1.0), p.beta * x, x > 0.0); }
    case 48u: { return max(0.0, x) + min(0.0, p.alpha * (exp(x / p.alpha) - 1.0)); }
    case 49u: { return select(0.0, x, x > p.alpha); }
    default: {  // Shrink
      if (x < -p.alpha) { return x + p.beta; }
      if (x > p.alpha) { return x - p.beta; }
      return 0.0;
    }
  }
}

fn apply(x: u32, y: u32, z: u32) -> u32 {
  switch (OP) {
    case 0u: { return select(uf(f(y) * f(x)), x, f(x) >= 0.0); }  // PRelu
    case 1u: { return ub(compare(x, y, false, true)); }
    case 2u: { return ub(compare(x, y, true, false)); }
    case 3u: { return ub(compare(y, x, true, false)); }
    case 4u: { return ub(compare(x, y, true, true)); }
    case 5u: { return ub(compare(y, x, true, true)); }
    case 6u: { return ub(x != 0u && y != 0u); }
    case 7u: { return ub(x != 0u || y != 0u); }
    case 8u: { return ub((x != 0u) != (y != 0u)); }
    case 9u, 10u, 11u, 12u, 13u, 14u, 15u, 16u: { return arith(x, y); }
    case 17u: { return ub(x == 0u); }
    case 18u: { return ui(-i(x)); }
    case 19u: { return ui(abs(i(x))); }
    case 20u: { return uf(f32(i(x))); }
    case 21u: { return ui(i32(trunc(f(x)))); }
    case 22u: {
      if (INTS != 0u) { return ub(x != 0u); }
      return ub(f(x) != 0.0);
    }
    case 23u: { return ub((x & 0x7fffffffu) > 0x7f800000u); }
    case 24u: {
      let inf = (x & 0x7fffffffu) == 0x7f800000u;
      let neg = (x & 0x80000000u) != 0u;
      return ub(inf && ((!neg && p.alpha != 0.0) || (neg && p.beta != 0.0)));
    }
    case 25u: {
      if (INTS != 0u) { return ui(sign(i(x))); }
      return uf(sign(f(x)));
    }
    case 50u: { return uf(float_fn(f(x))); }
    case 51u: { return select(z, y, x != 0u); }  // Where
    default: { return uf(float_fn(f(x))); }
  }
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let n = (wid.x + wid.y * nwg.x) * WG + lid;
  if (n >= p.count) { return; }
  let o = walk3_offsets(p, n);
  out[n] = apply(a[o.x], b[o.y], c[o.z]);
}
