#include "llm/formats/safetensors.h"

#include "util/error.h"
#include "util/json.h"

#include <algorithm>
#include <cstring>
#include <fstream>

namespace wgc::llm {
namespace {

constexpr uint64_t kMaxHeader = 100'000'000;  // as the reference implementation limits it

}  // namespace

std::optional<TensorType> safetensors_dtype(std::string_view d) {
  if (d == "F32") return TensorType::F32;
  if (d == "F16") return TensorType::F16;
  if (d == "BF16") return TensorType::BF16;
  if (d == "I32") return TensorType::I32;
  if (d == "I64") return TensorType::I64;
  if (d == "F64") return TensorType::F64;
  if (d == "I8") return TensorType::I8;
  if (d == "I16") return TensorType::I16;
  return std::nullopt;
}

std::string_view safetensors_dtype_name(TensorType t) {
  switch (t) {
    case TensorType::F32: return "F32";
    case TensorType::F16: return "F16";
    case TensorType::BF16: return "BF16";
    case TensorType::I32: return "I32";
    case TensorType::I64: return "I64";
    case TensorType::F64: return "F64";
    case TensorType::I8: return "I8";
    case TensorType::I16: return "I16";
    default: throw Error("safetensors: no dtype for " + std::string(to_string(t)));
  }
}

std::vector<std::byte> safetensors_bytes(std::span<const SafetensorsEntry> tensors,
                                         const std::map<std::string, std::string>& metadata) {
  json::Value header = json::Value::object();
  if (!metadata.empty()) {
    json::Value md = json::Value::object();
    for (const auto& [k, v] : metadata) md.set(k, v);
    header.set("__metadata__", std::move(md));
  }
  uint64_t off = 0;
  for (const auto& t : tensors) {
    auto want = tensor_bytes(t.type, t.shape, t.shape.empty() ? 1 : t.shape.back());
    if (!want || *want != t.data.size())
      throw Error("safetensors: tensor '" + t.name + "': " + std::to_string(t.data.size()) +
                  " bytes do not match its type and shape");
    json::Value e = json::Value::object();
    e.set("dtype", std::string(safetensors_dtype_name(t.type)));
    json::Value shape = json::Value::array();
    for (int64_t d : t.shape) shape.push_back(d);
    e.set("shape", std::move(shape));
    json::Value offs = json::Value::array();
    offs.push_back(off);
    offs.push_back(off + t.data.size());
    e.set("data_offsets", std::move(offs));
    header.set(t.name, std::move(e));
    off += t.data.size();
  }
  std::string text = header.dump();
  while (text.size() % 8) text += ' ';
  std::vector<std::byte> out(8 + text.size());
  uint64_t n = text.size();
  std::memcpy(out.data(), &n, 8);
  std::memcpy(out.data() + 8, text.data(), text.size());
  for (const auto& t : tensors) out.insert(out.end(), t.data.begin(), t.data.end());
  return out;
}

void write_safetensors(const std::filesystem::path& path, std::span<const SafetensorsEntry> tensors,
                       const std::map<std::string, std::string>& metadata, Overwrite overwrite) {
  write_file(path, safetensors_bytes(tensors, metadata), overwrite);
}

int64_t SafetensorsTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

SafetensorsFile SafetensorsFile::open(const std::filesystem::path& path) {
  auto map = MappedFile::open(path);
  SafetensorsFile f = parse(map->bytes(), path.string());
  f.map_ = std::move(map);
  return f;
}

SafetensorsFile SafetensorsFile::parse(std::span<const std::byte> bytes, std::string name) {
  SafetensorsFile f;
  f.name_ = std::move(name);
  auto fail = [&](const std::string& what) -> void { throw Error(f.name_ + ": " + what); };
  if (bytes.size() < 8)
    fail("truncated: " + std::to_string(bytes.size()) + " bytes, too short for the 8-byte header length");
  uint64_t n;
  std::memcpy(&n, bytes.data(), 8);
  if (n > bytes.size() - 8)
    fail("header length " + std::to_string(n) + " runs past the end of the file (size " + std::to_string(bytes.size()) +
         "); not a safetensors file?");
  if (n > kMaxHeader) fail("header length " + std::to_string(n) + " exceeds " + std::to_string(kMaxHeader));
  std::string_view text(reinterpret_cast<const char*>(bytes.data() + 8), size_t(n));
  // The header may be padded with trailing spaces; it must be a JSON object.
  if (text.empty() || text.front() != '{') fail("the header is not a JSON object");
  json::Value header = json::parse(text, f.name_ + " (header)", json::ParseOptions{64});
  if (!header.is_object()) fail("the header is not a JSON object");
  std::span<const std::byte> data = bytes.subspan(8 + size_t(n));

  for (const auto& [key, v] : header.members()) {
    if (key == "__metadata__") {
      if (!v.is_object()) fail("__metadata__ is not an object");
      for (const auto& [mk, mv] : v.members()) f.metadata_[mk] = mv.is_string() ? mv.as_string() : mv.dump();
      continue;
    }
    std::string ctx = "tensor '" + key + "': ";
    if (!v.is_object()) fail(ctx + "entry is a " + std::string(json::to_string(v.type())) + ", expected an object");
    const json::Value* dtype = v.find("dtype");
    const json::Value* shape = v.find("shape");
    const json::Value* offs = v.find("data_offsets");
    if (!dtype || !dtype->is_string()) fail(ctx + "missing or non-string \"dtype\"");
    if (!shape || !shape->is_array()) fail(ctx + "missing or non-array \"shape\"");
    if (!offs || !offs->is_array() || offs->size() != 2) fail(ctx + "\"data_offsets\" is not an array of 2 numbers");
    auto type = safetensors_dtype(dtype->as_string());
    if (!type) fail(ctx + "unsupported dtype " + json::quote(dtype->as_string()));
    SafetensorsTensor t;
    t.name = key;
    t.type = *type;
    if (shape->size() > 16) fail(ctx + std::to_string(shape->size()) + " dimensions");
    for (const auto& d : shape->items()) {
      if (!d.is_int() || d.as_int() < 0) fail(ctx + "shape entry " + d.dump() + " is not a non-negative integer");
      t.shape.push_back(d.as_int());
    }
    for (const auto& o : offs->items())
      if (!o.is_int() || o.as_int() < 0) fail(ctx + "data offset " + o.dump() + " is not a non-negative integer");
    uint64_t begin = uint64_t((*offs)[0].as_int()), end = uint64_t((*offs)[1].as_int());
    auto want = tensor_bytes(t.type, t.shape, t.shape.empty() ? 1 : t.shape.back());
    if (!want) fail(ctx + "shape " + shape->dump() + " overflows");
    if (begin > end) fail(ctx + "data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) + "] decrease");
    if (end > data.size())
      fail(ctx + "data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
           "] run past the end of the data (" + std::to_string(data.size()) + " bytes after the header)");
    if (end - begin != *want)
      fail(ctx + "data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) + "] hold " +
           std::to_string(end - begin) + " bytes, but " + std::string(to_string(t.type)) + " " + shape->dump() +
           " needs " + std::to_string(*want));
    t.data = data.subspan(size_t(begin), size_t(end - begin));
    if (!f.index_.emplace(key, 0).second) fail(ctx + "duplicate name");
    f.tensors_.push_back(std::move(t));
  }
  // As the reference library: in the order of their offsets, the tensors tile the data exactly,
  // with no overlap (two tensors sharing bytes) and no gap, up to the end of the file.
  auto begin_of = [&](const SafetensorsTensor& t) { return uint64_t(t.data.data() - data.data()); };
  std::stable_sort(f.tensors_.begin(), f.tensors_.end(), [&](const SafetensorsTensor& a, const SafetensorsTensor& b) {
    return std::pair(begin_of(a), a.data.size()) < std::pair(begin_of(b), b.data.size());
  });
  uint64_t covered = 0;
  const SafetensorsTensor* prev = nullptr;
  for (const auto& t : f.tensors_) {
    uint64_t b = begin_of(t), e = b + t.data.size();
    std::string offs = "data_offsets [" + std::to_string(b) + ", " + std::to_string(e) + "]";
    if (b < covered)
      fail("tensor '" + t.name + "': " + offs + " overlap tensor '" + prev->name + "' (which ends at " +
           std::to_string(covered) + ")");
    if (b > covered)
      fail("tensor '" + t.name + "': " + offs + " leave " + std::to_string(b - covered) + " bytes unused before it" +
           (prev ? " (after tensor '" + prev->name + "')" : std::string(" (at the start of the data)")));
    covered = e;
    prev = &t;
  }
  if (covered != data.size())
    fail(std::to_string(data.size() - covered) + " bytes after the last tensor's data (the tensors cover " +
         std::to_string(covered) + " of the " + std::to_string(data.size()) + " data bytes)");
  for (size_t i = 0; i < f.tensors_.size(); ++i) f.index_[f.tensors_[i].name] = i;
  return f;
}

