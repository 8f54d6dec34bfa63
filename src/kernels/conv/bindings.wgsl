// Bindings of the convolution kernels that read x and the weights in ONNX layout as scalars.
@group(0) @binding(0) var<storage, read> X: array<f32>;
@group(0) @binding(1) var<storage, read> Wt: array<f32>;
@group(0) @binding(2) var<storage, read> Bias: array<f32>;
@group(0) @binding(3) var<storage, read> Res: array<f32>;
@group(0) @binding(4) var<storage, read_write> Y: array<f32>;
//!include "conv/params.wgsl"
@group(0) @binding(5) var<uniform> p: Params;
//!include "conv/epilogue.wgsl"
