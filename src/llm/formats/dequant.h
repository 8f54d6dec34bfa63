// CPU conversions of model weights to f32: half-precision scalars and every block-quantized type
// wgc reads (the reference the GPU kernels are tested against). Block layouts follow GGML's
// ggml-common.h; K-quants use super-blocks of 256 elements.
#pragma once

#include "llm/formats/tensor_type.h"

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace wgc::llm {

float f16_to_f32(uint16_t h);
uint16_t f32_to_f16(float f);  // round to nearest even; overflow gives inf, NaN stays NaN
float bf16_to_f32(uint16_t h);
uint16_t f32_to_bf16(float f);  // round to nearest even

// Converts `out.size()` elements of type `t` stored in `src` to f32. `out.size()` must be a multiple
// of the block size and `src` exactly the matching number of bytes; otherwise wgc::Error. Integer
// types convert by value.
void dequantize(TensorType t, std::span<const std::byte> src, std::span<float> out);
// The same, returning a vector of n elements.
std::vector<float> dequantize(TensorType t, std::span<const std::byte> src, size_t n);

// Per-block decoders (one block of block_size(t) elements; `x` points at block_bytes(t) bytes).
void dequantize_block_q4_0(const std::byte* x, float* y);
void dequantize_block_q4_1(const std::byte* x, float* y);
void dequantize_block_q5_0(const std::byte* x, float* y);
void dequantize_block_q5_1(const std::byte* x, float* y);
void dequantize_block_q8_0(const std::byte* x, float* y);
void dequantize_block_q4_k(const std::byte* x, float* y);
void dequantize_block_q5_k(const std::byte* x, float* y);
void dequantize_block_q6_k(const std::byte* x, float* y);
void dequantize_block_q8_k(const std::byte* x, float* y);

// Q8_0 quantization as llama.cpp's reference does it (d = max|x| / 127 stored as f16,
// q = round(x / d)); `x.size()` a multiple of 32, `out` 34 bytes per 32 values.
void quantize_q8_0(std::span<const float> x, std::span<std::byte> out);

}  // namespace wgc::llm
