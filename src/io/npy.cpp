#include "io/npy.h"

#include "util/error.h"

#include <cstring>
#include <fstream>
#include <limits>

namespace wgc::npy {

namespace {

const char kMagic[] = "\x93NUMPY";

struct Kind {
  char type = 0;  // 'f', 'i', 'u', 'b'
  size_t size = 0;
};

Kind parse_dtype(const std::string& d, const std::string& source) {
  if (d.size() < 3 || (d[0] != '<' && d[0] != '|' && d[0] != '='))
    throw Error("wgc: " + source + ": dtype '" + d + "' is not supported (little-endian numbers only)");
  Kind k{d[1], 0};
  for (size_t i = 2; i < d.size(); ++i) {
    if (d[i] < '0' || d[i] > '9') throw Error("wgc: " + source + ": dtype '" + d + "' is not supported");
    k.size = k.size * 10 + size_t(d[i] - '0');
  }
  bool ok = (k.type == 'f' && (k.size == 4 || k.size == 8)) ||
            ((k.type == 'i' || k.type == 'u') && (k.size == 1 || k.size == 2 || k.size == 4 || k.size == 8)) ||
            (k.type == 'b' && k.size == 1);
  if (!ok) throw Error("wgc: " + source + ": dtype '" + d + "' is not supported");
  if (k.size > 1 && d[0] == '|') throw Error("wgc: " + source + ": dtype '" + d + "' has no byte order");
  return k;
}

template <class T>
T load(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// The element at index i as double (integers up to 2^53 exactly; beyond that rounded).
double element(const Array& a, Kind k, size_t i) {
  const std::byte* p = a.data.data() + i * k.size;
  switch (k.type) {
    case 'f': return k.size == 4 ? double(load<float>(p)) : load<double>(p);
    case 'b':
    case 'u':
      switch (k.size) {
        case 1: return double(load<uint8_t>(p));
        case 2: return double(load<uint16_t>(p));
        case 4: return double(load<uint32_t>(p));
        default: return double(load<uint64_t>(p));
      }
    default:
      switch (k.size) {
        case 1: return double(load<int8_t>(p));
        case 2: return double(load<int16_t>(p));
        case 4: return double(load<int32_t>(p));
        default: return double(load<int64_t>(p));
      }
  }
}

void skip_ws(std::string_view s, size_t& i) {
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n')) ++i;
}

// The value text after 'key': in the header dict.
size_t find_key(std::string_view h, std::string_view key, const std::string& source) {
  for (char q : {'\'', '"'}) {
    std::string k;
    k.reserve(key.size() + 2);
    k.push_back(q);
    k.append(key);
    k.push_back(q);
    size_t at = h.find(k);
    if (at == std::string_view::npos) continue;
    size_t i = at + k.size();
    skip_ws(h, i);
    if (i < h.size() && h[i] == ':') {
      ++i;
      skip_ws(h, i);
      return i;
    }
  }
  throw Error("wgc: " + source + ": header has no '" + std::string(key) + "': " + std::string(h));
}

}  // namespace

int64_t Array::numel() const {
  int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

size_t Array::item_size() const { return parse_dtype(dtype, "npy").size; }

std::vector<float> Array::to_f32() const {
  Kind k = parse_dtype(dtype, "npy");
  if (fortran_order && shape.size() > 1) throw Error("wgc: npy: Fortran-order arrays are not supported");
  std::vector<float> out(static_cast<size_t>(numel()));
  if (k.type == 'f' && k.size == 4) {
    std::memcpy(out.data(), data.data(), out.size() * 4);
    return out;
  }
  for (size_t i = 0; i < out.size(); ++i) out[i] = float(element(*this, k, i));
  return out;
}

std::vector<int32_t> Array::to_i32() const {
  Kind k = parse_dtype(dtype, "npy");
  if (k.type == 'f') throw Error("wgc: npy: dtype " + dtype + " is not an integer type");
  if (fortran_order && shape.size() > 1) throw Error("wgc: npy: Fortran-order arrays are not supported");
  std::vector<int32_t> out(static_cast<size_t>(numel()));
  for (size_t i = 0; i < out.size(); ++i) {
    double v = element(*this, k, i);
    if (v < double(std::numeric_limits<int32_t>::min()) || v > double(std::numeric_limits<int32_t>::max()))
      throw Error("wgc: npy: element " + std::to_string(i) + " does not fit in int32");
    out[i] = int32_t(v);
  }
  return out;
}

std::string header(const std::string& dtype, std::span<const int64_t> shape) {
  std::string dict = "{'descr': '" + dtype + "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < shape.size(); ++i) {
    dict += std::to_string(shape[i]);
    if (shape.size() == 1 || i + 1 < shape.size()) dict += ",";
    if (i + 1 < shape.size()) dict += " ";
  }
  dict += "), }";
  size_t total = 10 + dict.size() + 1;  // magic(6) version(2) length(2), dict, '\n'
  size_t padded = (total + 63) / 64 * 64;
  dict.append(padded - total, ' ');
  dict += '\n';
  if (dict.size() > 65535) throw Error("wgc: npy: header too long for format 1.0");
  std::string out(kMagic, 6);
  out += char(1);
  out += char(0);
  out += char(dict.size() & 0xff);
  out += char(dict.size() >> 8);
  return out + dict;
}

void write(const std::filesystem::path& path, const std::string& dtype, std::span<const int64_t> shape,
           std::span<const std::byte> data, Overwrite overwrite) {
  Kind k = parse_dtype(dtype, path.string());
  int64_t n = 1;
  for (auto d : shape) {
    if (d < 0) throw Error("wgc: " + path.string() + ": negative dimension");
    n *= d;
  }
  if (uint64_t(n) * k.size != data.size())
    throw Error("wgc: " + path.string() + ": " + std::to_string(data.size()) + " bytes of data for shape of " +
                std::to_string(n) + " elements of " + dtype);
  std::string h = header(dtype, shape);
  OutputFile f(path, overwrite);
  f.write(h);
  f.write(data);
  f.commit();
}

void write(const std::filesystem::path& path, std::span<const float> data, std::vector<int64_t> shape,
           Overwrite overwrite) {
  write(path, "<f4", shape, std::as_bytes(data), overwrite);
}

void write(const std::filesystem::path& path, std::span<const int32_t> data, std::vector<int64_t> shape,
           Overwrite overwrite) {
  write(path, "<i4", shape, std::as_bytes(data), overwrite);
}

Array parse(std::span<const std::byte> bytes, const std::string& source) {
  auto at = [&](size_t i) { return uint8_t(bytes[i]); };
  if (bytes.size() < 10 || std::memcmp(bytes.data(), kMagic, 6) != 0)
    throw Error("wgc: " + source + ": not a .npy file (no \\x93NUMPY magic)");
  uint8_t major = at(6);
  size_t hlen = 0, start = 0;
  if (major == 1) {
    hlen = size_t(at(8)) | size_t(at(9)) << 8;
    start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) throw Error("wgc: " + source + ": truncated header");
    hlen = size_t(at(8)) | size_t(at(9)) << 8 | size_t(at(10)) << 16 | size_t(at(11)) << 24;
    start = 12;
  } else {
    throw Error("wgc: " + source + ": .npy format version " + std::to_string(major) + " is not supported");
  }
  if (start + hlen > bytes.size()) throw Error("wgc: " + source + ": truncated header");
  std::string_view h(reinterpret_cast<const char*>(bytes.data()) + start, hlen);
  // The header is one Python dict literal (padded with spaces, ended by a newline).
  size_t first = h.find_first_not_of(" \t\n"), last = h.find_last_not_of(" \t\n");
  if (first == std::string_view::npos || h[first] != '{' || h[last] != '}')
    throw Error("wgc: " + source + ": the header is not a dict ({...}): " + std::string(h.substr(0, 200)));

