// MemorySource: a file's bytes as a llm::ByteSource (what the browser's download or File is to the
// wasm engine), for the streamed-loading tests: it counts what is read, and can stop short of the
// size it claims (a download cut off).
#pragma once

#include "llm/formats/byte_source.h"
#include "util/error.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

namespace wgc::test {

struct MemorySource : llm::ByteSource {
  std::vector<std::byte> bytes;
  uint64_t claimed;  // size(): bytes.size(), or more (reads past bytes.size() fail)
  mutable uint64_t reads = 0, read_bytes = 0, largest_read = 0;

  explicit MemorySource(std::vector<std::byte> b, uint64_t claim = 0)
      : bytes(std::move(b)), claimed(claim ? claim : bytes.size()) {}
  uint64_t size() const override { return claimed; }
  void read(uint64_t offset, std::span<std::byte> out) const override {
    if (offset + out.size() > claimed) throw Error("MemorySource: read past size()");  // a caller's bug
    if (offset + out.size() > bytes.size())
      throw Error("the download stopped at " + std::to_string(bytes.size()) + " of " + std::to_string(claimed) +
                  " bytes");
    if (!out.empty()) std::memcpy(out.data(), bytes.data() + offset, out.size());
    ++reads;
    read_bytes += out.size();
    largest_read = std::max<uint64_t>(largest_read, out.size());
  }
};

}  // namespace wgc::test
