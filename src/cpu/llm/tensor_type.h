// TensorType: the element/block types of model weights, numbered as GGML numbers them (so a GGUF
// type id is a TensorType value). Block-quantized types pack `block_size` elements into
// `block_bytes` bytes; blocks run along a row (the innermost, contiguous dimension).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace wgc::llm {

enum class TensorType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  BF16 = 30,
};

struct TypeTraits {
  TensorType type;
  std::string_view name;  // "F32", "Q8_0", ... (GGML's spelling)
  uint32_t block_size;    // elements per block (1 for plain types)
  uint32_t block_bytes;   // bytes per block
  bool quantized;         // block-quantized (not a plain element type)
};

// Traits of a known type. Throws wgc::Error for a value that is not one of the enumerators.
const TypeTraits& traits(TensorType t);
// The type with that GGML id, or nullopt for ids wgc does not read (Q2_K, IQ*, removed types).
std::optional<TensorType> type_from_ggml(uint32_t id);
// "F32", "Q4_K", ... -> type (case-sensitive GGML names); nullopt if unknown.
std::optional<TensorType> type_from_name(std::string_view name);

std::string_view to_string(TensorType t);
inline uint32_t block_size(TensorType t) { return traits(t).block_size; }
inline uint32_t block_bytes(TensorType t) { return traits(t).block_bytes; }
inline bool is_quantized(TensorType t) { return traits(t).quantized; }
// True for the floating-point and block types that dequantize to f32 (not the integer types).
bool is_float_like(TensorType t);

// Bytes of one row of `n` elements; nullopt if n is not a multiple of the block size.
std::optional<uint64_t> row_bytes(TensorType t, uint64_t n);
// Bytes of a tensor with these dimensions (any order; the row is `row_len` elements), checked for
// overflow; nullopt on overflow, a negative dimension or a row not a multiple of the block size.
std::optional<uint64_t> tensor_bytes(TensorType t, std::span<const int64_t> shape, int64_t row_len);

}  // namespace wgc::llm
