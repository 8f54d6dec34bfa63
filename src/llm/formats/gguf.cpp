#include "llm/formats/gguf.h"

#include "util/error.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <unordered_map>

static_assert(std::endian::native == std::endian::little, "the GGUF reader assumes a little-endian host");

namespace wgc::llm {

std::string_view to_string(GgufType t) {
  switch (t) {
    case GgufType::U8: return "u8";
    case GgufType::I8: return "i8";
    case GgufType::U16: return "u16";
    case GgufType::I16: return "i16";
    case GgufType::U32: return "u32";
    case GgufType::I32: return "i32";
    case GgufType::F32: return "f32";
    case GgufType::Bool: return "bool";
    case GgufType::String: return "string";
    case GgufType::Array: return "array";
    case GgufType::U64: return "u64";
    case GgufType::I64: return "i64";
    case GgufType::F64: return "f64";
  }
  return "?";
}

namespace {

constexpr size_t kMaxArrayDepth = 16;  // arrays of arrays nested deeper than this are refused
constexpr uint32_t kMaxDims = 4;       // GGML_MAX_DIMS

// Size in bytes of a scalar metadata type; 0 for string/array/unknown.
size_t scalar_size(GgufType t) {
  switch (t) {
    case GgufType::U8:
    case GgufType::I8:
    case GgufType::Bool: return 1;
    case GgufType::U16:
    case GgufType::I16: return 2;
    case GgufType::U32:
    case GgufType::I32:
    case GgufType::F32: return 4;
    case GgufType::U64:
    case GgufType::I64:
    case GgufType::F64: return 8;
    default: return 0;
  }
}

bool valid_type(uint32_t t) { return t <= uint32_t(GgufType::F64); }

bool is_signed(GgufType t) {
  return t == GgufType::I8 || t == GgufType::I16 || t == GgufType::I32 || t == GgufType::I64;
}

// Reads a scalar of type t at p into (bits, f).
void decode_scalar(GgufType t, const std::byte* p, uint64_t& bits, double& f) {
  switch (t) {
    case GgufType::U8:
    case GgufType::Bool: bits = uint8_t(p[0]); break;
    case GgufType::I8: bits = uint64_t(int64_t(int8_t(p[0]))); break;
    case GgufType::U16: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      bits = v;
      break;
    }
    case GgufType::I16: {
      int16_t v;
      std::memcpy(&v, p, 2);
      bits = uint64_t(int64_t(v));
      break;
    }
    case GgufType::U32: {
      uint32_t v;
      std::memcpy(&v, p, 4);
      bits = v;
      break;
    }
    case GgufType::I32: {
      int32_t v;
      std::memcpy(&v, p, 4);
      bits = uint64_t(int64_t(v));
      break;
    }
    case GgufType::U64:
    case GgufType::I64: std::memcpy(&bits, p, 8); break;
    case GgufType::F32: {
      float v;
      std::memcpy(&v, p, 4);
      f = v;
      break;
    }
    case GgufType::F64: std::memcpy(&f, p, 8); break;
    default: break;
  }
}

// Names of GGML types that exist but that wgc does not read, for error messages.
std::string ggml_type_name(uint32_t id) {
  if (auto t = type_from_ggml(id)) return std::string(to_string(*t));
  switch (id) {
    case 4: return "Q4_2 (removed)";
    case 5: return "Q4_3 (removed)";
    case 9: return "Q8_1";
    case 10: return "Q2_K";
    case 11: return "Q3_K";
    case 16: return "IQ2_XXS";
    case 17: return "IQ2_XS";
    case 18: return "IQ3_XXS";
    case 19: return "IQ1_S";
    case 20: return "IQ4_NL";
    case 21: return "IQ3_S";
    case 22: return "IQ2_S";
    case 23: return "IQ4_XS";
    case 29: return "IQ1_M";
    case 31: return "Q4_0_4_4 (removed)";
    case 32: return "Q4_0_4_8 (removed)";
    case 33: return "Q4_0_8_8 (removed)";
    case 34: return "TQ1_0";
    case 35: return "TQ2_0";
    default: return "unknown";
  }
}

std::string quoted(std::string_view s, size_t max = 80) {
  std::string out = "'";
  size_t n = std::min(s.size(), max);
  for (size_t i = 0; i < n; ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += char(c);
    }
  }
  if (n < s.size()) out += "...";
  return out + "'";
}

}  // namespace

