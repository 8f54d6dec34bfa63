// CPU quantizers from f32 to the file types wgc writes: F32, F16, Q8_0 and Q4_0 bit-exact with
// ggml's reference quantizers (ggml-quants.c quantize_row_q8_0_ref / quantize_row_q4_0_ref, with
// GGML_FP32_TO_FP16 rounding to nearest even as F16C does):
//
//   Q8_0: d = max|x| / 127 (f16), q = roundf(x / d) (half away from zero), 34 bytes per 32 values
//   Q4_0: m = the value of largest magnitude (the first one on ties), d = m / -8 (f16),
//         q = min(15, (int8_t)(x / d + 8.5)) (truncation), byte j = q[j] | q[j + 16] << 4,
//         18 bytes per 32 values
//
// The same functions llama-quantize uses for these types, so a file written here has the bytes
// llama.cpp would write for the same f32 values.
//
// Q4_K and Q6_K (256-value super-blocks, ggml's block layouts) are simpler than ggml's: Q4_K takes
// each 32's scale as (max - min) / 15 and its min below zero, where ggml searches for the pair
// with the least weighted error; Q6_K maps each 16's largest magnitude to -32 (ggml's
// make_qx_quants refines it). The 6-bit / int8 super-block scales are ggml's. Valid files of the
// same sizes and value ranges (speed does not depend on the values), not llama.cpp's bytes.
#pragma once

#include "cpu/llm/tensor_type.h"

#include <cstddef>
#include <cstdint>
#include <span>

namespace wgc::llm::synth {

// `x.size()` a multiple of 32; `out` exactly x.size() / 32 blocks. wgc::Error otherwise.
void quantize_row_q8_0(std::span<const float> x, std::span<std::byte> out);
void quantize_row_q4_0(std::span<const float> x, std::span<std::byte> out);
// `x.size()` a multiple of 256; 144 / 210 bytes per 256 values.
void quantize_row_q4_k(std::span<const float> x, std::span<std::byte> out);
void quantize_row_q6_k(std::span<const float> x, std::span<std::byte> out);
// f32 -> f16 (round to nearest even), 2 bytes per value.
void convert_row_f16(std::span<const float> x, std::span<std::byte> out);
// f32 -> bf16 (round to nearest even), 2 bytes per value.
void convert_row_bf16(std::span<const float> x, std::span<std::byte> out);

// Any of F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K (others: wgc::Error). `out` must be exactly the bytes of x.size()
// values of type t (whole blocks).
void quantize(TensorType t, std::span<const float> x, std::span<std::byte> out);

// True for the types quantize() writes.
bool can_quantize(TensorType t);

}  // namespace wgc::llm::synth
