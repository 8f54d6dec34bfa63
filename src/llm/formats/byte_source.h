// ByteSource: a model file's bytes read on demand, for a file that is not memory-mapped (in the
// browser, the model's download or the user's File, held by JavaScript). The GGUF reader parses a
// header from it (GgufFile::read) and ModelFile::load reads one tensor at a time from it, so the
// whole file never has to be in (wasm) memory at once.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace wgc::llm {

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // The file's size in bytes.
  virtual uint64_t size() const = 0;
  // Fills `out` with the bytes at [offset, offset + out.size()), inside size() (callers check).
  // May wait (in the browser: an ASYNCIFY sleep until the download has reached the range). Throws
  // wgc::Error saying why when the bytes cannot be had (the download failed or stopped short).
  virtual void read(uint64_t offset, std::span<std::byte> out) const = 0;
};

}  // namespace wgc::llm