// --- GgufValue ----------------------------------------------------------------------------------

bool GgufValue::is_integer() const {
  switch (type_) {
    case GgufType::U8:
    case GgufType::I8:
    case GgufType::U16:
    case GgufType::I16:
    case GgufType::U32:
    case GgufType::I32:
    case GgufType::U64:
    case GgufType::I64: return true;
    default: return false;
  }
}

bool GgufValue::is_float() const { return type_ == GgufType::F32 || type_ == GgufType::F64; }

std::optional<int64_t> GgufValue::to_i64() const {
  if (!is_integer()) return std::nullopt;
  if (type_ == GgufType::U64 && bits_ > uint64_t(INT64_MAX)) return std::nullopt;
  return int64_t(bits_);
}

std::optional<uint64_t> GgufValue::to_u64() const {
  if (!is_integer()) return std::nullopt;
  if (is_signed(type_) && int64_t(bits_) < 0) return std::nullopt;
  return bits_;
}

std::optional<double> GgufValue::to_f64() const {
  if (is_float()) return f_;
  if (!is_integer()) return std::nullopt;
  return is_signed(type_) ? double(int64_t(bits_)) : double(bits_);
}

std::optional<bool> GgufValue::to_bool() const {
  if (type_ != GgufType::Bool) return std::nullopt;
  return bits_ != 0;
}

std::optional<std::string_view> GgufValue::to_string() const {
  if (type_ != GgufType::String) return std::nullopt;
  return str_;
}

GgufValue GgufValue::at(size_t i) const {
  if (type_ != GgufType::Array) throw Error("GGUF: at() on a " + std::string(llm::to_string(type_)) + " value");
  if (i >= count_)
    throw Error("GGUF: array index " + std::to_string(i) + " out of range (" + std::to_string(count_) + " items)");
  if (elem_ == GgufType::String) {
    GgufValue v;
    v.type_ = GgufType::String;
    v.str_ = (*strings_)[i];
    return v;
  }
  if (elem_ == GgufType::Array) return (*items_)[i];
  GgufValue v;
  v.type_ = elem_;
  decode_scalar(elem_, data_ + i * scalar_size(elem_), v.bits_, v.f_);
  return v;
}

std::span<const std::string_view> GgufValue::strings() const {
  if (type_ != GgufType::Array || elem_ != GgufType::String || !strings_) return {};
  return *strings_;
}

std::string GgufValue::describe(size_t max_items, size_t max_string) const {
  char buf[64];
  switch (type_) {
    case GgufType::Bool: return bits_ ? "true" : "false";
    case GgufType::F32: std::snprintf(buf, sizeof buf, "%.9g", f_); return buf;
    case GgufType::F64: std::snprintf(buf, sizeof buf, "%.17g", f_); return buf;
    case GgufType::String: {
      std::string s = quoted(str_, max_string);
      s[0] = s.back() = '"';
      return s;
    }
    case GgufType::Array: {
      std::string s = "[";  // (appends: GCC 12 warns falsely on "[" + std::to_string(...))
      s += std::to_string(count_);
      s += " x ";
      s += llm::to_string(elem_);
      s += "] [";
      size_t n = std::min(count_, max_items);
      for (size_t i = 0; i < n; ++i) {
        if (i) s += ", ";
        s += at(i).describe(max_items, max_string);
      }
      if (n < count_) s += ", ...";
      return s + "]";
    }
    default:
      if (is_signed(type_))
        std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(int64_t(bits_)));
      else
        std::snprintf(buf, sizeof buf, "%llu", static_cast<unsigned long long>(bits_));
      return buf;
  }
}

int64_t GgufTensorInfo::numel() const {
  int64_t n = 1;
  for (int64_t d : ne) n *= d;
  return n;
}