  Array a;
  size_t i = find_key(h, "descr", source);
  if (i >= h.size() || (h[i] != '\'' && h[i] != '"')) throw Error("wgc: " + source + ": bad descr in header");
  size_t end = h.find(h[i], i + 1);
  if (end == std::string_view::npos) throw Error("wgc: " + source + ": bad descr in header");
  a.dtype = std::string(h.substr(i + 1, end - i - 1));
  Kind k = parse_dtype(a.dtype, source);

  i = find_key(h, "fortran_order", source);
  if (h.substr(i, 4) == "True")
    a.fortran_order = true;
  else if (h.substr(i, 5) != "False")
    throw Error("wgc: " + source + ": bad fortran_order in header");

  i = find_key(h, "shape", source);
  if (i >= h.size() || h[i] != '(') throw Error("wgc: " + source + ": bad shape in header");
  ++i;
  for (;;) {
    skip_ws(h, i);
    if (i < h.size() && h[i] == ')') break;
    if (i >= h.size() || h[i] < '0' || h[i] > '9') throw Error("wgc: " + source + ": bad shape in header");
    int64_t d = 0;
    while (i < h.size() && h[i] >= '0' && h[i] <= '9') {
      if (d > (int64_t(1) << 50)) throw Error("wgc: " + source + ": dimension too large");
      d = d * 10 + (h[i++] - '0');
    }
    a.shape.push_back(d);
    skip_ws(h, i);
    if (i < h.size() && h[i] == ',') ++i;
  }

  uint64_t n = 1;
  for (auto d : a.shape) {
    if (d != 0 && n > (uint64_t(1) << 50) / uint64_t(d)) throw Error("wgc: " + source + ": array too large");
    n *= uint64_t(d);
  }
  size_t data_at = start + hlen;
  if (n * k.size != bytes.size() - data_at)
    throw Error("wgc: " + source + ": shape and dtype need " + std::to_string(n * k.size) +
                " bytes of data, the file has " + std::to_string(bytes.size() - data_at));
  a.data.assign(bytes.begin() + std::ptrdiff_t(data_at), bytes.end());
  return a;
}

Array read(const std::filesystem::path& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error("wgc: cannot open " + path.string());
  std::vector<char> buf((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  return parse(std::as_bytes(std::span(buf)), path.string());
}

}  // namespace wgc::npy
