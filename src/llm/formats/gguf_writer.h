// GgufWriter: the one GGUF (v2/v3) writer. Metadata (every value type, arrays of any type incl.
// arrays of arrays) and the tensor list are declared first; the layout (header size, each
// tensor's aligned offset, the file size) is then known. A tensor's bytes are either given when it
// is added (small tensors, tests, converted weights) or generated at write() time, row ranges at a
// time on worker threads, through a GgufTensorFill callback and written in place with pwrite, so a
// file of any size never sits in memory (random-weight models: llm/synth). The file goes through a
// temporary renamed at the end (util/output_file.h). Reads back with GgufFile.
//
//   GgufWriter w;
//   w.add_string("general.architecture", "llama");
//   w.add("tokenizer.ggml.tokens", GgufMetaValue::strings(tokens));
//   w.add_tensor("output_norm.weight", TensorType::F32, {hidden}, bytes);      // given now
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

namespace wgc::llm {

// One metadata value, already encoded as it follows the type id in the file.
class GgufMetaValue {
 public:
  static GgufMetaValue u8(uint8_t v);
  static GgufMetaValue i8(int8_t v);
  static GgufMetaValue u16(uint16_t v);
  static GgufMetaValue i16(int16_t v);
  static GgufMetaValue u32(uint32_t v);
  static GgufMetaValue i32(int32_t v);
  static GgufMetaValue u64(uint64_t v);
  static GgufMetaValue i64(int64_t v);
  static GgufMetaValue f32(float v);
  static GgufMetaValue f64(double v);
  static GgufMetaValue boolean(bool v);
  static GgufMetaValue string(std::string_view v);
  // Arrays of numbers / bools / strings.
  static GgufMetaValue array(std::span<const uint8_t> v);
  static GgufMetaValue array(std::span<const int8_t> v);
  static GgufMetaValue array(std::span<const uint16_t> v);
  static GgufMetaValue array(std::span<const int16_t> v);
  static GgufMetaValue array(std::span<const uint32_t> v);
  static GgufMetaValue array(std::span<const int32_t> v);
  static GgufMetaValue array(std::span<const uint64_t> v);
  static GgufMetaValue array(std::span<const int64_t> v);
  static GgufMetaValue array(std::span<const float> v);
  static GgufMetaValue array(std::span<const double> v);
  static GgufMetaValue bool_array(const std::vector<bool>& v);
  static GgufMetaValue strings(std::span<const std::string> v);
  // Any array, arrays of arrays included: every item must have type `elem` (wgc::Error otherwise).
  static GgufMetaValue array(GgufType elem, std::span<const GgufMetaValue> items);
  // A value read from a file (GgufFile::metadata), of any type: copies metadata over.
  static GgufMetaValue copy_of(const GgufValue& v);

  GgufType type() const { return type_; }
  const std::vector<std::byte>& encoded() const { return bytes_; }  // what follows the type id

 private:
  template <class T>
  static GgufMetaValue scalar(GgufType t, T v);
  template <class T>
  static GgufMetaValue numbers(GgufType elem, std::span<const T> v);
  GgufType type_ = GgufType::U8;
  std::vector<std::byte> bytes_;
};

struct GgufTensorLayout {
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
using GgufTensorFill = std::function<void(size_t index, int64_t row0, int64_t rows, std::span<std::byte> out)>;

struct GgufWriteOptions {
  int threads = 0;                       // 0: hardware concurrency
  size_t chunk_bytes = size_t(4) << 20;  // data generated and written per work item (whole rows)
  bool progress = true;                  // progress bar on stderr (see util/progress.h)
  std::string progress_label;            // default: "writing <file name>"
  Overwrite overwrite = Overwrite::Yes;  // util/output_file.h
};

class GgufWriter {
 public:
  // version 2 or 3; alignment a power of two, at least 8 (!= 32 also writes general.alignment).
  explicit GgufWriter(uint32_t version = 3, uint32_t alignment = 32);

