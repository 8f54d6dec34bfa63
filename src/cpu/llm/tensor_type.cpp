#include "cpu/llm/tensor_type.h"

#include "util/error.h"

#include <array>

namespace wgc::llm {
namespace {

// Block layouts as GGML defines them (ggml-common.h); K-quants use super-blocks of 256.
constexpr std::array<TypeTraits, 17> kTraits{{
    {TensorType::F32, "F32", 1, 4, false},
    {TensorType::F16, "F16", 1, 2, false},
    {TensorType::Q4_0, "Q4_0", 32, 2 + 16, true},
    {TensorType::Q4_1, "Q4_1", 32, 2 + 2 + 16, true},
    {TensorType::Q5_0, "Q5_0", 32, 2 + 4 + 16, true},
    {TensorType::Q5_1, "Q5_1", 32, 2 + 2 + 4 + 16, true},
    {TensorType::Q8_0, "Q8_0", 32, 2 + 32, true},
    {TensorType::Q4_K, "Q4_K", 256, 2 + 2 + 12 + 128, true},
    {TensorType::Q5_K, "Q5_K", 256, 2 + 2 + 12 + 32 + 128, true},
    {TensorType::Q6_K, "Q6_K", 256, 128 + 64 + 16 + 2, true},
    {TensorType::Q8_K, "Q8_K", 256, 4 + 256 + 2 * 16, true},
    {TensorType::I8, "I8", 1, 1, false},
    {TensorType::I16, "I16", 1, 2, false},
    {TensorType::I32, "I32", 1, 4, false},
    {TensorType::I64, "I64", 1, 8, false},
    {TensorType::F64, "F64", 1, 8, false},
    {TensorType::BF16, "BF16", 1, 2, false},
}};

const TypeTraits* lookup(uint32_t id) {
  for (const auto& t : kTraits)
    if (uint32_t(t.type) == id) return &t;
  return nullptr;
}

}  // namespace

const TypeTraits& traits(TensorType t) {
  const TypeTraits* r = lookup(uint32_t(t));
  if (!r) throw Error("wgc: unknown tensor type id " + std::to_string(uint32_t(t)));
  return *r;
}

std::optional<TensorType> type_from_ggml(uint32_t id) {
  const TypeTraits* r = lookup(id);
  if (!r) return std::nullopt;
  return r->type;
}

std::optional<TensorType> type_from_name(std::string_view name) {
  for (const auto& t : kTraits)
    if (t.name == name) return t.type;
  return std::nullopt;
}

std::string_view to_string(TensorType t) {
  const TypeTraits* r = lookup(uint32_t(t));
  return r ? r->name : std::string_view("?");
}

bool is_float_like(TensorType t) {
  switch (t) {
    case TensorType::I8:
    case TensorType::I16:
    case TensorType::I32:
    case TensorType::I64: return false;
    default: return lookup(uint32_t(t)) != nullptr;
  }
}

std::optional<uint64_t> row_bytes(TensorType t, uint64_t n) {
  const TypeTraits& tr = traits(t);
  if (n % tr.block_size) return std::nullopt;
  uint64_t blocks = n / tr.block_size;
  if (blocks > UINT64_MAX / tr.block_bytes) return std::nullopt;
  return blocks * tr.block_bytes;
}

std::optional<uint64_t> tensor_bytes(TensorType t, std::span<const int64_t> shape, int64_t row_len) {
  if (row_len < 0) return std::nullopt;
  uint64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) return std::nullopt;
    if (d != 0 && n > UINT64_MAX / uint64_t(d)) return std::nullopt;
    n *= uint64_t(d);
  }
  if (n == 0) return 0;
  if (row_len == 0 || n % uint64_t(row_len)) return std::nullopt;
  auto rb = row_bytes(t, uint64_t(row_len));
  if (!rb) return std::nullopt;
  uint64_t rows = n / uint64_t(row_len);
  if (*rb && rows > UINT64_MAX / *rb) return std::nullopt;
  return rows * *rb;
}

}  // namespace wgc::llm
