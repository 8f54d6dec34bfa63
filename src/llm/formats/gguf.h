// GGUF (versions 2 and 3) reader: header, metadata (every value type, nested arrays), tensor infos,
// alignment, and the tensor data memory-mapped read-only, or (GgufFile::read) only the header read
// from a ByteSource, the tensor data left there. Strings and numeric arrays are views into the
// mapping (or the header's bytes): they live as long as the GgufFile that handed them out.
//
//   auto f = wgc::llm::GgufFile::open("model.gguf");
//   std::string model = f.get_string("tokenizer.ggml.model");
//   auto tokens = f.get_string_array("tokenizer.ggml.tokens");
//   const GgufTensorInfo* t = f.find_tensor("token_embd.weight");
//   std::span<const std::byte> bytes = f.tensor_data(*t);
//
// Every problem with the file throws wgc::Error naming the file and what is wrong.
#pragma once

#include "cpu/llm/tensor_type.h"
#include "llm/formats/byte_source.h"
#include "llm/formats/mapped_file.h"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace wgc::llm {

// GGUF metadata value types, numbered as in the file.
enum class GgufType : uint32_t {
  U8 = 0,
  I8 = 1,
  U16 = 2,
  I16 = 3,
  U32 = 4,
  I32 = 5,
  F32 = 6,
  Bool = 7,
  String = 8,
  Array = 9,
  U64 = 10,
  I64 = 11,
  F64 = 12,
};
std::string_view to_string(GgufType t);  // "u32", "string", "array", ...

// One metadata value: a scalar, a string, or an array (of scalars, strings or arrays).
class GgufValue {
 public:
  GgufType type() const { return type_; }
  bool is_array() const { return type_ == GgufType::Array; }
  bool is_string() const { return type_ == GgufType::String; }
  bool is_integer() const;  // u8..i64 (not bool)
  bool is_float() const;    // f32, f64
  bool is_number() const { return is_integer() || is_float(); }

  // Scalars, converted where the value fits exactly (an integer to f64, i32 to u32 if >= 0, ...);
  // nullopt for a string, an array, or a value out of range of the requested type.
  std::optional<int64_t> to_i64() const;
  std::optional<uint64_t> to_u64() const;
  std::optional<double> to_f64() const;               // integers and floats
  std::optional<bool> to_bool() const;                // bool only
  std::optional<std::string_view> to_string() const;  // string only

  // Arrays: element type and count (0 / U8 for non-arrays).
  GgufType array_type() const { return elem_; }
  size_t size() const { return count_; }
  // Element i of an array as a value (scalars and strings are cheap views; a nested array is a copy
  // of the nested value's handle). Throws wgc::Error when out of range or not an array.
  GgufValue at(size_t i) const;
  // Strings of an array of strings (empty span for other values); views into the mapped file.
  std::span<const std::string_view> strings() const;
  // Raw little-endian bytes of an array of numbers or bools (empty for other values).
  std::span<const std::byte> raw() const { return {data_, type_ == GgufType::Array ? raw_bytes_ : 0}; }

  // A short human-readable rendering: scalars in full, strings quoted (long ones cut), arrays
  // abbreviated to their first `max_items` elements with the count.
  std::string describe(size_t max_items = 8, size_t max_string = 64) const;

 private:
  friend class GgufParser;
  GgufType type_ = GgufType::U8;
  GgufType elem_ = GgufType::U8;
  uint64_t bits_ = 0;  // integer/bool bit pattern (sign-extended for signed) or f64 bits
  double f_ = 0;       // float value (f32 widened)
  std::string_view str_;
  // arrays
  size_t count_ = 0;
  const std::byte* data_ = nullptr;  // numeric arrays: first element
  size_t raw_bytes_ = 0;
  std::shared_ptr<const std::vector<std::string_view>> strings_;  // string arrays
  std::shared_ptr<const std::vector<GgufValue>> items_;           // arrays of arrays
};

struct GgufKv {
  std::string_view key;
  GgufValue value;
};

