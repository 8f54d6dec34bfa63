// Parameters of the LLM linear kernels (matvec, matmul_tiled, matmul_regtile; ops/llm/llm_ops.cpp
// LlmOps::linear fills them): y[t * y_stride + y_off + r] = W[row0 + r] . x[t * x_stride ..].
struct P {
//!include "llm/linear_params_fields.wgsl"
}
@group(0) @binding(5) var<uniform> p: P;