  // Metadata in the order added; a key added twice throws wgc::Error.
  void add(std::string_view key, GgufMetaValue v);
  void add_u8(std::string_view key, uint8_t v) { add(key, GgufMetaValue::u8(v)); }
  void add_i8(std::string_view key, int8_t v) { add(key, GgufMetaValue::i8(v)); }
  void add_u16(std::string_view key, uint16_t v) { add(key, GgufMetaValue::u16(v)); }
  void add_i16(std::string_view key, int16_t v) { add(key, GgufMetaValue::i16(v)); }
  void add_u32(std::string_view key, uint32_t v) { add(key, GgufMetaValue::u32(v)); }
  void add_i32(std::string_view key, int32_t v) { add(key, GgufMetaValue::i32(v)); }
  void add_u64(std::string_view key, uint64_t v) { add(key, GgufMetaValue::u64(v)); }
  void add_i64(std::string_view key, int64_t v) { add(key, GgufMetaValue::i64(v)); }
  void add_f32(std::string_view key, float v) { add(key, GgufMetaValue::f32(v)); }
  void add_f64(std::string_view key, double v) { add(key, GgufMetaValue::f64(v)); }
  void add_bool(std::string_view key, bool v) { add(key, GgufMetaValue::boolean(v)); }
  void add_string(std::string_view key, std::string_view v) { add(key, GgufMetaValue::string(v)); }
  void add_string_array(std::string_view key, std::span<const std::string> v) { add(key, GgufMetaValue::strings(v)); }
  void add_f32_array(std::string_view key, std::span<const float> v) { add(key, GgufMetaValue::array(v)); }
  void add_i32_array(std::string_view key, std::span<const int32_t> v) { add(key, GgufMetaValue::array(v)); }

  // Declares a tensor (`ne` in GGML order); returns its index. Its data come from the
  // GgufTensorFill passed to write(). wgc::Error for a duplicate name, a bad shape or a row not
  // made of whole blocks.
  size_t add_tensor(std::string_view name, TensorType type, std::vector<int64_t> ne);
  // A tensor whose bytes are given now (copied; exactly the shape's size).
  size_t add_tensor(std::string_view name, TensorType type, std::vector<int64_t> ne, std::span<const std::byte> data);

  const std::vector<GgufTensorLayout>& tensors() const { return tensors_; }
  uint32_t alignment() const { return alignment_; }
  uint64_t data_offset() const;  // file offset of the data section
  uint64_t file_bytes() const;   // size of the whole file
  uint64_t data_bytes() const;   // size of the data section (incl. padding between tensors)
  // Header, metadata, tensor infos and the padding up to the data section.
  std::vector<std::byte> header() const;

  // Writes the file; `fill` may be empty when every tensor was given its bytes. Does not check
  // free space: see check_free_space() (util/output_file.h). Throws wgc::Error naming the file.
  void write(const std::filesystem::path& path, const GgufTensorFill& fill = {},
             const GgufWriteOptions& opt = {}) const;
  // The whole file in memory (tests, small files).
  std::vector<std::byte> to_bytes(const GgufTensorFill& fill = {}) const;

  // Little-endian encoders of the file's integers and strings (also for hand-made test files).
  static void encode_u32(std::vector<std::byte>& out, uint32_t v);
  static void encode_u64(std::vector<std::byte>& out, uint64_t v);
  static void encode_string(std::vector<std::byte>& out, std::string_view s);

 private:
  void fill_chunk(const GgufTensorFill& fill, size_t index, int64_t row0, int64_t rows, std::span<std::byte> out) const;

  uint32_t version_, alignment_;
  uint64_t n_kv_ = 0;
  std::vector<std::byte> kv_bytes_;
  std::vector<std::string> keys_;
  std::vector<GgufTensorLayout> tensors_;
  std::vector<std::vector<std::byte>> given_;  // per tensor: bytes given at add_tensor (or empty)
  uint64_t data_end_ = 0;                      // end of the last tensor in the data section
};

}  // namespace wgc::llm
