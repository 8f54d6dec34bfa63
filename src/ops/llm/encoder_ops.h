// The encoder's own op (src/kernels/encoder): bidirectional attention over packed sequences. The
// rest of an encoder layer is built from existing ops (LlmOps::linear with biases, ops/norm.h's
// LayerNorm, ops/elementwise.h's GELU, LlmOps::rope / swiglu / embedding).
#pragma once

#include "cpu/llm/encoder_attention.h"
#include "gpu/batch.h"

namespace wgc::llm {

// out = attention of every token over the rows of its range (EncoderAttnDims); qkv, out f32,
// ranges u32 [n_tokens][2] (ranges_host: the same values, for the checks; they are not uploaded).
void encoder_attention(Batch& b, const Tensor& qkv, const Tensor& ranges, std::span<const uint32_t> ranges_host,
                       const Tensor& out, const EncoderAttnDims& d);

}  // namespace wgc::llm