// --- parsing ------------------------------------------------------------------------------------

struct GgufFile::Index {
  std::unordered_map<std::string_view, size_t> keys;
  std::unordered_map<std::string_view, size_t> tensors;
};

// Thrown by the parser reading a prefix of the file (GgufFile::read) when the header goes on past
// it: the bytes it needs from the start.
struct GgufNeedMore {
  uint64_t bytes;
};

class GgufParser {
 public:
  // Parses f.bytes_, the whole file or (GgufFile::read) its first bytes, of a file of
  // f.file_size_ bytes whose header may take at most `limit` bytes.
  GgufParser(GgufFile& f, uint64_t limit)  // NOLINT
      : f_(f), data_(f.bytes_.data()), size_(f.bytes_.size()), limit_(std::min(limit, f.file_size_)) {}

  void run() {
    if (f_.file_size_ >= 4) more(4);
    if (size_ < 4 || std::memcmp(data_, "GGUF", 4) != 0) {
      std::string got;
      for (size_t i = 0; i < std::min<size_t>(size_, 4); ++i) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "%02x", unsigned(data_[i]));
        got += buf;
      }
      fail("not a GGUF file: the magic is " + (size_ < 4 ? "missing (file of " + std::to_string(size_) + " bytes)"
                                                         : "0x" + got + ", expected \"GGUF\" (0x47475546)"));
    }
    pos_ = 4;
    uint32_t version = u32("the version");
    if (version == 1) fail("GGUF version 1 is not supported (only 2 and 3)");
    if (version != 2 && version != 3) {
      if ((version & 0xFFFF) == 0 && version != 0)
        fail("GGUF version " + std::to_string(version) + ": a big-endian file? (only little-endian is supported)");
      fail("unsupported GGUF version " + std::to_string(version) + " (only 2 and 3)");
    }
    f_.version_ = version;
    uint64_t n_tensors = u64("the tensor count");
    uint64_t n_kv = u64("the metadata count");
    // Each metadata entry takes at least 8 (key length) + 4 (type) + 1 bytes; each tensor info
    // at least 8 (name length) + 4 (dims) + 4 (type) + 8 (offset).
    if (n_kv > remaining() / 13)
      fail("metadata count " + std::to_string(n_kv) + " cannot fit in the " + std::to_string(remaining()) +
           " bytes left (offset " + std::to_string(pos_) + ")");
    if (n_tensors > remaining() / 24)
      fail("tensor count " + std::to_string(n_tensors) + " cannot fit in the " + std::to_string(remaining()) +
           " bytes left (offset " + std::to_string(pos_) + ")");

    f_.index_ = std::make_unique<GgufFile::Index>();
    f_.kvs_.reserve(size_t(n_kv));
    for (uint64_t i = 0; i < n_kv; ++i) {
      ctx_ = "metadata entry " + std::to_string(i);
      std::string_view key = string("the key");
      if (key.empty()) fail("empty key");
      ctx_ = "metadata key " + quoted(key);
      uint32_t t = u32("the value type");
      if (!valid_type(t)) fail("unknown value type " + std::to_string(t));
      GgufValue v = value(GgufType(t), 0);
      if (!f_.index_->keys.emplace(key, f_.kvs_.size()).second) fail("duplicate key");
      f_.kvs_.push_back({key, std::move(v)});
    }
    ctx_.clear();

    f_.alignment_ = 32;
    if (const GgufValue* a = f_.find("general.alignment")) {
      auto v = a->to_u64();
      if (!v || *v == 0 || (*v & (*v - 1)) != 0 || *v > (1u << 30))
        fail("general.alignment is " + a->describe() + ", expected a power of two");
      f_.alignment_ = *v;
    }

    f_.tensors_.reserve(size_t(n_tensors));
    for (uint64_t i = 0; i < n_tensors; ++i) {
      ctx_ = "tensor info " + std::to_string(i);
      GgufTensorInfo ti;
      ti.name = string("the name");
      ctx_ = "tensor " + quoted(ti.name);
      uint32_t nd = u32("the dimension count");
      if (nd > kMaxDims) fail(std::to_string(nd) + " dimensions (at most " + std::to_string(kMaxDims) + ")");
      for (uint32_t d = 0; d < nd; ++d) {
        uint64_t n = u64("a dimension");
        if (n > uint64_t(INT64_MAX)) fail("dimension " + std::to_string(d) + " is " + std::to_string(n));
        ti.ne.push_back(int64_t(n));
      }
      uint32_t type = u32("the type");
      auto tt = type_from_ggml(type);
      if (!tt) fail("type " + std::to_string(type) + " (" + ggml_type_name(type) + ") is not supported");
      ti.type = *tt;
      ti.offset = u64("the data offset");
      int64_t row = ti.ne.empty() ? 1 : ti.ne[0];
      auto bytes = tensor_bytes(ti.type, ti.ne, row);
      if (!bytes) {
        std::string shape;
        for (int64_t d : ti.ne) shape += (shape.empty() ? "" : " x ") + std::to_string(d);
        if (row % block_size(ti.type))
          fail("row length " + std::to_string(row) + " is not a multiple of the " + std::string(to_string(ti.type)) +
               " block size " + std::to_string(block_size(ti.type)));
        fail("size of a " + std::string(to_string(ti.type)) + " tensor of [" + shape + "] overflows");
      }
      ti.bytes = *bytes;
      if (ti.offset % f_.alignment_)
        fail("data offset " + std::to_string(ti.offset) + " is not a multiple of the alignment " +
             std::to_string(f_.alignment_));
      if (!f_.index_->tensors.emplace(ti.name, f_.tensors_.size()).second) fail("duplicate tensor name");
      f_.tensors_.push_back(std::move(ti));
    }
    ctx_.clear();

    uint64_t data = pos_ + (f_.alignment_ - pos_ % f_.alignment_) % f_.alignment_;
    f_.data_offset_ = data;
    const uint64_t file = f_.file_size_;
    for (const auto& t : f_.tensors_) {
      if (t.bytes == 0) continue;
      if (data > file || t.offset > file - data || t.bytes > file - data - t.offset)
        fail("tensor " + quoted(t.name) + ": data [" + std::to_string(t.offset) + ", +" + std::to_string(t.bytes) +
             ") from the data section at " + std::to_string(data) + " runs past the end of the file (size " +
             std::to_string(file) + ")");
    }
    // Each tensor's bytes are its own: a range shared with another (a type or shape changed in the
    // file, two infos at one offset) would read another tensor's data as this one's.
    std::vector<const GgufTensorInfo*> by_offset;
    for (const auto& t : f_.tensors_)
      if (t.bytes) by_offset.push_back(&t);
    std::sort(by_offset.begin(), by_offset.end(), [](auto* a, auto* b) { return a->offset < b->offset; });
    for (size_t i = 1; i < by_offset.size(); ++i) {
      const GgufTensorInfo &a = *by_offset[i - 1], &b = *by_offset[i];
      if (b.offset < a.offset + a.bytes)
        fail("tensor " + quoted(a.name) + " (" + std::string(to_string(a.type)) + ", data [" +
             std::to_string(a.offset) + ", +" + std::to_string(a.bytes) + ")) overlaps tensor " + quoted(b.name) +
             " at data offset " + std::to_string(b.offset) +
             ": a tensor's type or shape does not match its data, or two tensors share their bytes");
    }
  }

 private:
  GgufFile& f_;
  const std::byte* data_;
  size_t size_;     // bytes at hand (data_)
  uint64_t limit_;  // bytes the header may take: the file's size, or less (GgufFile::read)
  size_t pos_ = 0;
  std::string ctx_;  // what is being read, for messages

  uint64_t remaining() const { return limit_ - pos_; }

  // Where a length that does not fit ends: the end of the file, or the header's limit.
  std::string past_end() const {
    if (limit_ < f_.file_size_)
      return "runs past the " + std::to_string(limit_) + " bytes a GGUF header may take (a file of " +
             std::to_string(f_.file_size_) + " bytes)";
    return "runs past the end of the file (size " + std::to_string(f_.file_size_) + ")";
  }

  // The next n bytes (checked to be inside the header) are at hand, else the caller reads more.
  void more(uint64_t n) const {
    if (pos_ + n > size_) throw GgufNeedMore{pos_ + n};
  }

  [[noreturn]] void fail(const std::string& what) const {
    throw Error(f_.name_ + ": " + (ctx_.empty() ? "" : ctx_ + ": ") + what);
  }

  void need(size_t n, const char* what) {
    if (n > remaining())
      fail("truncated: " + std::string(what) + " (" + std::to_string(n) + " bytes at offset " + std::to_string(pos_) +
           ") " + past_end());
    more(n);
  }

  uint32_t u32(const char* what) {
    need(4, what);
    uint32_t v;
    std::memcpy(&v, data_ + pos_, 4);
    pos_ += 4;
    return v;
  }

  uint64_t u64(const char* what) {
    need(8, what);
    uint64_t v;
    std::memcpy(&v, data_ + pos_, 8);
    pos_ += 8;
    return v;
  }

  std::string_view string(const char* what) {
    size_t at = pos_;
    uint64_t n = u64(what);
    if (n > remaining())
      fail(std::string(what) + ": string length " + std::to_string(n) + " at offset " + std::to_string(at) + " " +
           past_end());
    more(n);
    std::string_view s(reinterpret_cast<const char*>(data_ + pos_), size_t(n));
    pos_ += size_t(n);
    return s;
  }

  GgufValue value(GgufType t, size_t depth) {
    GgufValue v;
    v.type_ = t;
    if (t == GgufType::String) {
      v.str_ = string("a string value");
      return v;
    }
    if (t != GgufType::Array) {
      size_t n = scalar_size(t);
      need(n, "a value");
      decode_scalar(t, data_ + pos_, v.bits_, v.f_);
      if (t == GgufType::Bool && v.bits_ > 1)
        fail("bool value " + std::to_string(v.bits_) + " at offset " + std::to_string(pos_));
      pos_ += n;
      return v;
    }
    if (depth >= kMaxArrayDepth) fail("arrays nested deeper than " + std::to_string(kMaxArrayDepth));
    size_t at = pos_;
    uint32_t et = u32("the array element type");
    if (!valid_type(et)) fail("unknown array element type " + std::to_string(et) + " at offset " + std::to_string(at));
    v.elem_ = GgufType(et);
    uint64_t count = u64("the array length");
    size_t min_size = v.elem_ == GgufType::String ? 8 : v.elem_ == GgufType::Array ? 12 : scalar_size(v.elem_);
    if (count > remaining() / min_size)
      fail("array of " + std::to_string(count) + " " + std::string(llm::to_string(v.elem_)) + " at offset " +
           std::to_string(at) + " cannot fit in the " + std::to_string(remaining()) + " bytes left");
    v.count_ = size_t(count);
    if (v.elem_ == GgufType::String) {
      auto strs = std::make_shared<std::vector<std::string_view>>();
      strs->reserve(v.count_);
      for (size_t i = 0; i < v.count_; ++i) strs->push_back(string("an array string"));
      v.strings_ = std::move(strs);
    } else if (v.elem_ == GgufType::Array) {
      auto items = std::make_shared<std::vector<GgufValue>>();
      items->reserve(v.count_);
      for (size_t i = 0; i < v.count_; ++i) items->push_back(value(GgufType::Array, depth + 1));
      v.items_ = std::move(items);
    } else {
      v.raw_bytes_ = v.count_ * min_size;
      more(v.raw_bytes_);
      v.data_ = data_ + pos_;
      if (v.elem_ == GgufType::Bool)
        for (size_t i = 0; i < v.count_; ++i)
          if (uint8_t(v.data_[i]) > 1) fail("bool array item " + std::to_string(i) + " is not 0 or 1");
      pos_ += v.raw_bytes_;
    }
    return v;
  }
};

