// The binary operation, chosen by the OP override (ops/tensor_ops.cpp: add, sub, mul, div, max,
// min, pow in BinaryOp order).
override OP: u32 = 0u;
fn apply(x: f32, y: f32) -> f32 {
  switch (OP) {
    case 0u: { return x + y; }
    case 1u: { return x - y; }
    case 2u: { return x * y; }
    case 3u: { return x / y; }
    case 4u: { return max(x, y); }
    case 5u: { return min(x, y); }
    default: { return pow(x, y); }
  }
}
