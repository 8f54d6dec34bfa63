// The fused epilogue: y = act(acc + bias[co] + residual[i]). Needs Bias, Res and p declared by
// the includer. The flags are override constants, so a pipeline carries only what its layer uses
// (unused bindings still get a small dummy tensor).
override HAS_BIAS: bool = false;
override HAS_RESIDUAL: bool = false;
override ACT: u32 = 0u;  // 0: none, 1: relu, 2: clamp to [p.clip_min, p.clip_max] (ReLU6, Clip)

fn epilogue(acc: f32, co: u32, yi: u32) -> f32 {
  var v = acc;
  if (HAS_BIAS) { v += Bias[co]; }
  if (HAS_RESIDUAL) { v += Res[yi]; }
  if (ACT == 1u) { v = max(v, 0.0); }
  if (ACT == 2u) { v = min(max(v, p.clip_min), p.clip_max); }
  return v;
}