// --- GgufFile -----------------------------------------------------------------------------------

GgufFile::GgufFile(GgufFile&&) noexcept = default;
GgufFile& GgufFile::operator=(GgufFile&&) noexcept = default;
GgufFile::~GgufFile() = default;

struct GgufFile::Streamed {
  std::shared_ptr<const ByteSource> source;
  std::vector<std::byte> header;  // the file's first bytes, the header within them
  std::mutex mutex;               // tensor_data()'s reads
  std::unordered_map<const GgufTensorInfo*, std::vector<std::byte>> tensors;
};

GgufFile GgufFile::open(const std::filesystem::path& path) {
  GgufFile f;
  f.map_ = MappedFile::open(path);
  f.bytes_ = f.map_->bytes();
  f.file_size_ = f.bytes_.size();
  f.name_ = path.string();
  GgufParser(f, f.file_size_).run();
  return f;
}

GgufFile GgufFile::parse(std::span<const std::byte> bytes, std::string name) {
  GgufFile f;
  f.bytes_ = bytes;
  f.file_size_ = bytes.size();
  f.name_ = std::move(name);
  GgufParser(f, f.file_size_).run();
  return f;
}

GgufFile GgufFile::read(std::shared_ptr<const ByteSource> source, std::string name, uint64_t max_header) {
  if (!source) throw Error(name + ": no source to read the GGUF file from");
  auto st = std::make_shared<Streamed>();
  st->source = std::move(source);
  const uint64_t size = st->source->size();
  // Most headers fit the first MiB; a large vocabulary (Gemma's 262k tokens) takes a few more reads.
  uint64_t want = std::min<uint64_t>({size, max_header, uint64_t(1) << 20});
  for (;;) {
    const size_t have = st->header.size();
    st->header.resize(size_t(want));  // want <= max_header: bounded before allocating
    try {
      st->source->read(have, std::span(st->header).subspan(have));
    } catch (const Error& e) {
      throw Error(name + ": reading its header: " + e.what());
    }
    GgufFile f;
    f.bytes_ = st->header;
    f.file_size_ = size;
    f.name_ = name;
    try {
      GgufParser(f, max_header).run();
    } catch (const GgufNeedMore& m) {
      // The parser checked the need against the header's limit (m.bytes <= min(size, max_header)).
      const uint64_t more = std::min<uint64_t>({size, max_header, std::max<uint64_t>(m.bytes, 2 * want)});
      if (more <= want)
        throw Error(name + ": a GGUF header needs more than the " + std::to_string(want) + " bytes allowed");
      want = more;
      continue;
    }
    f.streamed_ = std::move(st);
    return f;
  }
}

