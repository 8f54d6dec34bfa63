#include "gpu/staging.h"

#include "gpu/context_state.h"
#include "util/error.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace wgc {

namespace {
// A large copy into the mapping in parallel: one core's memcpy into host-visible memory moves a few
// GB/s, a batch of 64 images is 38.5 MB.
constexpr size_t kParallelCopyBytes = size_t(4) << 20;
constexpr unsigned kMaxCopyThreads = 8;

void copy_into(std::byte* dst, const std::byte* src, size_t n) {
  unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  unsigned threads =
      n < kParallelCopyBytes ? 1 : std::min({kMaxCopyThreads, hw, unsigned(n / (kParallelCopyBytes / 4))});
  if (threads <= 1) {
    std::memcpy(dst, src, n);
    return;
  }
  size_t part = (n / threads + 63) / 64 * 64;
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads && t * part < n; ++t)
    pool.emplace_back([=] { std::memcpy(dst + t * part, src + t * part, std::min(part, n - t * part)); });
  std::memcpy(dst, src, std::min(part, n));
  for (auto& th : pool) th.join();
}
}  // namespace

struct StagedUpload::State {
  Context ctx;
  std::shared_ptr<detail::BufferHandle> buf;
  Tensor staging;  // buf seen as a tensor, for Batch::copy
  enum class Map { Unmapped, Pending, Mapped } map = Map::Unmapped;
  detail::BufferMap mapping;

  explicit State(Context c) : ctx(std::move(c)) {}
  State(const State&) = delete;
  State& operator=(const State&) = delete;
  // The map callback writes into this object, and a pooled buffer must go back unmapped.
  ~State() {
    try {
      if (map == Map::Pending) finish();
      if (map == Map::Mapped) wgpuBufferUnmap(buf->buffer);
    } catch (...) {
    }
  }

  void request() {
    mapping.start(buf->buffer, WGPUMapMode_Write, buf->size);
    map = Map::Pending;
  }

  void finish() {
    map = Map::Unmapped;
    detail::lost_checked(ctx.state(), [&] {
      mapping.wait(ctx.instance(), "a staging buffer");
      mapping.check("mapping a " + std::to_string(buf->size) + "-byte staging buffer failed");
    });
    map = Map::Mapped;
  }
};

StagedUpload::StagedUpload(const Context& ctx, uint64_t bytes) : state_(std::make_shared<State>(ctx)) {
  uint64_t size = detail::round_up(std::max<uint64_t>(bytes, 4), 4);
  state_->buf = detail::acquire_buffer(ctx.shared_state(), size, WGPUBufferUsage_MapWrite | WGPUBufferUsage_CopySrc,
                                       "upload staging");
  state_->staging = Tensor(state_->buf, {int64_t(size / 4)}, DType::F32);
}

uint64_t StagedUpload::bytes() const { return state_ ? state_->buf->size : 0; }

void StagedUpload::write(Batch& batch, std::span<const std::byte> data, const Tensor& dst, uint64_t dst_offset) {
  fill(data);
  if (!data.empty()) record_copy(batch, data.size(), dst, dst_offset);
}

void StagedUpload::fill(std::span<const std::byte> data) {
  if (!state_) throw Error("wgc: write through an empty StagedUpload");
  State& s = *state_;
  if (data.size() > s.buf->size || data.size() % 4)
    throw Error("wgc: a staged upload of " + std::to_string(data.size()) + " bytes into a " +
                std::to_string(s.buf->size) + "-byte staging buffer (needs a multiple of 4 that fits)");
  if (data.empty()) return;
  copy_into(mapped().data(), data.data(), data.size());
  unmap();
}

std::span<std::byte> StagedUpload::mapped() {
  if (!state_) throw Error("wgc: the mapping of an empty StagedUpload");
  State& s = *state_;
  if (s.map == State::Map::Unmapped) s.request();
  if (s.map == State::Map::Pending) s.finish();
  void* at = wgpuBufferGetMappedRange(s.buf->buffer, 0, s.buf->size);
  if (!at) throw GpuError("wgc: a staging buffer's mapping is not accessible");
  return {static_cast<std::byte*>(at), size_t(s.buf->size)};
}

bool StagedUpload::is_mapped() const { return state_ && state_->map == State::Map::Mapped; }

void StagedUpload::unmap() {
  if (!is_mapped()) return;
  wgpuBufferUnmap(state_->buf->buffer);
  state_->map = State::Map::Unmapped;
}

void StagedUpload::record_copy(Batch& batch, uint64_t bytes, const Tensor& dst, uint64_t dst_offset) const {
  if (!state_) throw Error("wgc: a copy from an empty StagedUpload");
  if (bytes > state_->buf->size)
    throw Error("wgc: a copy of " + std::to_string(bytes) + " bytes from a " + std::to_string(state_->buf->size) +
                "-byte staging buffer");
  batch.copy(state_->staging, 0, dst, dst_offset, bytes);
}

void StagedUpload::remap() {
  if (state_ && state_->map == State::Map::Unmapped) state_->request();
}

}  // namespace wgc
