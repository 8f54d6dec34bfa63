// Separable Gaussian blur, naive: entries horizontal and vertical, one thread per pixel.
// Scalar form: an interleaved f32 image of any channel count, one channel per workgroup z.
alias V = f32;
//!include "stencil/body/blur_naive.wgsl"
