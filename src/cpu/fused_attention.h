// Attention as a graph computes it (ViT's scaled_dot_product_attention, BERT's eager attention):
// out = softmax(scale * Q x Kt + mask) x V over the last axis, with the batch dims (heads
// included) broadcast as ONNX MatMul does. cnn/fuse.h makes one node of the exporters'
// MatMul -> [Mul | Div] -> [Add] -> Softmax -> MatMul chain; ops/fused_attention.h runs it as one
// kernel; this is its CPU reference.
#pragma once

#include <array>
#include <cstdint>
#include <span>

namespace wgc {

// Q [batch][lq][d], Kt [batch][d][lk] (K transposed, as the exporters give MatMul's B), V
// [batch][lk][dv], each contiguous within a batch entry and placed by its batch strides (0:
// broadcast); the mask (optional) is read at m_strides . batch + i * m_row + j * m_col; the output
// is [batch][lq][dv], contiguous.
struct FusedAttentionDims {
  static constexpr uint32_t kMaxBatchRank = 4;
  uint32_t rank = 0;
  std::array<uint32_t, kMaxBatchRank> batch{};
  std::array<uint32_t, kMaxBatchRank> q_strides{}, k_strides{}, v_strides{}, m_strides{};
  uint32_t lq = 0, lk = 0, d = 0, dv = 0;
  uint32_t m_row = 0, m_col = 0;
  float scale = 1;
  bool mask = false;
  uint64_t batches() const;
  uint64_t out_count() const { return batches() * lq * dv; }
  // Elements each operand must hold (its largest offset + 1), for the size checks.
  uint64_t q_span() const, k_span() const, v_span() const, m_span() const;
  double flops() const { return 2.0 * double(batches()) * lq * lk * (double(d) + dv); }
};
void check(const FusedAttentionDims& d);

namespace cpu {
// In double; a row whose scores are all -inf gives NaN (as softmax does).
void fused_attention(std::span<const float> q, std::span<const float> kt, std::span<const float> v,
                     std::span<const float> mask, std::span<float> out, const FusedAttentionDims& d);
}  // namespace cpu
}  // namespace wgc
