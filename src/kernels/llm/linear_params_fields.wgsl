  // The fields of linear_params.wgsl's P, included into it and into matvec.wgsl's (which adds
  // its own after them).
  n: u32,  // tokens
  rows: u32,
  cols: u32,
  row0: u32,
  x_stride: u32,
  y_stride: u32,
  y_off: u32,
  flags: u32,  // 1: add bias, 2: accumulate into y
