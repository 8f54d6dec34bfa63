// quant_act.wgsl's 8-bit activations in storage buffers (bindings 2 and 3), copied by every
// workgroup into its workgroup memory before the dot products (x_prologue), so that the main loop
// reads x there instead of through the cache; XC (a prelude constant): the columns, a multiple of
// 32; XSWZ (a prelude constant): xw's vec4 i stored at x_slot(i) (q8_act.wgsl). Nothing to scale
// after the dot products.
@group(0) @binding(2) var<storage, read> xwg: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read> xdg: array<vec2<u32>>;
var<workgroup> xw: array<vec4<u32>, XC / 16u>;
var<workgroup> xd: array<vec2<u32>, XC / 32u>;

fn x_scale() -> f32 { return 1.0; }

// Call in uniform control flow.
fn x_prologue(lid: u32) {
  for (var i = lid; i < XC / 16u; i += WG) { xw[x_slot(i)] = xwg[i]; }
  for (var i = lid; i < XC / 32u; i += WG) { xd[i] = xdg[i]; }
  workgroupBarrier();
}
