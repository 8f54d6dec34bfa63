// matvec.wgsl's x as it is.
fn x_prologue(lid: u32) {}
fn x_load4(i4: u32) -> vec4<f32> { return x4[i4]; }
fn x_scale(lid: u32) -> f32 { return 1.0; }