struct GgufTensorInfo {
  std::string_view name;
  std::vector<int64_t> ne;  // GGML order: ne[0] is the row (innermost) length
  TensorType type;
  uint64_t offset = 0;  // from the start of the data section (aligned)
  uint64_t bytes = 0;   // size of the data
  int64_t numel() const;
  std::vector<int64_t> torch_shape() const { return {ne.rbegin(), ne.rend()}; }  // [.., rows, row_len]
};

class GgufFile {
 public:
  // Maps and parses a file. Throws wgc::Error naming the file and the problem.
  static GgufFile open(const std::filesystem::path& path);
  // Parses bytes already in memory (the caller keeps them alive as long as the GgufFile);
  // `name` stands for the file in error messages.
  static GgufFile parse(std::span<const std::byte> bytes, std::string name);
  // Reads the header (metadata and tensor table) from `source`: its first bytes, then more as the
  // parser needs them (doubling), at most max_header bytes (a header that needs more is refused,
  // naming the limit: every count and length in it is checked against the file's size first). The
  // tensor data stay in the source (ModelFile::load reads them; tensor_data() reads small ones).
  static constexpr uint64_t kMaxHeaderBytes = uint64_t(256) << 20;
  static GgufFile read(std::shared_ptr<const ByteSource> source, std::string name,
                       uint64_t max_header = kMaxHeaderBytes);

  GgufFile(GgufFile&&) noexcept;
  GgufFile& operator=(GgufFile&&) noexcept;
  ~GgufFile();

  const std::string& name() const { return name_; }  // the path (or the name given to parse)
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }  // start of the tensor data section
  // The file's bytes (mapped or given to parse), or only its header's after read().
  std::span<const std::byte> bytes() const { return bytes_; }
  uint64_t file_size() const { return file_size_; }
  const std::shared_ptr<const MappedFile>& mapping() const { return map_; }  // null after parse()
  const std::shared_ptr<const ByteSource>& source() const;                   // null unless read()

  // Metadata in file order.
  const std::vector<GgufKv>& metadata() const { return kvs_; }
  // The value of `key`, or nullptr.
  const GgufValue* find(std::string_view key) const;

  // Typed getters: `def` when the key is absent; wgc::Error (naming the file and key) when it is
  // present with a type that does not convert (e.g. a string read as a number, -1 read as u32).
  std::string get_string(std::string_view key, std::string_view def = {}) const;
  uint32_t get_u32(std::string_view key, uint32_t def = 0) const;
  int32_t get_i32(std::string_view key, int32_t def = 0) const;
  uint64_t get_u64(std::string_view key, uint64_t def = 0) const;
  float get_f32(std::string_view key, float def = 0) const;
  bool get_bool(std::string_view key, bool def = false) const;
  // Arrays: empty when absent; wgc::Error when present with another element type (integer arrays
  // convert between integer types where the values fit, f32 arrays accept f64 and integers).
  std::vector<std::string> get_string_array(std::string_view key) const;
  std::vector<float> get_f32_array(std::string_view key) const;
  std::vector<int32_t> get_i32_array(std::string_view key) const;

  // Tensors in file order.
  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  const GgufTensorInfo* find_tensor(std::string_view name) const;
  // The bytes of a tensor (a view into the mapping). After read(): read from the source and kept
  // for the GgufFile's life, for the few small tensors the config reads (rope factors); a tensor
  // over kMaxCachedTensorBytes is refused (the weights go through ModelFile::load, which keeps
  // nothing).
  static constexpr uint64_t kMaxCachedTensorBytes = uint64_t(1) << 20;
  std::span<const std::byte> tensor_data(const GgufTensorInfo& t) const;

 private:
  friend class GgufParser;
  GgufFile() = default;
  std::shared_ptr<const MappedFile> map_;
  std::span<const std::byte> bytes_;
  uint64_t file_size_ = 0;
  struct Streamed;  // read(): the source, the header's bytes, tensors read
  std::shared_ptr<Streamed> streamed_;
  std::string name_;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::vector<GgufKv> kvs_;
  std::vector<GgufTensorInfo> tensors_;
  struct Index;
  std::unique_ptr<Index> index_;  // key -> kv, name -> tensor
};

}  // namespace wgc::llm
