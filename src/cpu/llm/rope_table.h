// The RoPE table both engines use: cos/sin of f32(pos) * f32(inv_freq[i]) (an f32 product, as
// transformers computes the angle; cos and sin in f64) for positions < max_pos, as
// [max_pos][inv_freq.size()][2] floats, each times `factor` (YaRN's and LongRoPE's attention factor,
// ModelConfig::rope_attention_factor: transformers multiplies cos and sin by it).
#pragma once

#include <cstddef>
#include <span>
#include <vector>

namespace wgc::llm {

// width > inv_freq.size(): each position's row padded to `width` pairs of (1, 0), unscaled (partial
// rotary: the features past rope_dim pass through, as transformers leaves them).
std::vector<float> rope_cos_sin(std::span<const double> inv_freq, int max_pos, double factor = 1.0, size_t width = 0);

}  // namespace wgc::llm
