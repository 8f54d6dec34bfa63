// matvec.wgsl without the argmax epilogue.
fn am_epilogue(lid: u32, wg: u32, outs: array<f32, R_MAX>) {}
