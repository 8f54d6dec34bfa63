// Sobel edge magnitude, tiled: tile + halo in workgroup memory.
// vec4 form: an RGBA f32 image, one whole pixel per element (one load per pixel).
alias V = vec4<f32>;
//!include "stencil/body/sobel_tiled.wgsl"
