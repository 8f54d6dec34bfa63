#include "llm/formats/gguf_writer.h"

#include "util/error.h"
#include "util/progress.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>

namespace wgc::llm {

namespace {

void put_bytes(std::vector<std::byte>& out, const void* p, size_t n) {
  if (n == 0) return;
  size_t at = out.size();
  out.resize(at + n);
  std::memcpy(out.data() + at, p, n);
}
template <class T>
void put(std::vector<std::byte>& out, T v) {
  put_bytes(out, &v, sizeof v);  // little-endian hosts only (x86-64, arm64), as the reader
}
uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

std::string errno_text() { return std::strerror(errno); }

}  // namespace

void GgufWriter::encode_u32(std::vector<std::byte>& out, uint32_t v) { put(out, v); }
void GgufWriter::encode_u64(std::vector<std::byte>& out, uint64_t v) { put(out, v); }
void GgufWriter::encode_string(std::vector<std::byte>& out, std::string_view s) {
  put<uint64_t>(out, s.size());
  put_bytes(out, s.data(), s.size());
}

// --- GgufMetaValue ------------------------------------------------------------------------------

template <class T>
GgufMetaValue GgufMetaValue::scalar(GgufType t, T v) {
  GgufMetaValue m;
  m.type_ = t;
  put(m.bytes_, v);
  return m;
}

template <class T>
GgufMetaValue GgufMetaValue::numbers(GgufType elem, std::span<const T> v) {
  GgufMetaValue m;
  m.type_ = GgufType::Array;
  put<uint32_t>(m.bytes_, uint32_t(elem));
  put<uint64_t>(m.bytes_, v.size());
  put_bytes(m.bytes_, v.data(), v.size_bytes());
  return m;
}

GgufMetaValue GgufMetaValue::u8(uint8_t v) { return scalar(GgufType::U8, v); }
GgufMetaValue GgufMetaValue::i8(int8_t v) { return scalar(GgufType::I8, v); }
GgufMetaValue GgufMetaValue::u16(uint16_t v) { return scalar(GgufType::U16, v); }
GgufMetaValue GgufMetaValue::i16(int16_t v) { return scalar(GgufType::I16, v); }
GgufMetaValue GgufMetaValue::u32(uint32_t v) { return scalar(GgufType::U32, v); }
GgufMetaValue GgufMetaValue::i32(int32_t v) { return scalar(GgufType::I32, v); }
GgufMetaValue GgufMetaValue::u64(uint64_t v) { return scalar(GgufType::U64, v); }
GgufMetaValue GgufMetaValue::i64(int64_t v) { return scalar(GgufType::I64, v); }
GgufMetaValue GgufMetaValue::f32(float v) { return scalar(GgufType::F32, v); }
GgufMetaValue GgufMetaValue::f64(double v) { return scalar(GgufType::F64, v); }
GgufMetaValue GgufMetaValue::boolean(bool v) { return scalar(GgufType::Bool, uint8_t(v ? 1 : 0)); }
GgufMetaValue GgufMetaValue::string(std::string_view v) {
  GgufMetaValue m;
  m.type_ = GgufType::String;
  GgufWriter::encode_string(m.bytes_, v);
  return m;
}

GgufMetaValue GgufMetaValue::array(std::span<const uint8_t> v) { return numbers(GgufType::U8, v); }
GgufMetaValue GgufMetaValue::array(std::span<const int8_t> v) { return numbers(GgufType::I8, v); }
GgufMetaValue GgufMetaValue::array(std::span<const uint16_t> v) { return numbers(GgufType::U16, v); }
GgufMetaValue GgufMetaValue::array(std::span<const int16_t> v) { return numbers(GgufType::I16, v); }
GgufMetaValue GgufMetaValue::array(std::span<const uint32_t> v) { return numbers(GgufType::U32, v); }
GgufMetaValue GgufMetaValue::array(std::span<const int32_t> v) { return numbers(GgufType::I32, v); }
GgufMetaValue GgufMetaValue::array(std::span<const uint64_t> v) { return numbers(GgufType::U64, v); }
GgufMetaValue GgufMetaValue::array(std::span<const int64_t> v) { return numbers(GgufType::I64, v); }
GgufMetaValue GgufMetaValue::array(std::span<const float> v) { return numbers(GgufType::F32, v); }
GgufMetaValue GgufMetaValue::array(std::span<const double> v) { return numbers(GgufType::F64, v); }

GgufMetaValue GgufMetaValue::bool_array(const std::vector<bool>& v) {
  std::vector<uint8_t> b(v.size());
  for (size_t i = 0; i < v.size(); ++i) b[i] = v[i] ? 1 : 0;
  GgufMetaValue m = numbers(GgufType::Bool, std::span<const uint8_t>(b));
  return m;
}

GgufMetaValue GgufMetaValue::strings(std::span<const std::string> v) {
  GgufMetaValue m;
  m.type_ = GgufType::Array;
  size_t total = 12;
  for (const auto& s : v) total += 8 + s.size();
  m.bytes_.reserve(total);
  put<uint32_t>(m.bytes_, uint32_t(GgufType::String));
  put<uint64_t>(m.bytes_, v.size());
  for (const auto& s : v) GgufWriter::encode_string(m.bytes_, s);
  return m;
}

GgufMetaValue GgufMetaValue::array(GgufType elem, std::span<const GgufMetaValue> items) {
  GgufMetaValue m;
  m.type_ = GgufType::Array;
  put<uint32_t>(m.bytes_, uint32_t(elem));
  put<uint64_t>(m.bytes_, items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i].type_ != elem)
      throw Error("GGUF writer: array of " + std::string(to_string(elem)) + " given item " + std::to_string(i) +
                  " of type " + std::string(to_string(items[i].type_)));
    m.bytes_.insert(m.bytes_.end(), items[i].bytes_.begin(), items[i].bytes_.end());
  }
  return m;
}

