// Shared by the reduction kernels: the operation, chosen by the OP override (0 sum, 1 max, 2 min;
// mean is a sum scaled by 1/n in the last pass), and the parameter block. The identity element
// (0, -inf, +inf) comes as bits in the parameters: WGSL constants cannot be infinite.
override OP: u32 = 0u;

struct Params {
  n: u32,         // elements to reduce
  identity: u32,  // bits of the identity element
  scale: f32,     // the result is multiplied by this (1, or 1/count for a mean)
}

fn combine(a: f32, b: f32) -> f32 {
  if (OP == 1u) { return max(a, b); }
  if (OP == 2u) { return min(a, b); }
  return a + b;
}

fn combine4(a: vec4<f32>, b: vec4<f32>) -> vec4<f32> {
  if (OP == 1u) { return max(a, b); }
  if (OP == 2u) { return min(a, b); }
  return a + b;
}

// The four lanes of a vec4 reduced to one value.
fn lanes(v: vec4<f32>) -> f32 { return combine(combine(v.x, v.y), combine(v.z, v.w)); }