const std::shared_ptr<const ByteSource>& GgufFile::source() const {
  static const std::shared_ptr<const ByteSource> none;
  return streamed_ ? streamed_->source : none;
}

const GgufValue* GgufFile::find(std::string_view key) const {
  if (!index_) return nullptr;
  auto it = index_->keys.find(key);
  return it == index_->keys.end() ? nullptr : &kvs_[it->second].value;
}

const GgufTensorInfo* GgufFile::find_tensor(std::string_view name) const {
  if (!index_) return nullptr;
  auto it = index_->tensors.find(name);
  return it == index_->tensors.end() ? nullptr : &tensors_[it->second];
}

std::span<const std::byte> GgufFile::tensor_data(const GgufTensorInfo& t) const {
  if (t.bytes == 0) return {};
  if (!streamed_) return bytes_.subspan(size_t(data_offset_ + t.offset), size_t(t.bytes));
  if (t.bytes > kMaxCachedTensorBytes)
    throw Error(name_ + ": tensor '" + std::string(t.name) + "' (" + std::to_string(t.bytes) +
                " bytes) is read through ModelFile::load, not kept with the header");
  std::lock_guard lock(streamed_->mutex);
  auto [it, added] = streamed_->tensors.try_emplace(&t);
  if (added) {
    it->second.resize(size_t(t.bytes));
    try {
      streamed_->source->read(data_offset_ + t.offset, it->second);
    } catch (...) {
      streamed_->tensors.erase(it);
      throw;
    }
  }
  return it->second;
}