namespace {

// `v` as it follows its type id in a file (arrays: element type, count, elements).
void encode_value(std::vector<std::byte>& out, const GgufValue& v) {
  switch (v.type()) {
    case GgufType::U8: put(out, uint8_t(*v.to_u64())); return;
    case GgufType::I8: put(out, int8_t(*v.to_i64())); return;
    case GgufType::U16: put(out, uint16_t(*v.to_u64())); return;
    case GgufType::I16: put(out, int16_t(*v.to_i64())); return;
    case GgufType::U32: put(out, uint32_t(*v.to_u64())); return;
    case GgufType::I32: put(out, int32_t(*v.to_i64())); return;
    case GgufType::U64: put(out, uint64_t(*v.to_u64())); return;
    case GgufType::I64: put(out, int64_t(*v.to_i64())); return;
    case GgufType::F32: put(out, float(*v.to_f64())); return;
    case GgufType::F64: put(out, double(*v.to_f64())); return;
    case GgufType::Bool: put(out, uint8_t(*v.to_bool() ? 1 : 0)); return;
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
  throw Error("GGUF writer: a value of unknown type " + std::to_string(int(v.type())));
}

}  // namespace

GgufMetaValue GgufMetaValue::copy_of(const GgufValue& v) {
  GgufMetaValue m;
  m.type_ = v.type();
  encode_value(m.bytes_, v);
  return m;
}

// --- GgufTensorLayout ---------------------------------------------------------------------------

int64_t GgufTensorLayout::numel() const {
  int64_t n = 1;
  for (int64_t d : ne) n *= d;
  return n;
}
int64_t GgufTensorLayout::rows() const { return row_length() ? numel() / row_length() : 0; }
uint64_t GgufTensorLayout::row_bytes() const { return llm::row_bytes(type, uint64_t(row_length())).value_or(0); }

// --- GgufWriter ---------------------------------------------------------------------------------

GgufWriter::GgufWriter(uint32_t version, uint32_t alignment) : version_(version), alignment_(alignment) {
  if (alignment < 8 || (alignment & (alignment - 1)))
    throw Error("GGUF writer: alignment " + std::to_string(alignment) + " is not a power of two of at least 8");
  if (version != 2 && version != 3) throw Error("GGUF writer: version " + std::to_string(version) + " (2 or 3)");
  if (alignment != 32) add_u32("general.alignment", alignment);
}

void GgufWriter::add(std::string_view key, GgufMetaValue v) {
  if (key.empty()) throw Error("GGUF writer: empty metadata key");
  if (std::find(keys_.begin(), keys_.end(), key) != keys_.end())
    throw Error("GGUF writer: metadata key '" + std::string(key) + "' added twice");
  keys_.emplace_back(key);
  GgufWriter::encode_string(kv_bytes_, key);
  put<uint32_t>(kv_bytes_, uint32_t(v.type()));
  kv_bytes_.insert(kv_bytes_.end(), v.encoded().begin(), v.encoded().end());
  ++n_kv_;
}

size_t GgufWriter::add_tensor(std::string_view name, TensorType type, std::vector<int64_t> ne) {
  return add_tensor(name, type, std::move(ne), {});
}

size_t GgufWriter::add_tensor(std::string_view name, TensorType type, std::vector<int64_t> ne,
                              std::span<const std::byte> data) {
  auto bad = [&](const std::string& what) { return Error("GGUF writer: tensor '" + std::string(name) + "': " + what); };
  if (name.empty()) throw bad("empty name");
  for (const auto& t : tensors_)
    if (t.name == name) throw bad("added twice");
  if (ne.empty() || ne.size() > 4) throw bad(std::to_string(ne.size()) + " dimensions (1 to 4)");
  for (int64_t d : ne)
    if (d <= 0) throw bad("dimension " + std::to_string(d));
  GgufTensorLayout t;
  t.name = std::string(name);
  t.type = type;
  t.ne = std::move(ne);
  auto bytes = tensor_bytes(type, t.ne, t.ne[0]);
  if (!bytes)
    throw bad("rows of " + std::to_string(t.ne[0]) + " elements are not whole " + std::string(to_string(type)) +
              " blocks (or the size overflows)");
  t.bytes = *bytes;
  if (!data.empty() && data.size() != t.bytes)
    throw bad(std::to_string(data.size()) + " bytes given, the shape needs " + std::to_string(t.bytes));
  t.offset = align_up(data_end_, alignment_);
  data_end_ = t.offset + t.bytes;
  tensors_.push_back(std::move(t));
  given_.emplace_back(data.begin(), data.end());
  return tensors_.size() - 1;
}

uint64_t GgufWriter::data_offset() const {
  uint64_t n = 4 + 4 + 8 + 8 + kv_bytes_.size();
  for (const auto& t : tensors_) n += 8 + t.name.size() + 4 + 8 * t.ne.size() + 4 + 8;
  return align_up(n, alignment_);
}

uint64_t GgufWriter::data_bytes() const { return align_up(data_end_, alignment_); }
uint64_t GgufWriter::file_bytes() const { return data_offset() + data_bytes(); }

std::vector<std::byte> GgufWriter::header() const {
  std::vector<std::byte> h;
  h.reserve(data_offset());
  put_bytes(h, "GGUF", 4);
  put<uint32_t>(h, version_);
  put<uint64_t>(h, tensors_.size());
  put<uint64_t>(h, n_kv_);
  h.insert(h.end(), kv_bytes_.begin(), kv_bytes_.end());
  for (const auto& t : tensors_) {
    GgufWriter::encode_string(h, t.name);
    put<uint32_t>(h, uint32_t(t.ne.size()));
    for (int64_t d : t.ne) put<uint64_t>(h, uint64_t(d));
    put<uint32_t>(h, uint32_t(t.type));
    put<uint64_t>(h, t.offset);
  }
  h.resize(data_offset(), std::byte{0});
  return h;
}

void GgufWriter::fill_chunk(const GgufTensorFill& fill, size_t index, int64_t row0, int64_t rows,
                            std::span<std::byte> out) const {
  const auto& g = given_[index];
  if (!g.empty()) {
    uint64_t rb = tensors_[index].row_bytes();
    std::memcpy(out.data(), g.data() + uint64_t(row0) * rb, out.size());
    return;
  }
  if (!fill) throw Error("GGUF writer: tensor '" + tensors_[index].name + "' has no data and no fill function");
  fill(index, row0, rows, out);
}

std::vector<std::byte> GgufWriter::to_bytes(const GgufTensorFill& fill) const {
  std::vector<std::byte> out = header();
  uint64_t base = out.size();
  out.resize(file_bytes(), std::byte{0});
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const auto& t = tensors_[i];
    fill_chunk(fill, i, 0, t.rows(), std::span(out).subspan(base + t.offset, t.bytes));
  }
  return out;
}

