// Parameters of the LLM linear kernels (matvec, matmul_tiled, matmul_regtile; ops/llm/llm_ops.cpp
// LlmOps::linear fills them): y[t * y_stride + y_off + r] = W[row0 + r] . x[t * x_stride ..].
struct P {
  n: u32,  // tokens
  rows: u32,
  cols: u32,
  row0: u32,
  x_stride: u32,
  y_stride: u32,
  y_off: u32,
  flags: u32,  // 1: add bias, 2: accumulate into y
}
@group(0) @binding(5) var<uniform> p: P;
