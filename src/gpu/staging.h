// StagedUpload: host data into a device tensor through a staging buffer that stays mapped between
// uses. The host writes straight into the mapping (no copy into Dawn's upload ring, no fresh pages
// for each upload: a 38 MB image batch through writeBuffer ran at ~3 GB/s on the H200), and a copy
// recorded in the batch moves it to the tensor. For data sent again and again at one size (a
// model's input). After the batch's submit, remap() asks for the mapping back, so that the next
// write finds it ready once the copy has run; without remap() the next write maps and waits.
#pragma once

#include "gpu/batch.h"

#include <cstdint>
#include <memory>
#include <span>

namespace wgc {

class StagedUpload {
 public:
  StagedUpload() = default;
  StagedUpload(const Context& ctx, uint64_t bytes);

  uint64_t bytes() const;
  // Copies data (at most bytes(), a multiple of 4) into the staging buffer and records its copy
  // into dst at dst_offset.
  void write(Batch& batch, std::span<const std::byte> data, const Tensor& dst, uint64_t dst_offset = 0);
  // write() in two halves, for a batch encoded ahead (Batch::encode): record_copy() records the
  // copy of the first `bytes` into dst, and may come first (the buffer may still be mapped while
  // recording and encoding); fill() copies data into the mapping and unmaps it, before the submit.
  void record_copy(Batch& batch, uint64_t bytes, const Tensor& dst, uint64_t dst_offset = 0) const;
  void fill(std::span<const std::byte> data);
  // fill() in two halves, for data written straight into the staging buffer (as into pinned host
  // memory): mapped() waits for the mapping and gives all bytes() of it (the buffer keeps what was
  // written last); unmap() hands it back to the GPU, before the submit of the batch that copies.
  std::span<std::byte> mapped();
  bool is_mapped() const;
  void unmap();
  // Call after submitting the batch of the last write: maps the buffer again in the background.
  void remap();

  struct State;

 private:
  std::shared_ptr<State> state_;
};

}  // namespace wgc