namespace {

struct Chunk {
  size_t tensor;
  int64_t row0, rows;
};

void pwrite_all(int fd, const std::byte* p, size_t n, uint64_t off, const std::string& file) {
  while (n > 0) {
    ssize_t w = ::pwrite(fd, p, n, off_t(off));
    if (w < 0) {
      if (errno == EINTR) continue;
      throw Error(file + ": write of " + std::to_string(n) + " bytes at offset " + std::to_string(off) +
                  " failed: " + errno_text());
    }
    p += w;
    n -= size_t(w);
    off += uint64_t(w);
  }
}

}  // namespace

void GgufWriter::write(const std::filesystem::path& path, const GgufTensorFill& fill,
                       const GgufWriteOptions& opt) const {
  const std::string file = path.string();
  OutputFile out(path, opt.overwrite);
  const int fd = out.fd();
  const std::string part_name = out.temp_path().string();

  const uint64_t total = file_bytes();
  // Reserve the space now: a full disk fails here, not 15 GB later. Some file systems cannot
  // (Linux fallocate, not posix_fallocate, which would emulate it by writing every block).
  if (::fallocate(fd, 0, 0, off_t(total)) != 0) {
    if (errno == ENOSPC) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.2f GB", double(total) / 1e9);
      throw Error(file + ": not enough free disk space for the " + buf + " file");
    }
    if (::ftruncate(fd, off_t(total)) != 0) throw Error(part_name + ": cannot set the size: " + errno_text());
  }
  std::vector<std::byte> h = header();
  pwrite_all(fd, h.data(), h.size(), 0, part_name);
  const uint64_t base = h.size();

  std::vector<Chunk> chunks;
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const auto& t = tensors_[i];
    int64_t per = std::max<int64_t>(1, int64_t(opt.chunk_bytes / std::max<uint64_t>(1, t.row_bytes())));
    for (int64_t r = 0; r < t.rows(); r += per) chunks.push_back({i, r, std::min(per, t.rows() - r)});
  }

  std::string label = opt.progress_label.empty() ? "writing " + path.filename().string() : opt.progress_label;
  Progress bar(label, total, Progress::Unit::Bytes);
  if (opt.progress) bar.add(base);
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr error;
  std::mutex error_mu;
  auto worker = [&] {
    std::vector<std::byte> buf;
    try {
      for (;;) {
        size_t c = next.fetch_add(1);
        if (c >= chunks.size() || failed.load()) return;
        const Chunk& ch = chunks[c];
        const auto& t = tensors_[ch.tensor];
        size_t n = size_t(uint64_t(ch.rows) * t.row_bytes());
        buf.resize(n);
        fill_chunk(fill, ch.tensor, ch.row0, ch.rows, buf);
        pwrite_all(fd, buf.data(), n, base + t.offset + uint64_t(ch.row0) * t.row_bytes(), part_name);
        if (opt.progress) bar.add(n);
      }
    } catch (...) {
      std::lock_guard lock(error_mu);
      if (!error) error = std::current_exception();
      failed = true;
    }
  };
  int threads = opt.threads > 0 ? opt.threads : int(std::max(1u, std::thread::hardware_concurrency()));
  threads = int(std::min<size_t>(size_t(threads), std::max<size_t>(1, chunks.size())));
  std::vector<std::thread> pool;
  for (int i = 1; i < threads; ++i) pool.emplace_back(worker);
  worker();
  for (auto& th : pool) th.join();
  if (error) std::rethrow_exception(error);
  bar.finish();

  out.commit();
}

}  // namespace wgc::llm
