// The binary operation, chosen by the OP override (ops/tensor_ops.cpp: add, sub, mul, div, max,
// min, pow in BinaryOp order).
override OP: u32 = 0u;

// ONNX Pow: WGSL's pow leaves x < 0 (and x = 0 with y <= 0) undefined; C's pow defines them.
// (Infinity and NaN come from run-time bit patterns: WGSL refuses them as constants.)
fn pow_c(x: f32, y: f32) -> f32 {
  var inf_bits = 0x7f800000u;
  var nan_bits = 0x7fc00000u;
  if (y == 0.0) { return 1.0; }
  if (x == 0.0) { return select(0.0, bitcast<f32>(inf_bits), y < 0.0); }
  let m = pow(abs(x), y);
  if (x > 0.0) { return m; }
  if (floor(y) != y) { return bitcast<f32>(nan_bits); }
  return select(m, -m, abs(y) % 2.0 == 1.0);
}
fn apply(x: f32, y: f32) -> f32 {
  switch (OP) {
    case 0u: { return x + y; }
    case 1u: { return x - y; }
    case 2u: { return x * y; }
    case 3u: { return x / y; }
    case 4u: { return max(x, y); }
    case 5u: { return min(x, y); }
    default: { return pow_c(x, y); }
  }
}
