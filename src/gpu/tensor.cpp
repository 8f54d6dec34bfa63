#include "gpu/tensor.h"

#include "gpu/batch.h"

#include "gpu/context_state.h"
#include "util/error.h"

#include <cstring>

namespace wgc {
namespace detail {

// Keep at most this much in released buffers for reuse; past it, buffers are destroyed.
constexpr uint64_t kMaxPooledBytes = 1ull << 30;
// Reuse a pooled buffer up to this much larger than asked for (in quarters: 5/4 = 25% slack).
constexpr uint64_t kPoolSlackQuarters = 5;

BufferHandle::~BufferHandle() {
  if (!buffer) return;
  std::lock_guard lock(state->mu);
  if (state->free_bytes + size <= kMaxPooledBytes) {
    state->free_buffers.emplace(std::pair{usage, size}, buffer);
    state->free_bytes += size;
  } else {
    state->forget_buffer(buffer);
    wgpuBufferRelease(buffer);
    state->allocated_buffers -= 1;
    state->allocated_bytes -= size;
  }
}

std::shared_ptr<BufferHandle> acquire_buffer(const std::shared_ptr<ContextState>& st, uint64_t bytes, uint64_t usage,
                                             std::string_view label) {
  throw_if_lost(*st);
  uint64_t size = round_up(std::max<uint64_t>(bytes, 16), 16);
  if (size > st->limits.max_buffer_size)
    throw LimitError("wgc: " + std::string(label) + ": a buffer of " + std::to_string(bytes) +
                     " bytes is larger than the device's maxBufferSize (" + std::to_string(st->limits.max_buffer_size) +
                     ")");
  auto h = std::make_shared<BufferHandle>();
  h->state = st;
  h->usage = usage;
  {
    std::lock_guard lock(st->mu);
    auto it = st->free_buffers.lower_bound({usage, size});
    if (it != st->free_buffers.end() && it->first.first == usage && it->first.second * 4 <= size * kPoolSlackQuarters) {
      h->buffer = it->second;
      h->size = it->first.second;
      st->free_bytes -= h->size;
      st->free_buffers.erase(it);
      return h;
    }
  }
  WGPUBufferDescriptor d = WGPU_BUFFER_DESCRIPTOR_INIT;
  d.label = view(label);
  d.size = size;
  d.usage = usage;
  h->buffer = with_error_scope(*st, "allocating " + std::to_string(size) + " bytes for " + std::string(label),
                               [&] { return wgpuDeviceCreateBuffer(st->device, &d); });
  h->size = size;
  std::lock_guard lock(st->mu);
  st->allocated_buffers += 1;
  st->allocated_bytes += size;
  return h;
}

}  // namespace detail

namespace {
constexpr uint64_t kTensorUsage = WGPUBufferUsage_Storage | WGPUBufferUsage_CopySrc | WGPUBufferUsage_CopyDst;

}  // namespace

size_t dtype_size(DType t) {
  switch (t) {
    case DType::F32:
    case DType::I32:
    case DType::U32: return 4;
    case DType::F16:
    case DType::BF16: return 2;
    case DType::Raw: return 1;
  }
  return 1;
}

std::string_view to_string(DType t) {
  switch (t) {
    case DType::F32: return "f32";
    case DType::F16: return "f16";
    case DType::BF16: return "bf16";
    case DType::I32: return "i32";
    case DType::U32: return "u32";
    case DType::Raw: return "raw";
  }
  return "?";
}

int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (auto d : s) n *= d;
  return n;
}

