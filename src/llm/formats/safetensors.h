// safetensors reader: one file (8-byte header length, JSON header, data) or a sharded checkpoint
// (model.safetensors.index.json with a weight_map), memory-mapped read-only. Tensor data are views
// into the mappings and live as long as the reader that handed them out.
//
// dtypes read: F32, F16, BF16, I32, I64 (and F64, I8, I16). Every problem with a file throws
// wgc::Error naming the file and what is wrong (tensor, offsets, limit).
#pragma once

#include "cpu/llm/tensor_type.h"
#include "llm/formats/mapped_file.h"
#include "util/output_file.h"

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace wgc::llm {

struct SafetensorsTensor {
  std::string name;
  TensorType type;
  std::vector<int64_t> shape;  // as stored (torch order)
  std::span<const std::byte> data;
  size_t file = 0;  // index into the reader's files()
  int64_t numel() const;
};

class SafetensorsFile {
 public:
  // Maps and parses one .safetensors file.
  static SafetensorsFile open(const std::filesystem::path& path);
  // Parses bytes in memory (kept alive by the caller); `name` stands for the file in messages.
  static SafetensorsFile parse(std::span<const std::byte> bytes, std::string name);

  const std::string& name() const { return name_; }
  const std::vector<SafetensorsTensor>& tensors() const { return tensors_; }  // in data order
  const SafetensorsTensor* find(std::string_view name) const;
  const std::map<std::string, std::string>& metadata() const { return metadata_; }  // "__metadata__"
  const std::shared_ptr<const MappedFile>& mapping() const { return map_; }         // null after parse()

 private:
  std::shared_ptr<const MappedFile> map_;
  std::string name_;
  std::vector<SafetensorsTensor> tensors_;
  std::unordered_map<std::string, size_t> index_;
  std::map<std::string, std::string> metadata_;
};

// A whole checkpoint: one file or the shards named by an index.
class SafetensorsModel {
 public:
  // `path`: a .safetensors file, a *.safetensors.index.json, or a folder holding
  // model.safetensors.index.json or model.safetensors (or exactly one other *.safetensors).
  static SafetensorsModel open(const std::filesystem::path& path);

  const std::vector<SafetensorsFile>& files() const { return files_; }
  const std::vector<SafetensorsTensor>& tensors() const { return tensors_; }  // all shards
  const SafetensorsTensor* find(std::string_view name) const;
  uint64_t total_bytes() const;

 private:
  std::vector<SafetensorsFile> files_;
  std::vector<SafetensorsTensor> tensors_;
  std::unordered_map<std::string, size_t> index_;
};

// "F32", "BF16", ... (safetensors spelling) -> type; nullopt for dtypes wgc does not read.
std::optional<TensorType> safetensors_dtype(std::string_view dtype);
// The safetensors spelling of a plain type; throws wgc::Error for block-quantized types.
std::string_view safetensors_dtype_name(TensorType t);

// Writing (tests, tools): tensors laid out in the given order, header padded to 8 bytes.
struct SafetensorsEntry {
  std::string name;
  TensorType type;
  std::vector<int64_t> shape;
  std::span<const std::byte> data;  // exactly numel x element size
};
std::vector<std::byte> safetensors_bytes(std::span<const SafetensorsEntry> tensors,
                                         const std::map<std::string, std::string>& metadata = {});
void write_safetensors(const std::filesystem::path& path, std::span<const SafetensorsEntry> tensors,
                       const std::map<std::string, std::string>& metadata = {}, Overwrite overwrite = Overwrite::Yes);

}  // namespace wgc::llm
