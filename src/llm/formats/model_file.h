// ModelFile: one description of a Llama-family model whatever the file format: a GGUF file or a
// Hugging Face folder (config.json + model.safetensors or sharded *.safetensors with an index).
//
// Tensors carry canonical Hugging Face names and torch shapes [out, in]: model.embed_tokens.weight
// [vocab, hidden], each layer's tensors as tensor_names.h names them ("model.layers.{i}." + their
// Hugging Face name for the decoders), model.norm.weight, lm_head.weight (absent when
// config().tie_word_embeddings).
// GGUF tensors of other names keep their GGUF name (e.g. "rope_freqs.weight"). Every architecture's
// names, per tensor role, in both formats: tensor_names.h, the one table of them (layer(i),
// find_role and role_tensor find tensors by role through it).
//
// Q and K projections are always in the Hugging Face layout (rotary pairs (i, i + d/2) within each
// head): llama.cpp's converter permutes the rows of llama q_proj/k_proj (and their biases) for its
// interleaved rope; open_model undoes that here, once, into a copy the ModelFile owns.
//
// Tensor data are views into the memory-mapped files (or those owned copies) and stay valid as long
// as the ModelFile (moving it keeps them valid). A GGUF opened from a ByteSource (the browser's
// download or File: open_model(source, name)) holds only its header: its tensors' data are empty
// until ModelFile::load reads them, one tensor at a time, into a copy that owns its bytes.
#pragma once

#include "cpu/llm/tensor_type.h"
#include "llm/formats/byte_source.h"
#include "llm/formats/model_config.h"

#include <cstddef>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace wgc::llm {

class GgufFile;
class SafetensorsModel;
struct LayerTensors;  // tensor_names.h

struct ModelTensor {
  std::string name;            // canonical Hugging Face name
  std::string file_name;       // the name in the file ("blk.0.attn_q.weight" in a GGUF)
  TensorType type;             // F32, F16, BF16, Q8_0, Q4_K, ...
  std::vector<int64_t> shape;  // torch order: [rows (out), row length (in)] for matrices
  std::span<const std::byte> data;
  bool unpermuted = false;  // rows reordered from GGUF's interleaved-rope layout (an owned copy)
  // A streamed file's tensor before ModelFile::load: data is empty, its bytes are these in the
  // source. A loaded copy's bytes are kept alive by `owner`.
  uint64_t source_offset = 0, source_bytes = 0;
  std::shared_ptr<const void> owner;

  int64_t numel() const;
  int64_t row_length() const { return shape.empty() ? 1 : shape.back(); }           // contiguous elements
  int64_t rows() const;                                                             // numel / row_length
  uint64_t byte_size() const { return data.empty() ? source_bytes : data.size(); }  // loaded or not
};

struct OpenOptions {
  // Draw a progress bar on stderr (only on a terminal, and only if loading takes > 0.5 s).
  bool progress = true;
  // Read every tensor's pages now (into the page cache) so later uploads do not stall on disk.
  bool prefault = true;
  // Open architectures the engines do not run yet (engine_runs() false: encoders, LayerNorm models);
  // by default they are refused, saying so, so no engine runs them as Llama.
  bool any_architecture = false;
  // Refuse NaN or infinity in the norms, biases, embedding and output (llm/formats/value_check.h).
  bool check_values = true;
};

class ModelFile {
 public:
  enum class Format { Gguf, Safetensors };

  ModelFile(ModelFile&&) noexcept;
  ModelFile& operator=(ModelFile&&) noexcept;
  ~ModelFile();

  Format format() const { return format_; }
  const std::filesystem::path& path() const { return path_; }  // the .gguf file, or the HF folder/file given
  const ModelConfig& config() const { return config_; }

  const std::vector<ModelTensor>& tensors() const { return tensors_; }  // in file order
  const ModelTensor* find(std::string_view name) const;                 // nullptr when absent
  // Throws wgc::Error naming the file and the tensor when absent.
  const ModelTensor& tensor(std::string_view name) const;
  // Layer i's tensors by role (tensor_names.h: the one table of their names; include it to use
  // the result), those the config needs; the file was checked to hold them (open_model).
  LayerTensors layer(int64_t i) const;

