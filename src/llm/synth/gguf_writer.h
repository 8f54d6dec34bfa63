// GgufStreamWriter: writes GGUF v3 files of any size without holding the tensor data in memory.
// Metadata (every value type, arrays of any type incl. arrays of arrays) and the tensor list are
// declared first; the layout (header size, each tensor's aligned offset, the file size) is then
// known, and write() has worker threads generate row ranges of the tensors through a callback and
// write them in place with pwrite (into a temporary file renamed at the end: util/output_file.h). Reads back with
// GgufFile.
//
//   synth::GgufStreamWriter w;
//   w.add("general.architecture", synth::MetaValue::string("llama"));
//   w.add("llama.block_count", synth::MetaValue::u32(16));
//   size_t t = w.add_tensor("token_embd.weight", TensorType::Q8_0, {2048, 128256});  // GGML order
//   w.write("out.gguf", [&](size_t tensor, int64_t row0, int64_t rows, std::span<std::byte> out) {
//     ... fill `rows` rows (row_bytes(type, ne[0]) each) starting at row0 ...
//   });
#pragma once

#include "cpu/llm/tensor_type.h"
#include "llm/formats/gguf.h"
#include "util/output_file.h"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace wgc::llm::synth {

// One metadata value, already encoded as it follows the type id in the file.
class MetaValue {
 public:
  static MetaValue u8(uint8_t v);
  static MetaValue i8(int8_t v);
  static MetaValue u16(uint16_t v);
  static MetaValue i16(int16_t v);
  static MetaValue u32(uint32_t v);
  static MetaValue i32(int32_t v);
  static MetaValue u64(uint64_t v);
  static MetaValue i64(int64_t v);
  static MetaValue f32(float v);
  static MetaValue f64(double v);
  static MetaValue boolean(bool v);
  static MetaValue string(std::string_view v);
  // Arrays of numbers / bools / strings.
  static MetaValue array(std::span<const uint8_t> v);
  static MetaValue array(std::span<const int8_t> v);
  static MetaValue array(std::span<const uint16_t> v);
  static MetaValue array(std::span<const int16_t> v);
  static MetaValue array(std::span<const uint32_t> v);
  static MetaValue array(std::span<const int32_t> v);
  static MetaValue array(std::span<const uint64_t> v);
  static MetaValue array(std::span<const int64_t> v);
  static MetaValue array(std::span<const float> v);
  static MetaValue array(std::span<const double> v);
  static MetaValue bool_array(const std::vector<bool>& v);
  static MetaValue strings(std::span<const std::string> v);
  // Any array, arrays of arrays included: every item must have type `elem` (wgc::Error otherwise).
  static MetaValue array(GgufType elem, std::span<const MetaValue> items);

  GgufType type() const { return type_; }
  const std::vector<std::byte>& encoded() const { return bytes_; }  // what follows the type id

 private:
  template <class T>
  static MetaValue scalar(GgufType t, T v);
  template <class T>
  static MetaValue numbers(GgufType elem, std::span<const T> v);
  GgufType type_ = GgufType::U8;
  std::vector<std::byte> bytes_;
};

struct TensorLayout {
  std::string name;
  TensorType type;
  std::vector<int64_t> ne;  // GGML order: ne[0] is the row length
  uint64_t offset = 0;      // from the start of the data section (a multiple of the alignment)
  uint64_t bytes = 0;
  int64_t row_length() const { return ne.empty() ? 1 : ne[0]; }
  int64_t rows() const;  // numel / row_length
  int64_t numel() const;
  uint64_t row_bytes() const;
};

// Fills rows [row0, row0 + rows) of tensor `index` into `out` (rows * row_bytes() bytes). Called
// from several threads at once (different ranges).
using TensorFill = std::function<void(size_t index, int64_t row0, int64_t rows, std::span<std::byte> out)>;

struct WriteOptions {
  int threads = 0;                       // 0: hardware concurrency
  size_t chunk_bytes = size_t(4) << 20;  // data generated and written per work item (whole rows)
  bool progress = true;                  // progress bar on stderr (see util/progress.h)
  std::string progress_label;            // default: "writing <file name>"
  Overwrite overwrite = Overwrite::Yes;  // util/output_file.h
};

class GgufStreamWriter {
 public:
  // alignment != 32 also writes general.alignment (as u32). version 2 or 3.
  explicit GgufStreamWriter(uint32_t alignment = 32, uint32_t version = 3);

  // Metadata in the order added; a key added twice throws wgc::Error.
  void add(std::string_view key, MetaValue v);
  void add_u32(std::string_view key, uint32_t v) { add(key, MetaValue::u32(v)); }
  void add_f32(std::string_view key, float v) { add(key, MetaValue::f32(v)); }
  void add_bool(std::string_view key, bool v) { add(key, MetaValue::boolean(v)); }
  void add_string(std::string_view key, std::string_view v) { add(key, MetaValue::string(v)); }

  // Declares a tensor (`ne` in GGML order); returns its index. Its data come from the TensorFill
  // passed to write(). wgc::Error for a duplicate name, a bad shape or a row not made of whole blocks.
  size_t add_tensor(std::string name, TensorType type, std::vector<int64_t> ne);
  // A tensor whose bytes are given now (kept in memory; small tensors and tests).
  size_t add_tensor(std::string name, TensorType type, std::vector<int64_t> ne, std::vector<std::byte> data);

  const std::vector<TensorLayout>& tensors() const { return tensors_; }
  uint32_t alignment() const { return alignment_; }
  uint64_t data_offset() const;  // file offset of the data section
  uint64_t file_bytes() const;   // size of the whole file
  uint64_t data_bytes() const;   // size of the data section (incl. padding between tensors)
  // Header, metadata, tensor infos and the padding up to the data section.
  std::vector<std::byte> header() const;

  // Writes the file; `fill` may be empty when every tensor was given its bytes. Writes to
  // "<path>.part" first and renames it at the end (removed on failure). Does not check for an
  // existing file or free space: see check_free_space(). Throws wgc::Error naming the file.
  void write(const std::filesystem::path& path, const TensorFill& fill = {}, const WriteOptions& opt = {}) const;
  // The whole file in memory (tests, small files).
  std::vector<std::byte> to_bytes(const TensorFill& fill = {}) const;

 private:
  void fill_chunk(const TensorFill& fill, size_t index, int64_t row0, int64_t rows, std::span<std::byte> out) const;

  uint32_t alignment_, version_;
  uint64_t n_kv_ = 0;
  std::vector<std::byte> kv_bytes_;
  std::vector<std::string> keys_;
  std::vector<TensorLayout> tensors_;
  std::vector<std::vector<std::byte>> given_;  // per tensor: bytes given at add_tensor (or empty)
  uint64_t data_end_ = 0;                      // end of the last tensor in the data section
};

// Throws wgc::Error with a clear message when the file system holding `path` (its folder) has
// fewer than `bytes` bytes available to this user; `reclaimable` bytes (e.g. a file about to be
// replaced) count as free.
void check_free_space(const std::filesystem::path& path, uint64_t bytes, uint64_t reclaimable = 0);

}  // namespace wgc::llm::synth
