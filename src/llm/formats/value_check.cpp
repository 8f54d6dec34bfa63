#include "llm/formats/value_check.h"

#include "cpu/llm/dequant.h"
#include "llm/formats/tensor_names.h"
#include "util/error.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <thread>
#include <vector>

namespace wgc::llm {
namespace {

// Elements [begin, end) of t (block-aligned), scanned; the first bad index or -1.
int64_t scan(const ModelTensor& t, int64_t begin, int64_t end) {
  const std::byte* p = t.data.data();
  switch (t.type) {
    case TensorType::F32:
      for (int64_t i = begin; i < end; ++i) {
        uint32_t u;
        std::memcpy(&u, p + 4 * i, 4);
        if ((u & 0x7f800000u) == 0x7f800000u) return i;
      }
      return -1;
    case TensorType::F16:
    case TensorType::BF16: {
      uint16_t mask = t.type == TensorType::F16 ? 0x7c00 : 0x7f80;
      for (int64_t i = begin; i < end; ++i) {
        uint16_t h;
        std::memcpy(&h, p + 2 * i, 2);
        if ((h & mask) == mask) return i;
      }
      return -1;
    }
    default: break;
  }
  // Block types: dequantized a few thousand elements at a time.
  const int64_t bs = block_size(t.type), bb = block_bytes(t.type);
  const int64_t step = std::max<int64_t>(bs, (int64_t(4096) / bs) * bs);
  std::vector<float> buf(static_cast<size_t>(step));
  for (int64_t at = begin; at < end; at += step) {
    int64_t n = std::min(step, end - at);
    std::span<const std::byte> src(p + at / bs * bb, size_t(n / bs * bb));
    dequantize(t.type, src, std::span<float>(buf.data(), size_t(n)));
    for (int64_t i = 0; i < n; ++i)
      if (!std::isfinite(buf[size_t(i)])) return at + i;
  }
  return -1;
}

}  // namespace

std::optional<int64_t> first_non_finite(const ModelTensor& t) {
  if (!is_float_like(t.type)) return std::nullopt;
  const int64_t n = t.numel(), bs = block_size(t.type);
  // Large tensors (an 8B model's embedding: 525M elements) in parallel pieces of whole blocks.
  int64_t threads = n < (int64_t(1) << 22) ? 1 : std::clamp<int64_t>(std::thread::hardware_concurrency(), 1, 16);
  int64_t piece = (n / bs + threads - 1) / threads * bs;
  std::vector<int64_t> first(size_t(threads), -1);
  std::vector<std::thread> pool;
  for (int64_t k = 1; k < threads; ++k)
    pool.emplace_back([&, k] { first[size_t(k)] = scan(t, std::min(n, k * piece), std::min(n, (k + 1) * piece)); });
  first[0] = scan(t, 0, std::min(n, piece));
  for (auto& th : pool) th.join();
  for (int64_t f : first)
    if (f >= 0) return f;
  return std::nullopt;
}

void check_finite_tensor(const ModelFile& m, const ModelTensor& t) {
  // The embedding and output by the name table (BERT's embedding is not model.embed_tokens).
  const Architecture arch = m.config().architecture;
  const std::string embd = tensor_names(arch, TensorRole::TokenEmbd).hf,
                    out = tensor_names(arch, TensorRole::Output).hf;
  bool checked = t.shape.size() == 1 || t.name == embd || (!out.empty() && t.name == out);
  if (!checked) return;
  if (auto i = first_non_finite(t)) {
    std::string at = std::to_string(*i);
    if (t.shape.size() == 2)
      at += " (row " + std::to_string(*i / t.row_length()) + ", column " + std::to_string(*i % t.row_length()) + ")";
    throw Error(m.path().string() + ": tensor '" + t.file_name + "' (" + std::string(to_string(t.type)) +
                ") holds a NaN or an infinity at element " + at +
                ": the file is damaged or was converted wrongly (every output would be garbage)");
  }
}

void check_finite_weights(const ModelFile& m) {
  if (m.streamed()) return;  // ModelFile::load checks each tensor as it reads it
  for (const ModelTensor& t : m.tensors()) check_finite_tensor(m, t);
}

}  // namespace wgc::llm
