// The one-token matvecs' bindings after the weights' (matvec.wgsl, matvec_kx.wgsl): x (or what
// the x file reads from it), the bias, y, and the parameters at P_BINDING (a prelude constant).
@group(0) @binding(2) var<storage, read> x4: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;
// linear_params.wgsl's fields, then ROPE's (rope_kv_append.wgsl's for one token; zero without).
struct P {
//!include "llm/linear_params_fields.wgsl"
//!include "llm/rope_params_fields.wgsl"
}
@group(0) @binding(P_BINDING) var<uniform> p: P;
