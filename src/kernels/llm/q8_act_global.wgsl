// quant_act.wgsl's 8-bit activations in storage buffers (bindings 2 and 3), read by q8_act.wgsl's
// helpers; nothing to prepare before the dot products, nothing to scale after them.
@group(0) @binding(2) var<storage, read> xw: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read> xd: array<vec2<u32>>;

const XSWZ: bool = false;  // xw as quant_act.wgsl wrote it

fn x_prologue(lid: u32) {}
fn x_scale() -> f32 { return 1.0; }
