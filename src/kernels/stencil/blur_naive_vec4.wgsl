// Separable Gaussian blur, naive: entries horizontal and vertical, one thread per pixel.
// vec4 form: an RGBA f32 image, one whole pixel per element (one load per pixel).
alias V = vec4<f32>;
//!include "stencil/body/blur_naive.wgsl"
