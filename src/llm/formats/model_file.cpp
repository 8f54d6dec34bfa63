#include "llm/formats/model_file.h"

#include "cpu/llm/dequant.h"
#include "llm/formats/gguf.h"
#include "llm/formats/safetensors.h"
#include "llm/formats/tensor_names.h"
#include "llm/formats/value_check.h"
#include "util/error.h"
#include "util/json.h"
#include "util/progress.h"

#include <unistd.h>

#include <charconv>
#include <cstring>
#include <fstream>

namespace wgc::llm {

int64_t ModelTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

int64_t ModelTensor::rows() const {
  int64_t r = row_length();
  return r ? numel() / r : 0;
}

ModelFile::ModelFile(ModelFile&&) noexcept = default;
ModelFile& ModelFile::operator=(ModelFile&&) noexcept = default;
ModelFile::~ModelFile() = default;

std::shared_ptr<const void> ModelFile::data_owner() const {
  if (source_)
    throw Error(path_.string() +
                ": opened from a stream, its tensors read one at a time for the GPU (ModelFile::load); "
                "the CPU engines read a model's weights in place, from a file opened by its path");
  struct Holder {
    std::shared_ptr<const GgufFile> gguf;
    std::shared_ptr<const SafetensorsModel> st;
    std::vector<std::shared_ptr<std::byte[]>> owned;
  };
  return std::make_shared<Holder>(Holder{gguf_, st_, owned_});
}

const ModelTensor* ModelFile::find(std::string_view name) const {
  auto it = index_.find(std::string(name));
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

const ModelTensor& ModelFile::tensor(std::string_view name) const {
  if (const ModelTensor* t = find(name)) return *t;
  throw Error(path_.string() + ": missing tensor '" + std::string(name) + "'");
}

LayerTensors ModelFile::layer(int64_t i) const {
  if (i < 0 || i >= config_.n_layers)
    throw Error(path_.string() + ": layer " + std::to_string(i) + " of " + std::to_string(config_.n_layers));
  LayerTensors lt;
  for (const ExpectedTensor& e : expected_layer_tensors(config_, i)) {
    if (is_expert_role(e.role)) continue;
    TensorNames n = tensor_names(config_.architecture, e.role, i);
    lt.t[size_t(e.role)] = &tensor(n.hf.empty() ? n.gguf : n.hf);
  }
  return lt;
}

uint64_t ModelFile::total_bytes() const {
  uint64_t n = 0;
  for (const auto& t : tensors_) n += t.byte_size();
  return n;
}

ModelTensor ModelFile::load(const ModelTensor& t) const {
  if (!source_ || !t.data.empty() || t.source_bytes == 0) return t;
  const std::string what = path_.string() + ": tensor '" + t.file_name + "' (" + std::to_string(t.source_bytes) +
                           " bytes at offset " + std::to_string(t.source_offset) + ")";
  // The range was checked against the file's size when the header was read; the memory is the
  // tensor's own size, and one tensor at a time.
  auto alloc = [&] {
    if (t.source_bytes > SIZE_MAX) throw Error(what + " does not fit this machine's address space");
    try {
      return std::shared_ptr<std::byte[]>(new std::byte[size_t(t.source_bytes)]);
    } catch (const std::bad_alloc&) {
      throw Error(what + ": out of memory reading it");
    }
  };
  auto buf = alloc();
  std::span<std::byte> bytes(buf.get(), size_t(t.source_bytes));
  try {
    source_->read(t.source_offset, bytes);
  } catch (const Error& e) {
    throw Error(what + ": " + e.what());
  }
  ModelTensor r = t;
  if (auto it = rope_heads_.find(t.file_name); it != rope_heads_.end()) {
    auto out = alloc();
    std::span<std::byte> o(out.get(), bytes.size());
    unpermute_rope_rows(bytes, o, t.shape.empty() ? 0 : t.shape[0], it->second);
    buf = std::move(out);
    bytes = o;
  }
  r.data = bytes;
  r.owner = std::move(buf);
  r.source_offset = r.source_bytes = 0;
  if (check_values_) check_finite_tensor(*this, r);
  return r;
}

void ModelFile::add(ModelTensor t) {
  if (!index_.emplace(t.name, tensors_.size()).second)
    throw Error(path_.string() + ": two tensors map to the name '" + t.name + "' (the second is '" + t.file_name +
                "')");
  tensors_.push_back(std::move(t));
}

// --- names --------------------------------------------------------------------------------------

std::string hf_name_from_gguf(std::string_view g) { return hf_name_for_gguf(Architecture::Llama, g); }

void unpermute_rope_rows(std::span<const std::byte> in, std::span<std::byte> out, int64_t rows, int64_t n_heads) {
  if (rows <= 0 || n_heads <= 0 || rows % (2 * n_heads))
    throw Error("unpermute_rope_rows: " + std::to_string(rows) + " rows is not a multiple of 2 x " +
                std::to_string(n_heads) + " heads");
  if (in.size() != out.size() || in.size() % size_t(rows))
    throw Error("unpermute_rope_rows: " + std::to_string(in.size()) + " bytes do not split into " +
                std::to_string(rows) + " rows");
  size_t rb = in.size() / size_t(rows);
  int64_t d = rows / n_heads, half = d / 2;
  for (int64_t h = 0; h < n_heads; ++h)
    for (int64_t i = 0; i < half; ++i)
      for (int64_t j = 0; j < 2; ++j) {
        int64_t src = h * d + 2 * i + j, dst = h * d + j * half + i;
        std::memcpy(out.data() + size_t(dst) * rb, in.data() + size_t(src) * rb, rb);
      }
}

std::vector<float> to_f32(const ModelTensor& t) { return dequantize(t.type, t.data, size_t(t.numel())); }

// --- opening ------------------------------------------------------------------------------------

namespace {

std::string shape_str(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

bool is_gguf_file(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  char magic[4] = {};
  f.read(magic, 4);
  return f.gcount() == 4 && std::memcmp(magic, "GGUF", 4) == 0;
}

// What a file that is not a model seems to be, from its first bytes ("a JPEG image"), for the error.
std::string file_kind(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  unsigned char b[8] = {};
  f.read(reinterpret_cast<char*>(b), sizeof b);
  const auto n = size_t(f.gcount());
  auto starts = [&](std::initializer_list<unsigned char> magic) {
    return n >= magic.size() && std::equal(magic.begin(), magic.end(), b);
  };
  if (n == 0) return "an empty file";
  if (starts({0xFF, 0xD8, 0xFF})) return "a JPEG image";
  if (starts({0x89, 'P', 'N', 'G'})) return "a PNG image";
  if (starts({'G', 'I', 'F', '8'})) return "a GIF image";
  if (starts({'P', 'K', 3, 4})) return "a ZIP archive (a PyTorch .bin/.pt checkpoint is one; convert it to GGUF)";
  if (starts({0x80})) return "a Python pickle (a PyTorch checkpoint; convert it to GGUF)";
  if (starts({0x1F, 0x8B})) return "a gzip archive";
  if (starts({'%', 'P', 'D', 'F'})) return "a PDF document";
  if (starts({0x7F, 'E', 'L', 'F'})) return "a program (ELF)";
  if (starts({0x08})) return "perhaps an ONNX model (wgc runs Llama-family GGUF or safetensors models here)";
  bool text = true;
  for (size_t i = 0; i < n; ++i)
    text &= b[i] == '\n' || b[i] == '\r' || b[i] == '\t' || (b[i] >= 0x20 && b[i] != 0x7F) || b[i] >= 0x80;
  return text ? "a text file" : "not a GGUF file (no GGUF signature)";
}

// Touches one byte per page so the data is read now (with a progress bar), not during upload.
void prefault(std::span<const std::byte> d) {
  static const size_t page = size_t(std::max(4096L, ::sysconf(_SC_PAGESIZE)));
  volatile std::byte sink{};
  for (size_t i = 0; i < d.size(); i += page) sink = d[i];
  if (!d.empty()) sink = d.back();
  (void)sink;
}

}  // namespace

void ModelFile::add_gguf_tensors(std::shared_ptr<const GgufFile> g) {
  config_ = config_from_gguf(*g);
  const ModelConfig& c = config_;
  const bool streamed = g->source() != nullptr;
  // llama.cpp permutes Q/K rows for the llama architecture (interleaved "normal" rope); qwen2/3
  // use neox rope there and are stored unpermuted.
  bool permuted = c.architecture == Architecture::Llama || c.architecture == Architecture::Mistral ||
                  c.architecture == Architecture::Mixtral;
  for (const auto& ti : g->tensors()) {
    ModelTensor t;
    t.file_name = std::string(ti.name);
    t.name = hf_name_for_gguf(c.architecture, ti.name);
    t.type = ti.type;
    t.shape = ti.torch_shape();
    if (streamed) {
      t.source_offset = g->data_offset() + ti.offset;
      t.source_bytes = ti.bytes;
    } else {
      t.data = g->tensor_data(ti);
    }
    add(std::move(t));
  }
  if (permuted) {
    using R = TensorRole;
    for (auto& t : tensors_) {
      // The layer's q/k weights and biases, by the name table (the name is canonical by now).
      int64_t layer = -1;
      if (std::string_view n = t.name; n.starts_with("model.layers."))
        std::from_chars(n.data() + 13, n.data() + n.size(), layer);
      if (layer < 0 || layer >= c.n_layers) continue;
      auto named = [&](R r) { return t.name == tensor_names(c.architecture, r, layer).hf; };
      bool is_q = named(R::AttnQ) || named(R::AttnQBias);
      bool is_k = named(R::AttnK) || named(R::AttnKBias);
      if (!is_q && !is_k) continue;
      int64_t heads = is_q ? c.n_heads : c.n_kv_heads;
      int64_t rows = t.shape.empty() ? 0 : t.shape[0];
      if (t.shape.size() > 2 || rows % (2 * heads))
        throw Error(path_.string() + ": tensor '" + t.file_name + "' of shape " + shape_str(t.shape) +
                    " cannot be split into " + std::to_string(heads) + " heads of even size");
      t.unpermuted = true;
      if (streamed) {  // load() un-permutes it when it reads it
        rope_heads_[t.file_name] = heads;
        continue;
      }
      auto buf = std::shared_ptr<std::byte[]>(new std::byte[t.data.size()]);
      std::span<std::byte> out(buf.get(), t.data.size());
      unpermute_rope_rows(t.data, out, rows, heads);
      t.data = out;
      owned_.push_back(std::move(buf));
    }
  }
  gguf_ = std::move(g);
}

ModelFile open_model(std::shared_ptr<const ByteSource> source, const std::string& name, const OpenOptions& opt) {
  if (!source) throw Error(name + ": no source to read the model from");
  ModelFile m;
  m.path_ = name;
  m.format_ = ModelFile::Format::Gguf;
  m.source_ = source;
  m.check_values_ = opt.check_values;
  m.add_gguf_tensors(std::make_shared<GgufFile>(GgufFile::read(std::move(source), name)));
  check_model_tensors(m);
  if (!opt.any_architecture && !engine_runs(m.config_))
    throw Error(m.path_.string() + ": " + engine_refusal(m.config_));
  return m;
}

ModelFile open_model(const std::filesystem::path& path, const OpenOptions& opt) {
  namespace fs = std::filesystem;
  if (!fs::exists(path)) throw Error(path.string() + ": no such file or folder");
  ModelFile m;
  m.path_ = path;

  // A folder without safetensors weights (model.safetensors, model-*.safetensors, an index) but
  // with exactly one .gguf (e.g. the GGUF beside its tokenizer.json and config.json) means that file.
  if (fs::is_directory(path)) {
    std::vector<fs::path> ggufs;
    bool safetensors = false;
    for (const auto& e : fs::directory_iterator(path)) {
      if (e.path().extension() == ".gguf") ggufs.push_back(e.path());
      std::string n = e.path().filename().string();
      if (n == "model.safetensors" || n.ends_with(".safetensors.index.json") ||
          (n.starts_with("model-") && n.ends_with(".safetensors")))
        safetensors = true;
    }
    if (!safetensors && ggufs.size() == 1) m.path_ = ggufs[0];
  }
  bool gguf = !fs::is_directory(m.path_) && (m.path_.extension() == ".gguf" || is_gguf_file(m.path_));
  // A file is a GGUF, or one safetensors file of a Hugging Face folder; anything else is named.
  if (!gguf && !fs::is_directory(m.path_) && m.path_.extension() != ".safetensors")
    throw Error(m.path_.string() + " is not a model: it is " + file_kind(m.path_) +
                ". Give a GGUF file or a Hugging Face folder (config.json, *.safetensors, tokenizer.json).");
  std::vector<std::span<const std::byte>> to_read;  // for prefaulting
  if (gguf) {
    m.format_ = ModelFile::Format::Gguf;
    m.add_gguf_tensors(std::make_shared<GgufFile>(GgufFile::open(m.path_)));
    for (const auto& t : m.tensors_)
      if (!t.unpermuted) to_read.push_back(t.data);
  } else {
    m.format_ = ModelFile::Format::Safetensors;
    fs::path dir = fs::is_directory(path) ? path : path.parent_path();
    m.config_ = config_from_hf_dir(dir);
    auto st = std::make_shared<SafetensorsModel>(SafetensorsModel::open(path));
    for (const auto& s : st->tensors()) {
      ModelTensor t;
      t.name = canonical_hf_name(m.config_.architecture, s.name);
      t.file_name = s.name;
      t.type = s.type;
      t.shape = s.shape;
      t.data = s.data;
      m.add(std::move(t));
      to_read.push_back(s.data);
    }
    // The tensors decide what the config cannot know for sure.
    ModelConfig& c = m.config_;
    // No lm_head: tied, unless config.json says explicitly that it is not (then it is missing).
    if (m.find("lm_head.weight") == nullptr && !c.tie_word_embeddings &&
        !json::parse_file(dir / "config.json").find("tie_word_embeddings"))
      c.tie_word_embeddings = true;
    if (m.find(tensor_names(c.architecture, TensorRole::AttnQBias, 0).hf)) c.attention_bias = true;
    if (m.find(tensor_names(c.architecture, TensorRole::AttnQNorm, 0).hf) && !c.qk_norm_whole) c.qk_norm = true;
    m.st_ = std::move(st);
  }
  check_model_tensors(m);
  if (!opt.any_architecture && !engine_runs(m.config_))
    throw Error(m.path_.string() + ": " + engine_refusal(m.config_));

  if (opt.prefault && !to_read.empty()) {
    uint64_t total = 0;
    for (auto s : to_read) total += s.size();
    std::unique_ptr<Progress> bar;
    if (opt.progress)
      bar = std::make_unique<Progress>("loading " + m.path_.filename().string(), total, Progress::Unit::Bytes);
    const MappedFile* map = m.gguf_ ? m.gguf_->mapping().get() : nullptr;
    if (map) map->will_need(map->bytes());
    if (m.st_)
      for (const auto& f : m.st_->files())
        if (f.mapping()) f.mapping()->will_need(f.mapping()->bytes());
    constexpr size_t kChunk = 16 << 20;
    for (auto s : to_read)
      for (size_t off = 0; off < s.size(); off += kChunk) {
        auto part = s.subspan(off, std::min(kChunk, s.size() - off));
        prefault(part);
        if (bar) bar->add(part.size());
      }
  }
  if (opt.check_values) check_finite_weights(m);
  return m;
}

}  // namespace wgc::llm
