// LLM weights on the GPU in their file's type, dequantized inside the kernels.
//
// upload_weight() takes a matrix as GGUF/ggml stores it (rows of `cols` elements, torch [out, in]
// order, row-major, blocks of a row in order) and repacks it into a 4-byte-aligned GPU layout:
//
//   type  | data (u32 words)                                   | scales (u32 words)
//   ------|----------------------------------------------------|---------------------------------
//   F32   | f32, row stride round_up(cols, 4), zero padded     | none (same tensor as data)
//   F16   | 2 halves per word, row stride round_up(cols, 8)/2  | none
//   BF16  | as F16, bf16 bits                                  | none
//   Q8_0  | per 32-block: 8 words of int8 quants (4 per word)  | f16 d per block, 2 per word, index row*nb+b
//   Q4_0  | per 32-block: 4 words of the 16 nibble bytes       | as Q8_0
//   Q4_K  | per 32-element sub-block: 4 words of nibbles, as     | per 256-block 5 words: d | dmin << 16
//         | Q4_0's (low: elements 0..15, high: 16..31)         | (f16), then sc | mn << 8 of sub-blocks
//         |                                                    | 2i (low half) and 2i + 1 (high half)
//   Q6_K  | a row: per 32-element sub-block 4 words of low     | per 256-block 5 words: f32 d, then
//         | nibbles as Q4_0's, then per sub-block 2 words of   | the 16 int8 scales (2s, 2s + 1:
//         | top 2 bits (word h, bits 8k + 2i: element          | sub-block s's elements 0..15, 16..31)
//         | 16h + 4i + k's)                                    |
//
// (nb = blocks per row.) Q4_K and Q6_K are repacked losslessly (the same quants, d, dmin, scales
// and mins, moved so that a kernel's unit is a 32-element sub-block whose nibbles are one vec4, as
// Q4_0's, with byte scales): Q4_K 148 bytes per 256 elements on the GPU instead of the file's 144
// (+2.8%), Q6_K 212 as the file's 210 (the f16 d as f32, as before). Every row starts at a 16-byte
// boundary, so kernels read it as vec4<u32>. Quantized types need cols to be a multiple of their
// block (32 or 256); F32/F16/BF16 take any cols. To concatenate matrices along rows (Q|K|V,
// gate|up), concatenate their GGUF bytes before uploading (all must have the same type and cols);
// ops then select row ranges with row0/rows.
#pragma once

#include "cpu/llm/tensor_type.h"
#include "gpu/context.h"
#include "gpu/tensor.h"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace wgc::llm {

// Q4_K's and Q6_K's scale words per 256-element super-block (the table above).
inline constexpr uint64_t kKquantScaleWords = 5;

// The tensor types the GPU kernels read (src/kernels/llm/weights/<lower-case name>.wgsl).
inline constexpr TensorType kGpuTensorTypes[] = {TensorType::F32,  TensorType::F16,  TensorType::BF16, TensorType::Q8_0,
                                                 TensorType::Q4_0, TensorType::Q4_K, TensorType::Q6_K};
bool is_gpu_weight_type(TensorType t);

// Bytes of a rows x cols matrix in the GGUF file; throws if cols is not a multiple of the block.
uint64_t ggml_bytes(TensorType t, int64_t rows, int64_t cols);

struct GpuWeight {
  Tensor data;    // the layout above (U32 words)
  Tensor scales;  // the scale region; the same tensor as data for types without one
  TensorType type = TensorType::F32;
  int64_t rows = 0, cols = 0;
  uint64_t gpu_bytes() const;  // bytes a kernel reads for the whole matrix (data + scales)
};

// Bytes of the data buffer (the layout above, without the scales) of a rows x cols matrix of a type
// the kernels read.
uint64_t packed_data_bytes(TensorType t, int64_t rows, int64_t cols);

// Repacks ggml bytes (exactly ggml_bytes(type, rows, cols) of them) and uploads them.
GpuWeight upload_weight(const Context& ctx, TensorType type, std::span<const std::byte> ggml_bytes, int64_t rows,
                        int64_t cols);

// The repacking alone (host side), as two word vectors (scales empty for types without).
struct PackedWeight {
  std::vector<uint32_t> data, scales;
};
PackedWeight pack_weight(TensorType type, std::span<const std::byte> ggml_bytes, int64_t rows, int64_t cols);

}  // namespace wgc::llm
