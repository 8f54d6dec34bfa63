// Sobel edge magnitude, tiled: tile + halo in workgroup memory.
// Scalar form: an interleaved f32 image of any channel count, one channel per workgroup z.
alias V = f32;
//!include "stencil/body/sobel_tiled.wgsl"