  uint64_t total_bytes() const;  // all tensor data

  // Opened from a ByteSource: the tensors' data are read by load().
  bool streamed() const { return source_ != nullptr; }
  // t (one of this file's tensors, or a row range of one: tensor_rows) with its bytes at hand:
  // t itself where they are (a mapped file); for a streamed file a copy whose data are read from
  // the source now (Q/K rows un-permuted, and the values checked where open_model checks them),
  // owned by the copy and freed with it. Throws wgc::Error naming the tensor when they cannot be read.
  ModelTensor load(const ModelTensor& t) const;

  // The parsed GGUF (metadata incl. tokenizer.ggml.*), or nullptr for a Hugging Face folder.
  const GgufFile* gguf() const { return gguf_.get(); }
  // The safetensors checkpoint, or nullptr for a GGUF.
  const SafetensorsModel* safetensors() const { return st_.get(); }

  // Shares ownership of the tensor data (the file mappings and the owned copies): the spans stay
  // valid while the returned holder lives, also after the ModelFile is gone (the CPU engine reads
  // the weights in place). Throws wgc::Error for a streamed file (its tensors are not in memory).
  std::shared_ptr<const void> data_owner() const;

 private:
  friend ModelFile open_model(const std::filesystem::path&, const OpenOptions&);
  friend ModelFile open_model(std::shared_ptr<const ByteSource>, const std::string&, const OpenOptions&);
  ModelFile() = default;
  void add(ModelTensor t);
  void add_gguf_tensors(std::shared_ptr<const GgufFile> g);  // the config and tensors of a GGUF

  Format format_ = Format::Gguf;
  std::filesystem::path path_;
  ModelConfig config_;
  std::vector<ModelTensor> tensors_;
  std::unordered_map<std::string, size_t> index_;
  std::shared_ptr<const GgufFile> gguf_;
  std::shared_ptr<const SafetensorsModel> st_;
  std::vector<std::shared_ptr<std::byte[]>> owned_;  // un-permuted copies
  // Streamed: the source, the Q/K tensors to un-permute at load (file name -> heads), and
  // whether load() checks values (OpenOptions::check_values).
  std::shared_ptr<const ByteSource> source_;
  std::unordered_map<std::string, int64_t> rope_heads_;
  bool check_values_ = true;
};

// Opens a .gguf file, a Hugging Face folder, a .safetensors file / index.json inside one (the
// config.json beside it is used), or a folder with no safetensors weights and exactly one .gguf. Checks that every
// tensor the architecture needs is there with the shape the config implies; throws wgc::Error naming the file, tensor,
// and what is wrong.
ModelFile open_model(const std::filesystem::path& path, const OpenOptions& options = {});

// Opens a GGUF file read through `source` (not mapped): its header is read (bounded:
// GgufFile::read) and checked as open_model(path) checks the file; the tensors' bytes stay in the
// source until ModelFile::load reads them. `name` stands for the file in messages and path().
// options.prefault does not apply; the values are checked by load().
ModelFile open_model(std::shared_ptr<const ByteSource> source, const std::string& name,
                     const OpenOptions& options = {});

// The Hugging Face name of a GGUF tensor of a Llama-family file ("blk.3.attn_q.weight" ->
// "model.layers.3.self_attn.q_proj.weight"); unknown names come back unchanged. Other architectures:
// hf_name_for_gguf (tensor_names.h).
std::string hf_name_from_gguf(std::string_view gguf_name);

// Undoes llama.cpp's Q/K row permutation: `rows` rows of `row_bytes` bytes in `n_heads` heads;
// out row h*d + j*(d/2) + i = in row h*d + 2i + j (d = rows / n_heads). Works for any type since
// quantization blocks run along rows. Throws wgc::Error if rows is not a multiple of 2*n_heads.
void unpermute_rope_rows(std::span<const std::byte> in, std::span<std::byte> out, int64_t rows, int64_t n_heads);

// The whole tensor converted to f32 (dequantized), in its (torch-order) shape.
std::vector<float> to_f32(const ModelTensor& t);

}  // namespace wgc::llm
