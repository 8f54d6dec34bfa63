// Where the input plane of a depthwise output plane starts in x: output plane n * c_out + co reads
// input channel co / (c_out / c_in) (the channel multiplier) of image n. Needs p (conv/params.wgsl).
fn depthwise_x_base(plane: u32) -> u32 {
  return depthwise_x_base_of(plane, p.c_in, p.c_out, p.h * p.w);
}
// The same for sizes given by the caller (constants where a kernel has them).
fn depthwise_x_base_of(plane: u32, c_in: u32, c_out: u32, plane_size: u32) -> u32 {
  let co = plane % c_out;
  return ((plane / c_out) * c_in + co / (c_out / c_in)) * plane_size;
}
