// GgufWriter: builds a GGUF (v2/v3) file in memory: metadata of every type, tensors with their
// data, aligned as the format requires. For tests, tools that save converted weights, and fuzz
// seeds; the output reads back with GgufFile.
//
//   GgufWriter w;
//   w.add_string("general.architecture", "llama");
//   w.add_tensor("token_embd.weight", TensorType::F32, {hidden, vocab}, bytes);
//   w.write("out.gguf");
#pragma once

#include "cpu/llm/tensor_type.h"
#include "llm/formats/gguf.h"
#include "util/output_file.h"

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace wgc::llm {

class GgufWriter {
 public:
  // alignment != 32 also writes general.alignment.
  explicit GgufWriter(uint32_t version = 3, uint32_t alignment = 32);

  void add_u8(std::string_view key, uint8_t v);
  void add_i8(std::string_view key, int8_t v);
  void add_u16(std::string_view key, uint16_t v);
  void add_i16(std::string_view key, int16_t v);
  void add_u32(std::string_view key, uint32_t v);
  void add_i32(std::string_view key, int32_t v);
  void add_u64(std::string_view key, uint64_t v);
  void add_i64(std::string_view key, int64_t v);
  void add_f32(std::string_view key, float v);
  void add_f64(std::string_view key, double v);
  void add_bool(std::string_view key, bool v);
  void add_string(std::string_view key, std::string_view v);
  void add_string_array(std::string_view key, std::span<const std::string> v);
  void add_f32_array(std::string_view key, std::span<const float> v);
  void add_i32_array(std::string_view key, std::span<const int32_t> v);
  // Any value: `encoded` is what follows the type id in the file (for an array: element type,
  // count, elements). Build it with the encode_* helpers below.
  void add_raw(std::string_view key, GgufType type, std::span<const std::byte> encoded);
  // A value read from another file (GgufFile::metadata), of any type: copies metadata over.
  void add_value(std::string_view key, const GgufValue& v);

  // `ne` in GGML order (ne[0] = row length); data must be exactly the tensor's size.
  void add_tensor(std::string_view name, TensorType type, std::vector<int64_t> ne, std::span<const std::byte> data);

  std::vector<std::byte> bytes() const;
  // Through a temporary file (util/output_file.h); throws wgc::Error on I/O failure.
  void write(const std::filesystem::path& path, Overwrite overwrite = Overwrite::Yes) const;

  // Little-endian encoders for add_raw.
  static void encode_u32(std::vector<std::byte>& out, uint32_t v);
  static void encode_u64(std::vector<std::byte>& out, uint64_t v);
  static void encode_string(std::vector<std::byte>& out, std::string_view s);

 private:
  struct Tensor {
    std::string name;
    TensorType type;
    std::vector<int64_t> ne;
    std::vector<std::byte> data;
  };
  void kv(std::string_view key, GgufType type, std::span<const std::byte> value);
  template <class T>
  void scalar(std::string_view key, GgufType type, T v);

  uint32_t version_;
  uint32_t alignment_;
  uint64_t n_kv_ = 0;
  std::vector<std::byte> kvs_;
  std::vector<Tensor> tensors_;
};

}  // namespace wgc::llm