std::string to_string(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

Tensor::Tensor(std::shared_ptr<detail::BufferHandle> buf, Shape shape, DType dtype)
    : buf_(std::move(buf)), shape_(std::move(shape)), dtype_(dtype) {}

uint64_t Tensor::bytes() const { return static_cast<uint64_t>(numel()) * dtype_size(dtype_); }
uint64_t Tensor::capacity() const { return buf_ ? buf_->size : 0; }
WGPUBuffer Tensor::buffer() const { return buf_ ? buf_->buffer : nullptr; }

Tensor Tensor::view(Shape shape, DType dtype) const {
  Tensor t(buf_, std::move(shape), dtype);
  if (t.bytes() > capacity())
    throw Error("wgc: a view of shape " + to_string(t.shape()) + " (" + std::to_string(t.bytes()) +
                " bytes) does not fit a buffer of " + std::to_string(capacity()) + " bytes");
  return t;
}

Tensor make_tensor(const Context& ctx, Shape shape, DType dtype) {
  for (auto d : shape)
    if (d < 0) throw Error("wgc: negative dimension in shape " + to_string(shape));
  uint64_t bytes = static_cast<uint64_t>(numel(shape)) * dtype_size(dtype);
  auto buf = detail::acquire_buffer(ctx.shared_state(), bytes, kTensorUsage, "tensor " + to_string(shape));
  return Tensor(std::move(buf), std::move(shape), dtype);
}

Tensor make_tensor(const Context& ctx, Shape shape, DType dtype, std::span<const std::byte> data) {
  Tensor t = make_tensor(ctx, std::move(shape), dtype);
  if (data.size() != t.bytes())
    throw Error("wgc: " + std::to_string(data.size()) + " bytes given for a tensor of shape " + to_string(t.shape()) +
                " " + std::string(to_string(dtype)) + " (" + std::to_string(t.bytes()) + " bytes)");
  upload(ctx, t, data);
  return t;
}

Tensor make_tensor(const Context& ctx, Shape shape, std::span<const float> data) {
  return make_tensor(ctx, std::move(shape), DType::F32, std::as_bytes(data));
}

void upload(const Context& ctx, const Tensor& t, std::span<const std::byte> data, uint64_t offset) {
  if (offset + data.size() > t.capacity())
    throw Error("wgc: upload of " + std::to_string(data.size()) + " bytes at offset " + std::to_string(offset) +
                " past the end of a " + std::to_string(t.capacity()) + "-byte buffer");
  if (data.empty()) return;
  detail::throw_if_lost(ctx.state());  // a write to a lost device would vanish without a word
  // writeBuffer wants sizes and offsets in multiples of 4: pad the tail.
  size_t whole = data.size() / 4 * 4;
  if (whole) wgpuQueueWriteBuffer(ctx.queue(), t.buffer(), offset, data.data(), whole);
  if (whole != data.size()) {
    std::byte tail[4] = {};
    std::memcpy(tail, data.data() + whole, data.size() - whole);
    wgpuQueueWriteBuffer(ctx.queue(), t.buffer(), offset + whole, tail, 4);
  }
}

void download(const Context& ctx, const Tensor& t, std::span<std::byte> out, uint64_t offset) {
  if (offset + out.size() > t.capacity())
    throw Error("wgc: download of " + std::to_string(out.size()) + " bytes at offset " + std::to_string(offset) +
                " past the end of a " + std::to_string(t.capacity()) + "-byte buffer");
  if (out.empty()) return;
  Batch b(ctx);
  auto r = b.read(t, offset, out.size());
  b.submit();
  r.wait(out);
}

void fill_u32(const Context& ctx, const Tensor& t, uint32_t pattern) {
  std::vector<uint32_t> words(t.capacity() / 4, pattern);
  upload(ctx, t, std::as_bytes(std::span(words)));
}

uint64_t pooled_bytes(const Context& ctx) {
  std::lock_guard lock(ctx.state().mu);
  return ctx.state().free_bytes;
}

uint64_t allocated_buffers(const Context& ctx) {
  std::lock_guard lock(ctx.state().mu);
  return ctx.state().allocated_buffers;
}

uint64_t allocated_buffer_bytes(const Context& ctx) {
  std::lock_guard lock(ctx.state().mu);
  return ctx.state().allocated_bytes;
}

}  // namespace wgc
