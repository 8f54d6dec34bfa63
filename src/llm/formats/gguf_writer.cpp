#include "llm/formats/gguf_writer.h"

#include "util/error.h"

#include <cstring>

namespace wgc::llm {

GgufWriter::GgufWriter(uint32_t version, uint32_t alignment) : version_(version), alignment_(alignment) {
  if (alignment == 0 || (alignment & (alignment - 1))) throw Error("GgufWriter: alignment must be a power of two");
  if (alignment != 32) add_u32("general.alignment", alignment);
}

void GgufWriter::encode_u32(std::vector<std::byte>& out, uint32_t v) {
  size_t at = out.size();
  out.resize(at + 4);
  std::memcpy(out.data() + at, &v, 4);
}

void GgufWriter::encode_u64(std::vector<std::byte>& out, uint64_t v) {
  size_t at = out.size();
  out.resize(at + 8);
  std::memcpy(out.data() + at, &v, 8);
}

void GgufWriter::encode_string(std::vector<std::byte>& out, std::string_view s) {
  encode_u64(out, s.size());
  size_t at = out.size();
  out.resize(at + s.size());
  if (!s.empty()) std::memcpy(out.data() + at, s.data(), s.size());
}

void GgufWriter::kv(std::string_view key, GgufType type, std::span<const std::byte> value) {
  encode_string(kvs_, key);
  encode_u32(kvs_, uint32_t(type));
  kvs_.insert(kvs_.end(), value.begin(), value.end());
  ++n_kv_;
}

template <class T>
void GgufWriter::scalar(std::string_view key, GgufType type, T v) {
  std::byte b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  kv(key, type, b);
}

void GgufWriter::add_u8(std::string_view key, uint8_t v) { scalar(key, GgufType::U8, v); }
void GgufWriter::add_i8(std::string_view key, int8_t v) { scalar(key, GgufType::I8, v); }
void GgufWriter::add_u16(std::string_view key, uint16_t v) { scalar(key, GgufType::U16, v); }
void GgufWriter::add_i16(std::string_view key, int16_t v) { scalar(key, GgufType::I16, v); }
void GgufWriter::add_u32(std::string_view key, uint32_t v) { scalar(key, GgufType::U32, v); }
void GgufWriter::add_i32(std::string_view key, int32_t v) { scalar(key, GgufType::I32, v); }
void GgufWriter::add_u64(std::string_view key, uint64_t v) { scalar(key, GgufType::U64, v); }
void GgufWriter::add_i64(std::string_view key, int64_t v) { scalar(key, GgufType::I64, v); }
void GgufWriter::add_f32(std::string_view key, float v) { scalar(key, GgufType::F32, v); }
void GgufWriter::add_f64(std::string_view key, double v) { scalar(key, GgufType::F64, v); }
void GgufWriter::add_bool(std::string_view key, bool v) { scalar(key, GgufType::Bool, uint8_t(v ? 1 : 0)); }

void GgufWriter::add_string(std::string_view key, std::string_view v) {
  std::vector<std::byte> b;
  encode_string(b, v);
  kv(key, GgufType::String, b);
}

void GgufWriter::add_string_array(std::string_view key, std::span<const std::string> v) {
  std::vector<std::byte> b;
  encode_u32(b, uint32_t(GgufType::String));
  encode_u64(b, v.size());
  for (const auto& s : v) encode_string(b, s);
  kv(key, GgufType::Array, b);
}

void GgufWriter::add_f32_array(std::string_view key, std::span<const float> v) {
  std::vector<std::byte> b;
  encode_u32(b, uint32_t(GgufType::F32));
  encode_u64(b, v.size());
  auto raw = std::as_bytes(v);
  b.insert(b.end(), raw.begin(), raw.end());
  kv(key, GgufType::Array, b);
}

void GgufWriter::add_i32_array(std::string_view key, std::span<const int32_t> v) {
  std::vector<std::byte> b;
  encode_u32(b, uint32_t(GgufType::I32));
  encode_u64(b, v.size());
  auto raw = std::as_bytes(v);
  b.insert(b.end(), raw.begin(), raw.end());
  kv(key, GgufType::Array, b);
}

void GgufWriter::add_raw(std::string_view key, GgufType type, std::span<const std::byte> encoded) {
  kv(key, type, encoded);
}

namespace {

// `v` as it follows its type id in a file (arrays: element type, count, elements).
void encode_value(std::vector<std::byte>& out, const GgufValue& v) {
  auto put = [&](const auto& x) {
    const auto* p = reinterpret_cast<const std::byte*>(&x);
    out.insert(out.end(), p, p + sizeof x);
  };
  switch (v.type()) {
    case GgufType::U8: put(uint8_t(*v.to_u64())); return;
    case GgufType::I8: put(int8_t(*v.to_i64())); return;
    case GgufType::U16: put(uint16_t(*v.to_u64())); return;
    case GgufType::I16: put(int16_t(*v.to_i64())); return;
    case GgufType::U32: put(uint32_t(*v.to_u64())); return;
    case GgufType::I32: put(int32_t(*v.to_i64())); return;
    case GgufType::U64: put(uint64_t(*v.to_u64())); return;
    case GgufType::I64: put(int64_t(*v.to_i64())); return;
    case GgufType::F32: put(float(*v.to_f64())); return;
    case GgufType::F64: put(double(*v.to_f64())); return;
    case GgufType::Bool: put(uint8_t(*v.to_bool() ? 1 : 0)); return;
    case GgufType::String: GgufWriter::encode_string(out, *v.to_string()); return;
    case GgufType::Array: {
      GgufWriter::encode_u32(out, uint32_t(v.array_type()));
      GgufWriter::encode_u64(out, v.size());
      if (v.array_type() == GgufType::String) {
        for (std::string_view s : v.strings()) GgufWriter::encode_string(out, s);
      } else if (v.array_type() == GgufType::Array) {
        for (size_t i = 0; i < v.size(); ++i) encode_value(out, v.at(i));
      } else {
        out.insert(out.end(), v.raw().begin(), v.raw().end());
      }
      return;
    }
  }
  throw Error("GgufWriter: a value of unknown type " + std::to_string(int(v.type())));
}

}  // namespace

void GgufWriter::add_value(std::string_view key, const GgufValue& v) {
  std::vector<std::byte> b;
  encode_value(b, v);
  kv(key, v.type(), b);
}

void GgufWriter::add_tensor(std::string_view name, TensorType type, std::vector<int64_t> ne,
                            std::span<const std::byte> data) {
  auto want = tensor_bytes(type, ne, ne.empty() ? 1 : ne[0]);
  if (!want || *want != data.size())
    throw Error("GgufWriter: tensor '" + std::string(name) + "': " + std::to_string(data.size()) +
                " bytes do not match its type and shape");
  tensors_.push_back({std::string(name), type, std::move(ne), {data.begin(), data.end()}});
}

std::vector<std::byte> GgufWriter::bytes() const {
  std::vector<std::byte> out;
  const char magic[4] = {'G', 'G', 'U', 'F'};
  for (char c : magic) out.push_back(std::byte(c));
  encode_u32(out, version_);
  encode_u64(out, tensors_.size());
  encode_u64(out, n_kv_);
  out.insert(out.end(), kvs_.begin(), kvs_.end());
  auto align = [&](uint64_t x) { return (x + alignment_ - 1) / alignment_ * alignment_; };
  uint64_t off = 0;
  std::vector<uint64_t> offsets;
  for (const auto& t : tensors_) {
    encode_string(out, t.name);
    encode_u32(out, uint32_t(t.ne.size()));
    for (int64_t d : t.ne) encode_u64(out, uint64_t(d));
    encode_u32(out, uint32_t(t.type));
    encode_u64(out, off);
    offsets.push_back(off);
    off = align(off + t.data.size());
  }
  out.resize(size_t(align(out.size())));
  size_t base = out.size();
  for (size_t i = 0; i < tensors_.size(); ++i) {
    out.resize(base + size_t(offsets[i]));
    out.insert(out.end(), tensors_[i].data.begin(), tensors_[i].data.end());
  }
  return out;
}

void GgufWriter::write(const std::filesystem::path& path, Overwrite overwrite) const {
  write_file(path, bytes(), overwrite);
}

}  // namespace wgc::llm