namespace {
[[noreturn]] void bad_type(const std::string& file, std::string_view key, const GgufValue& v, const char* want) {
  throw Error(file + ": metadata key '" + std::string(key) + "' is " + std::string(to_string(v.type())) + " " +
              v.describe(4) + ", expected " + want);
}
}  // namespace

std::string GgufFile::get_string(std::string_view key, std::string_view def) const {
  const GgufValue* v = find(key);
  if (!v) return std::string(def);
  auto s = v->to_string();
  if (!s) bad_type(name_, key, *v, "a string");
  return std::string(*s);
}

uint32_t GgufFile::get_u32(std::string_view key, uint32_t def) const {
  const GgufValue* v = find(key);
  if (!v) return def;
  auto u = v->to_u64();
  if (!u || *u > UINT32_MAX) bad_type(name_, key, *v, "a u32");
  return uint32_t(*u);
}

int32_t GgufFile::get_i32(std::string_view key, int32_t def) const {
  const GgufValue* v = find(key);
  if (!v) return def;
  auto i = v->to_i64();
  if (!i || *i < INT32_MIN || *i > INT32_MAX) bad_type(name_, key, *v, "an i32");
  return int32_t(*i);
}

uint64_t GgufFile::get_u64(std::string_view key, uint64_t def) const {
  const GgufValue* v = find(key);
  if (!v) return def;
  auto u = v->to_u64();
  if (!u) bad_type(name_, key, *v, "a u64");
  return *u;
}

