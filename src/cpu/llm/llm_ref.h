// CPU references for the LLM kernels (src/kernels/llm, src/ops/llm): plain loops, f64
// accumulation. They define what the GPU kernels compute; the tests compare against them.
#pragma once

#include "cpu/llm/tensor_type.h"

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace wgc::llm::ref {

// Dequantizes rows x cols elements of ggml bytes (llm::dequantize, cpu/llm/dequant.h), row-major,
// widened to f64 for the references' f64 sums.
std::vector<double> dequantize(TensorType type, std::span<const std::byte> ggml_bytes, int64_t rows, int64_t cols);

// Random ggml bytes of a rows x cols matrix: values around [-1, 1] (quantized types: random quants,
// small positive scales). For tests and benchmarks.
std::vector<std::byte> random_weight(TensorType type, int64_t rows, int64_t cols, uint32_t seed);

// y[t][r] = sum_k W[row0 + r][k] x[t][k] (+ bias[row0 + r]) (+ y_old), W dequantized (rows x cols).
std::vector<double> linear(const std::vector<double>& w, int64_t cols, const std::vector<float>& x, int n_tokens,
                           int64_t row0, int64_t nrows);

// out[t][k] = W[ids[t]][k].
std::vector<float> embedding(const std::vector<double>& w, int64_t cols, const std::vector<uint32_t>& ids);

// y = x / sqrt(mean(x^2) + eps) * w, per row of n.
std::vector<float> rms_norm(const std::vector<float>& x, const std::vector<float>& w, int rows, int n, float eps);

// silu(g) * u.
std::vector<float> swiglu(const std::vector<float>& g, const std::vector<float>& u);

// x rounded as 8-bit activations (Q8Act): per block of 32, d = max|x| / 127, each value
// round(x * (1 / d)) * d (0 for an all-zero block). x.size() a multiple of 32.
std::vector<float> quantize_q8_act(const std::vector<float>& x);

// RoPE on x [n_tokens][n_heads][head_dim] in place, positions pos[t]; inv_freq has head_dim/2
// entries; angle = f32(pos) * inv_freq in f32 (as transformers), then cos/sin in f64.
// interleaved: pairs (2i, 2i+1) (GGML "norm"); else pairs (i, i + head_dim/2) (HF / neox).
void rope(std::vector<float>& x, int n_tokens, int n_heads, int head_dim, const std::vector<int>& pos,
          const std::vector<float>& inv_freq, bool interleaved);

// Causal attention with GQA. q [n][n_heads][hd]; k, v [kv_len][n_kv][hd] hold all keys (cached
// and new); query t sits at position start + t and sees keys 0..start+t, or with a sliding window
// > 0 keys start+t-window+1..start+t; scores scale * q.k, soft-capped (cap * tanh(s / cap)) where
// softcap > 0. Returns [n][n_heads][hd].
std::vector<float> attention(const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v,
                             int n, int n_heads, int n_kv, int hd, int start, float scale, int window = 0,
                             float softcap = 0);

uint32_t argmax(const std::vector<float>& x);  // first index of the largest value
// The k largest (value desc, id asc on ties).
std::vector<std::pair<float, uint32_t>> topk(const std::vector<float>& x, int k);

}  // namespace wgc::llm::ref
