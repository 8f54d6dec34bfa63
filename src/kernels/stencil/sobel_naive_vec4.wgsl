// Sobel edge magnitude, naive: one thread per pixel reading global memory.
// vec4 form: an RGBA f32 image, one whole pixel per element (one load per pixel).
alias V = vec4<f32>;
//!include "stencil/body/sobel_naive.wgsl"
