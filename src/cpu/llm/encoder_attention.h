// Bidirectional (encoder) attention over packed sequences: the CPU reference of
// kernels/encoder/attention.wgsl, and the encoder's CPU engine (it takes a range of (token, head)
// rows so a thread pool can split the work). Plain loops accumulated in double: no rounding order
// to match, so a kernel that differs from it by more than f32 rounding is wrong.
#pragma once

#include <cstdint>
#include <span>

namespace wgc::llm {

// The layout both read: qkv[row * stride + q_off + h * head_dim + d] (queries), keys at k_off + g *
// head_dim and values at v_off + g * head_dim (g = h / (n_heads / n_kv_heads)); out[t * o_stride +
// o_off + h * head_dim + d]. Token t attends to rows ranges[2t] .. ranges[2t + 1] - 1.
struct EncoderAttnDims {
  uint32_t n_tokens = 0, n_heads = 0, n_kv_heads = 0, head_dim = 0;
  uint32_t stride = 0, q_off = 0, k_off = 0, v_off = 0;
  uint32_t o_stride = 0, o_off = 0;
  float scale = 1;
};

// Throws wgc::Error (naming `op` and the field) when the dims are inconsistent with themselves or
// with buffers of qkv_elems / out_elems elements, or a range leaves 0 .. n_rows.
void check_encoder_attention(const EncoderAttnDims& d, std::span<const uint32_t> ranges, uint64_t qkv_elems,
                             uint64_t out_elems, const char* op);

namespace cpu {

// Rows r0 .. r1 - 1 of the n_tokens * n_heads (token, head) rows (r = t * n_heads + h).
void encoder_attention(std::span<const float> qkv, std::span<const uint32_t> ranges, std::span<float> out,
                       const EncoderAttnDims& d, uint64_t r0, uint64_t r1);
// All of them.
void encoder_attention(std::span<const float> qkv, std::span<const uint32_t> ranges, std::span<float> out,
                       const EncoderAttnDims& d);

}  // namespace cpu
}  // namespace wgc::llm
