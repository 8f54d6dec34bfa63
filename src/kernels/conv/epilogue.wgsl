// The fused epilogue: y = act(acc + bias[co] + residual[i]). Needs Bias, Res and p declared by
// the includer. The flags are override constants, so a pipeline carries only what its layer uses
// (unused bindings still get a small dummy tensor).
override HAS_BIAS: bool = false;
override HAS_RESIDUAL: bool = false;
override ACT: u32 = 0u;  // 0: none, 1: relu, 2: clamp to [p.clip_min, p.clip_max] (ReLU6, Clip)

fn epilogue(acc: f32, co: u32, yi: u32) -> f32 {
  var bias = 0.0;
  if (HAS_BIAS) { bias = Bias[co]; }
  return epilogue_biased(acc, bias, yi);
}

// The same with the channel's bias already read (any value when !HAS_BIAS): kernels that write
// many outputs of one channel read it once.
fn epilogue_biased(acc: f32, bias: f32, yi: u32) -> f32 {
  var v = acc;
  if (HAS_BIAS) { v += bias; }
  if (HAS_RESIDUAL) { v += Res[yi]; }
  if (ACT == 1u) { v = max(v, 0.0); }
  if (ACT == 2u) { v = min(max(v, p.clip_min), p.clip_max); }
  return v;
}
