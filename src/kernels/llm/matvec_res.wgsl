// matvec.wgsl's residual as it is: x_res4 (the x that matvec_x_norm.wgsl normalises) and y_old
// (the y that the rows' sums are added to where they accumulate).
fn x_res4(i4: u32) -> vec4<f32> { return x4[i4]; }
fn y_old(yi: u32) -> f32 { return y[yi]; }