float GgufFile::get_f32(std::string_view key, float def) const {
  const GgufValue* v = find(key);
  if (!v) return def;
  auto d = v->to_f64();
  if (!d) bad_type(name_, key, *v, "a number");
  return float(*d);
}

bool GgufFile::get_bool(std::string_view key, bool def) const {
  const GgufValue* v = find(key);
  if (!v) return def;
  if (auto b = v->to_bool()) return *b;
  auto u = v->to_u64();
  if (!u || *u > 1) bad_type(name_, key, *v, "a bool");
  return *u != 0;
}

std::vector<std::string> GgufFile::get_string_array(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return {};
  if (!v->is_array() || v->array_type() != GgufType::String) bad_type(name_, key, *v, "an array of strings");
  auto s = v->strings();
  return {s.begin(), s.end()};
}

std::vector<float> GgufFile::get_f32_array(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return {};
  std::vector<float> out;
  if (v->is_array() && v->array_type() == GgufType::F32) {
    out.resize(v->size());
    if (!out.empty()) std::memcpy(out.data(), v->raw().data(), out.size() * 4);
    return out;
  }
  if (!v->is_array()) bad_type(name_, key, *v, "an array of numbers");
  GgufType et = v->array_type();
  if (et == GgufType::String || et == GgufType::Array || et == GgufType::Bool)
    bad_type(name_, key, *v, "an array of numbers");
  out.reserve(v->size());
  for (size_t i = 0; i < v->size(); ++i) out.push_back(float(*v->at(i).to_f64()));
  return out;
}

std::vector<int32_t> GgufFile::get_i32_array(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return {};
  if (!v->is_array()) bad_type(name_, key, *v, "an array of integers");
  std::vector<int32_t> out;
  if (v->array_type() == GgufType::I32) {
    out.resize(v->size());
    if (!out.empty()) std::memcpy(out.data(), v->raw().data(), out.size() * 4);
    return out;
  }
  GgufType et = v->array_type();
  if (et == GgufType::String || et == GgufType::Array || et == GgufType::Bool || et == GgufType::F32 ||
      et == GgufType::F64)
    bad_type(name_, key, *v, "an array of integers");
  out.reserve(v->size());
  for (size_t i = 0; i < v->size(); ++i) {
    auto x = v->at(i).to_i64();
    if (!x || *x < INT32_MIN || *x > INT32_MAX)
      throw Error(name_ + ": metadata key '" + std::string(key) + "': item " + std::to_string(i) + " (" +
                  v->at(i).describe() + ") does not fit in an i32");
    out.push_back(int32_t(*x));
  }
  return out;
}

}  // namespace wgc::llm
