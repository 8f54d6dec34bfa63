// CPU conversions of model weights to f32: half-precision scalars and every block-quantized type
// wgc reads (the reference the GPU kernels are tested against, and the model loaders' fallback
// for types the kernels do not read). Block layouts follow GGML's
// ggml-common.h; K-quants use super-blocks of 256 elements.
#pragma once

#include "cpu/llm/tensor_type.h"

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace wgc::llm {

float f16_to_f32(uint16_t h);  // exact
// Round to nearest even; overflow gives inf, NaN stays NaN. Maratyszcza's conversion, as GGML's
// scalar path: the float unit does the rounding. Inline: writers convert gigabytes with it.
inline uint16_t f32_to_f16(float f) {
  float base = (std::fabs(f) * 0x1.0p+112f) * 0x1.0p-110f;
  const uint32_t w = std::bit_cast<uint32_t>(f);
  const uint32_t shl1_w = w + w;
  const uint32_t sign = w & 0x80000000u;
  uint32_t bias = shl1_w & 0xFF000000u;
  if (bias < 0x71000000u) bias = 0x71000000u;
  base = std::bit_cast<float>((bias >> 1) + 0x07800000u) + base;
  const uint32_t bits = std::bit_cast<uint32_t>(base);
  const uint32_t exp_bits = (bits >> 13) & 0x00007C00u;
  const uint32_t mantissa_bits = bits & 0x00000FFFu;
  const uint32_t nonsign = exp_bits + mantissa_bits;
  return uint16_t((sign >> 16) | (shl1_w > 0xFF000000u ? 0x7E00u : nonsign));
}
float bf16_to_f32(uint16_t h);  // exact
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

// Quantizing (f32 to F16, Q8_0, Q4_0 as llama.cpp writes them): llm/synth/quantize.h.

}  // namespace wgc::llm
