// Where the input plane of a depthwise output plane starts in x: output plane n * c_out + co reads
// input channel co / (c_out / c_in) (the channel multiplier) of image n. Needs p (conv/params.wgsl).
fn depthwise_x_base(plane: u32) -> u32 {
  let co = plane % p.c_out;
  return ((plane / p.c_out) * p.c_in + co / (p.c_out / p.c_in)) * p.h * p.w;
}
