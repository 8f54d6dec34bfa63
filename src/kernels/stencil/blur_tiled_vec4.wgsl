// Separable Gaussian blur, tiled: entries horizontal and vertical, tile + halo in workgroup memory.
// vec4 form: an RGBA f32 image, one whole pixel per element (one load per pixel).
alias V = vec4<f32>;
//!include "stencil/body/blur_tiled.wgsl"
