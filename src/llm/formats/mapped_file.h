// MappedFile: a whole file memory-mapped read-only (shared by the model-format readers).
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>
#include <span>

namespace wgc::llm {

class MappedFile {
 public:
  // Maps `path` read-only. Throws wgc::Error naming the file if it cannot be opened or mapped.
  static std::shared_ptr<const MappedFile> open(const std::filesystem::path& path);

  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::span<const std::byte> bytes() const { return {data_, size_}; }
  size_t size() const { return size_; }

  // Hints the kernel to read `range` (inside bytes()) ahead; harmless where unsupported.
  void will_need(std::span<const std::byte> range) const;

 private:
  MappedFile() = default;
  std::filesystem::path path_;
  const std::byte* data_ = nullptr;
  size_t size_ = 0;
  void* map_ = nullptr;
};

}  // namespace wgc::llm
