// The CPU LLM engine's kernels: linear layers on weights in their file's type (read in place), 8-bit
// activations for the quantized types, attention over a paged KV cache, SwiGLU. One table of
// function pointers per instruction-set level (cpu_features.h); every level computes the same
// values by the same definitions below, to its own rounding.
//
// Batch invariance (the serving engine relies on it): each output is computed by the same
// sequence of operations whatever the number of tokens, which rows a thread takes or which tile
// an output falls in, so a token's result does not depend on what runs beside it.
//  - Quantized weights (Q8_0, Q4_0, Q4_K, Q6_K) take 8-bit activations (Q8Rows). Per output and
//    per block b of 32 inputs, in order: the exact integer dot product isum_b of the weight's
//    quants (minus their offset: 8 for Q4_0, 32 for Q6_K; times the sub-block scales of Q6_K)
//    and the activation's quants, then acc = fma(float(isum_b), float(dw_b) * dx_b, acc), where
//    dw_b is the weight's block scale (Q4_K: d * scale_j, followed by a second step
//    acc = fma(float(-sum_b), (dmin * min_j) * dx_b, acc) for its minimum).
//  - F32 / F16 / BF16 weights take the f32 activations. Per output, lane l of L (the level's
//    vector width: 8, or 16 for avx512) accumulates fma(w_k, x_k) over k = l, l + L, ... (a tail
//    padded with zeros), and the lanes are summed by the level's fixed tree.
// The portable level rounds each product before adding (no fused multiply-add).
//
// This header is included by the per-level translation units, which are compiled with their own
// target flags: it must hold declarations and plain structs only (no inline functions, no
// templates instantiated there), or the linker could pick an AVX copy for the whole program.
#pragma once

#include "cpu/llm/cpu_features.h"
#include "cpu/llm/tensor_type.h"

#include <cstddef>
#include <cstdint>
#include <memory>

namespace wgc::llm::cpu {

// The weight types the kernels read in place (GGML's block layouts, ggml-common.h): F32, F16,
// BF16, Q8_0, Q4_0, Q4_K, Q6_K.
inline constexpr TensorType kCpuKernelTypes[] = {TensorType::F32,  TensorType::F16,  TensorType::BF16, TensorType::Q8_0,
                                                 TensorType::Q4_0, TensorType::Q4_K, TensorType::Q6_K};
bool kernels_read(TensorType t);
bool takes_q8(TensorType t);  // quantized: its linear layers take Q8Rows activations

// A row-major matrix of `rows` rows of `cols` elements (cols a multiple of the type's block;
// F32/F16/BF16 take any cols), `row_bytes` bytes apart, read in place.
struct Weight {
  TensorType type = TensorType::F32;
  const std::byte* data = nullptr;
  int64_t rows = 0, cols = 0;
  int64_t row_bytes = 0;
  // The same rows in the layout the level packed_isa repacks them in at load (Kernels::pack),
  // read by that level instead of `data`, ignored by the others; null: none.
  const std::byte* packed = nullptr;
  Isa packed_isa = Isa::Portable;
};

// Rows of k activations (k a multiple of 32) quantized per block of 32: d = max|x| / 127,
// q = x / d rounded to nearest even (d = 0: all q 0), s = sums of q per 16 (for the offsets of
// Q4_0 / Q6_K and the minimums of Q4_K). Row t: q + t*k, d + t*k/32, s + t*k/16.
struct Q8Rows {
  int8_t* q = nullptr;
  float* d = nullptr;
  int16_t* s = nullptr;
  int64_t k = 0;
};

// One linear layer call: y[t * y_stride + r] (+)= sum_k W[r][k] x[t][k] for tokens t < n.
struct LinearIo {
  const float* x = nullptr;  // f32 rows, x_stride apart (float weights)
  int64_t x_stride = 0;
  Q8Rows xq;  // the same rows quantized (quantized weights)
  int64_t n = 0;
  float* y = nullptr;
  int64_t y_stride = 0;
  bool accumulate = false;  // add to y (the residual) instead of writing it
};

// Attention of one query over cached positions first .. len - 1 of one KV head. Position j lives in slot
// blocks[j / block] * block + j % block; its key at k + slot * kv_stride (head_dim floats), its
// value likewise at v. out = sum_j softmax_j(scale * q.k_j) v_j, by the same steps for every
// query whatever else runs: scores (the level's dot product), their max, exp(s - max) summed in
// order, the values accumulated in order, one division at the end.
struct AttendArgs {
  const float* q = nullptr;
  int head_dim = 0;
  float scale = 1;
  const float* k = nullptr;
  const float* v = nullptr;
  int64_t kv_stride = 0;
  const int32_t* blocks = nullptr;
  int64_t block = 0;
  int64_t len = 0;
  int64_t first = 0;        // positions first .. len - 1 are attended to (a sliding window: > 0)
  float softcap = 0;        // scores s -> softcap * tanh(s / softcap) (Gemma 2; 0: none)
  float* scores = nullptr;  // scratch, len floats
  float* out = nullptr;     // head_dim floats
};

struct Kernels {
  Isa isa = Isa::Portable;
  int lanes = 8;      // L of the float weights' definition
  int tile_rows = 8;  // rows the linear kernels take at a time: row ranges should be multiples of it
  // Rows [r0, r1) of w for all io.n tokens, with `scratch`: linear_scratch(w.cols) bytes, aligned
  // to 64 (per thread).
  void (*linear)(const Weight& w, const LinearIo& io, int64_t r0, int64_t r1, void* scratch) = nullptr;
  int64_t (*linear_scratch)(int64_t cols) = nullptr;
  // Quantizes rows [t0, t1) of x (rows x_stride apart, k = out.k values each) into out.
  void (*quantize)(const float* x, int64_t x_stride, int64_t t0, int64_t t1, const Q8Rows& out) = nullptr;
  void (*attend)(const AttendArgs& a) = nullptr;
  // out[i] = silu(g[i]) * u[i] = g / (1 + exp(-g)) * u.
  void (*swiglu)(const float* g, const float* u, float* out, int64_t n) = nullptr;
  // Load-time repacking (llama.cpp's repacked weights: no reordering at every call), for levels
  // that have it (else null): the bytes of w's packed copy (0: the level reads w's type as stored),
  // and the copy of row groups [g0, g1) of tile_rows rows each (w.rows / tile_rows groups; the
  // rows past the last whole group are read from w.data) into `out`, packed_bytes(w) bytes for
  // all of them. Results are the same bits with or without it.
  int64_t (*packed_bytes)(const Weight& w) = nullptr;
  void (*pack)(const Weight& w, std::byte* out, int64_t g0, int64_t g1) = nullptr;
};

// A packed copy of w for level k (none when k has none for w's type), and w with it attached
// (Weight::packed points into `bytes`, which must outlive it).
struct PackedWeight {
  std::unique_ptr<std::byte[]> bytes;
  int64_t size = 0;
  Weight weight;
};
PackedWeight pack_weight(const Kernels& k, const Weight& w);

// The table of a level (wgc::Error when !supported(isa)), and of default_isa().
const Kernels& kernels(Isa isa);
const Kernels& kernels();

}  // namespace wgc::llm::cpu