const SafetensorsTensor* SafetensorsFile::find(std::string_view name) const {
  auto it = index_.find(std::string(name));
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

// --- sharded checkpoints ------------------------------------------------------------------------

SafetensorsModel SafetensorsModel::open(const std::filesystem::path& path) {
  namespace fs = std::filesystem;
  SafetensorsModel m;
  fs::path index_path, single;
  if (fs::is_directory(path)) {
    if (fs::exists(path / "model.safetensors.index.json")) {
      index_path = path / "model.safetensors.index.json";
    } else if (fs::exists(path / "model.safetensors")) {
      single = path / "model.safetensors";
    } else {
      std::vector<fs::path> found;
      for (const auto& e : fs::directory_iterator(path))
        if (e.path().extension() == ".safetensors") found.push_back(e.path());
      std::vector<fs::path> idx;
      for (const auto& e : fs::directory_iterator(path))
        if (e.path().string().ends_with(".safetensors.index.json")) idx.push_back(e.path());
      if (idx.size() == 1)
        index_path = idx[0];
      else if (found.size() == 1)
        single = found[0];
      else
        throw Error(path.string() + ": no model.safetensors or model.safetensors.index.json (" +
                    std::to_string(found.size()) + " .safetensors files, " + std::to_string(idx.size()) +
                    " index files)");
    }
  } else if (path.string().ends_with(".json")) {
    index_path = path;
  } else {
    single = path;
  }

  if (!single.empty()) {
    m.files_.push_back(SafetensorsFile::open(single));
  } else {
    json::Value idx = json::parse_file(index_path);
    const json::Value* wm = idx.find("weight_map");
    if (!wm || !wm->is_object()) throw Error(index_path.string() + ": no \"weight_map\" object");
    std::map<std::string, size_t> shard_of;  // shard file name -> files_ index
    std::vector<std::pair<std::string, std::string>> wanted;
    for (const auto& [name, file] : wm->members()) {
      if (!file.is_string()) throw Error(index_path.string() + ": weight_map[\"" + name + "\"] is not a string");
      const std::string& fn = file.as_string();
      if (fn.empty() || fn.find('/') != std::string::npos || fn.find('\\') != std::string::npos || fn == "." ||
          fn == "..")
        throw Error(index_path.string() + ": weight_map[\"" + name + "\"] names " + json::quote(fn) +
                    ", not a file in the same folder");
      if (!shard_of.count(fn)) {
        shard_of[fn] = m.files_.size();
        m.files_.push_back(SafetensorsFile::open(index_path.parent_path() / fn));
      }
      wanted.emplace_back(name, fn);
    }
    for (const auto& [name, fn] : wanted)
      if (!m.files_[shard_of[fn]].find(name))
        throw Error(index_path.string() + ": tensor '" + name + "' is mapped to " + fn + ", which does not hold it");
  }

  for (size_t i = 0; i < m.files_.size(); ++i)
    for (const auto& t : m.files_[i].tensors()) {
      if (m.index_.count(t.name))
        throw Error(m.files_[i].name() + ": tensor '" + t.name + "' also appears in " +
                    m.files_[m.tensors_[m.index_[t.name]].file].name());
      m.index_[t.name] = m.tensors_.size();
      m.tensors_.push_back(t);
      m.tensors_.back().file = i;
    }
  return m;
}

const SafetensorsTensor* SafetensorsModel::find(std::string_view name) const {
  auto it = index_.find(std::string(name));
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

uint64_t SafetensorsModel::total_bytes() const {
  uint64_t n = 0;
  for (const auto& t : tensors_) n += t.data.size();
  return n;
}

}  // namespace wgc::llm
