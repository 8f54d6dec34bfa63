// Tensor: a typed, shaped GPU storage buffer. Copies share the buffer; when the last copy goes,
// the buffer returns to its context's pool for reuse.
#pragma once

#include "gpu/context.h"

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace wgc {

// Element types. Half types are stored packed two per u32 word and unpacked inside kernels;
// Raw is for block-quantized data whose layout the kernel knows.
enum class DType : uint8_t { F32, F16, BF16, I32, U32, Raw };

size_t dtype_size(DType t);  // bytes per element (1 for Raw)
std::string_view to_string(DType t);

using Shape = std::vector<int64_t>;
int64_t numel(const Shape& s);
std::string to_string(const Shape& s);

namespace detail {
struct BufferHandle;
}

class Tensor {
 public:
  Tensor() = default;
  Tensor(std::shared_ptr<detail::BufferHandle> buf, Shape shape, DType dtype);

  const Shape& shape() const { return shape_; }
  DType dtype() const { return dtype_; }
  int64_t numel() const { return wgc::numel(shape_); }
  uint64_t bytes() const;     // the data's size: numel * dtype_size
  uint64_t capacity() const;  // the buffer's size (>= bytes, rounded up)
  WGPUBuffer buffer() const;
  explicit operator bool() const { return buf_ != nullptr; }

  // The same buffer seen with another shape/type of no more bytes (no copy).
  Tensor view(Shape shape, DType dtype) const;
  Tensor view(Shape shape) const { return view(std::move(shape), dtype_); }

 private:
  std::shared_ptr<detail::BufferHandle> buf_;
  Shape shape_;
  DType dtype_ = DType::F32;
};

// An uninitialised tensor (contents are whatever the pooled buffer held).
Tensor make_tensor(const Context& ctx, Shape shape, DType dtype = DType::F32);
// A tensor holding `data` (its size must match shape x dtype).
Tensor make_tensor(const Context& ctx, Shape shape, DType dtype, std::span<const std::byte> data);
Tensor make_tensor(const Context& ctx, Shape shape, std::span<const float> data);

void upload(const Context& ctx, const Tensor& t, std::span<const std::byte> data, uint64_t offset = 0);
void download(const Context& ctx, const Tensor& t, std::span<std::byte> out, uint64_t offset = 0);

template <class T>
std::vector<T> download(const Context& ctx, const Tensor& t) {
  std::vector<T> out(t.bytes() / sizeof(T));
  download(ctx, t, std::as_writable_bytes(std::span(out)));
  return out;
}

// Fills the whole buffer with a repeated 32-bit pattern (tests poison outputs with NaN first).
void fill_u32(const Context& ctx, const Tensor& t, uint32_t pattern);
inline constexpr uint32_t kPoisonNaN = 0x7fc0dead;

// Bytes currently kept in the context's free-buffer pool.
uint64_t pooled_bytes(const Context& ctx);
// GPU buffers of the context that exist now (in use or pooled), and their bytes: flat across
// repeated work means nothing leaks.
uint64_t allocated_buffers(const Context& ctx);
uint64_t allocated_buffer_bytes(const Context& ctx);

}  // namespace wgc
