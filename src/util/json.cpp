#include "util/json.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <tuple>

namespace wgc::json {

std::string_view to_string(Type t) {
  switch (t) {
    case Type::Null: return "null";
    case Type::Bool: return "bool";
    case Type::Number: return "number";
    case Type::String: return "string";
    case Type::Array: return "array";
    case Type::Object: return "object";
  }
  return "?";
}

// --- Value --------------------------------------------------------------------------------------

Value::Value(uint64_t v) {
  if (v <= uint64_t(std::numeric_limits<int64_t>::max()))
    v_ = Number{double(v), int64_t(v), true};
  else
    v_ = Number{double(v), 0, false};
}

namespace {
[[noreturn]] void wrong_type(Type want, Type got) {
  throw Error("json: expected " + std::string(want == Type::Array || want == Type::Object ? "an " : "a ") +
              std::string(to_string(want)) + ", got " + (got == Type::Array || got == Type::Object ? "an " : "a ") +
              std::string(to_string(got)));
}
}  // namespace

bool Value::as_bool() const {
  if (!is_bool()) wrong_type(Type::Bool, type());
  return std::get<bool>(v_);
}

double Value::as_double() const {
  if (!is_number()) wrong_type(Type::Number, type());
  return std::get<Number>(v_).d;
}

int64_t Value::as_int() const {
  if (!is_number()) wrong_type(Type::Number, type());
  const Number& n = std::get<Number>(v_);
  if (n.is_int) return n.i;
  // 2^63 is exactly representable; anything below it in magnitude with no fraction converts.
  if (std::trunc(n.d) == n.d && n.d >= -9223372036854775808.0 && n.d < 9223372036854775808.0) return int64_t(n.d);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", n.d);
  throw Error(std::string("json: expected an integer, got ") + buf);
}

const std::string& Value::as_string() const {
  if (!is_string()) wrong_type(Type::String, type());
  return std::get<std::string>(v_);
}

const Array& Value::items() const {
  if (!is_array()) wrong_type(Type::Array, type());
  return std::get<Array>(v_);
}

Array& Value::items() {
  if (!is_array()) wrong_type(Type::Array, type());
  return std::get<Array>(v_);
}

const Object& Value::members() const {
  if (!is_object()) wrong_type(Type::Object, type());
  return std::get<Object>(v_);
}

Object& Value::members() {
  if (!is_object()) wrong_type(Type::Object, type());
  return std::get<Object>(v_);
}

size_t Value::size() const {
  if (is_array()) return std::get<Array>(v_).size();
  if (is_object()) return std::get<Object>(v_).size();
  return 0;
}

const Value* Value::find(std::string_view key) const {
  if (!is_object()) return nullptr;
  const Object& o = std::get<Object>(v_);
  for (size_t i = o.size(); i-- > 0;)  // last duplicate wins
    if (o[i].first == key) return &o[i].second;
  return nullptr;
}

Value* Value::find(std::string_view key) { return const_cast<Value*>(std::as_const(*this).find(key)); }

const Value& Value::operator[](std::string_view key) const {
  if (!is_object()) wrong_type(Type::Object, type());
  const Value* v = find(key);
  if (!v) throw Error("json: no key \"" + std::string(key) + "\"");
  return *v;
}

const Value& Value::operator[](size_t i) const {
  const Array& a = items();
  if (i >= a.size())
    throw Error("json: index " + std::to_string(i) + " out of range (array of " + std::to_string(a.size()) + ")");
  return a[i];
}

std::string Value::get_string(std::string_view key, std::string_view def) const {
  const Value* v = find(key);
  return v && v->is_string() ? v->as_string() : std::string(def);
}

double Value::get_double(std::string_view key, double def) const {
  const Value* v = find(key);
  return v && v->is_number() ? v->as_double() : def;
}

int64_t Value::get_int(std::string_view key, int64_t def) const {
  const Value* v = find(key);
  if (!v || !v->is_number()) return def;
  const Number& n = std::get<Number>(v->v_);
  if (n.is_int) return n.i;
  if (std::trunc(n.d) == n.d && n.d >= -9223372036854775808.0 && n.d < 9223372036854775808.0) return int64_t(n.d);
  return def;
}

bool Value::get_bool(std::string_view key, bool def) const {
  const Value* v = find(key);
  return v && v->is_bool() ? v->as_bool() : def;
}

Value& Value::set(std::string key, Value v) {
  Object& o = members();
  for (auto& m : o)
    if (m.first == key) {
      m.second = std::move(v);
      return m.second;
    }
  o.emplace_back(std::move(key), std::move(v));
  return o.back().second;
}

Value& Value::push_back(Value v) {
  Array& a = items();
  a.push_back(std::move(v));
  return a.back();
}

// --- writing ------------------------------------------------------------------------------------

namespace {

// Length of the valid UTF-8 sequence at s[i], or 0 if it is not valid.
size_t utf8_len(std::string_view s, size_t i) {
  auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned c = b(i);
  if (c < 0x80) return 1;
  size_t n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 0;
  if (n == 0 || c > 0xF4 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k)
    if ((b(i + k) & 0xC0) != 0x80) return 0;
  uint32_t cp = n == 2 ? (c & 0x1F) : n == 3 ? (c & 0x0F) : (c & 0x07);
  for (size_t k = 1; k < n; ++k) cp = (cp << 6) | (b(i + k) & 0x3F);
  if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF))) return 0;
  if (cp >= 0xD800 && cp <= 0xDFFF) return 0;
  return n;
}

void dump_number(std::string& out, const Value::Number& n) {
  char buf[40];
  if (n.is_int) {
    auto r = std::to_chars(buf, buf + sizeof buf, n.i);
    out.append(buf, r.ptr);
    return;
  }
  if (!std::isfinite(n.d)) {  // JSON has no NaN/Inf
    out += "null";
    return;
  }
  auto r = std::to_chars(buf, buf + sizeof buf, n.d);  // shortest round-trip form
  out.append(buf, r.ptr);
}

void newline(std::string& out, int indent, int depth) {
  if (indent < 0) return;
  out += '\n';
  out.append(size_t(indent) * size_t(depth), ' ');
}

}  // namespace

void write_string(std::string& out, std::string_view s) {
  static const char* hex = "0123456789abcdef";
  out += '"';
  size_t i = 0;
  while (i < s.size()) {
    size_t start = i;
    while (i < s.size()) {
      unsigned char c = static_cast<unsigned char>(s[i]);
      if (c < 0x20 || c == '"' || c == '\\' || c >= 0x80) break;
      ++i;
    }
    out.append(s.data() + start, i - start);
    if (i >= s.size()) break;
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      size_t n = utf8_len(s, i);
      if (n) {
        out.append(s.data() + i, n);
        i += n;
      } else {
        out += "\xEF\xBF\xBD";  // U+FFFD
        ++i;
      }
      continue;
    }
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        out += "\\u00";
        out += hex[c >> 4];
        out += hex[c & 15];
    }
    ++i;
  }
  out += '"';
}

std::string quote(std::string_view s) {
  std::string out;
  write_string(out, s);
  return out;
}

namespace {
void dump_value(std::string& out, const Value& v, int indent, int depth) {
  switch (v.type()) {
    case Type::Null: out += "null"; break;
    case Type::Bool: out += v.as_bool() ? "true" : "false"; break;
    case Type::Number: {
      Value::Number n;
      n.d = v.as_double();
      n.is_int = v.is_int();
      if (n.is_int) n.i = v.as_int();
      dump_number(out, n);
      break;
    }
    case Type::String: write_string(out, v.as_string()); break;
    case Type::Array: {
      const Array& a = v.items();
      out += '[';
      for (size_t i = 0; i < a.size(); ++i) {
        if (i) out += ',';
        newline(out, indent, depth + 1);
        dump_value(out, a[i], indent, depth + 1);
      }
      if (!a.empty()) newline(out, indent, depth);
      out += ']';
      break;
    }
    case Type::Object: {
      const Object& o = v.members();
      out += '{';
      for (size_t i = 0; i < o.size(); ++i) {
        if (i) out += ',';
        newline(out, indent, depth + 1);
        write_string(out, o[i].first);
        out += indent < 0 ? ":" : ": ";
        dump_value(out, o[i].second, indent, depth + 1);
      }
      if (!o.empty()) newline(out, indent, depth);
      out += '}';
      break;
    }
  }
}
}  // namespace

std::string Value::dump(int indent) const {
  std::string out;
  dump_value(out, *this, indent, 0);
  return out;
}

// --- parsing ------------------------------------------------------------------------------------

namespace {

class Parser {
 public:
  Parser(std::string_view text, std::string_view source, ParseOptions opt)
      : p_(text.data()), begin_(text.data()), end_(text.data() + text.size()), source_(source), opt_(opt) {}

  Value document() {
    skip_ws();
    Value v;
    value(v, 0);
    skip_ws();
    if (p_ != end_) fail("unexpected data after the JSON value");
    return v;
  }

 private:
  const char* p_;
  const char* begin_;
  const char* end_;
  std::string_view source_;
  ParseOptions opt_;

  [[noreturn]] void fail(const std::string& what) const { fail_at(p_, what); }

  [[noreturn]] void fail_at(const char* at, const std::string& what) const {
    size_t line = 1, col = 1;
    for (const char* q = begin_; q < at; ++q) {
      if (*q == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    throw ParseError(std::string(source_) + ": JSON error at line " + std::to_string(line) + ", column " +
                     std::to_string(col) + " (byte " + std::to_string(at - begin_) + "): " + what);
  }

  std::string describe_here() const {
    if (p_ >= end_) return "end of input";
    unsigned char c = static_cast<unsigned char>(*p_);
    if (c >= 0x20 && c < 0x7F) return std::string("'") + char(c) + "'";
    char buf[16];
    std::snprintf(buf, sizeof buf, "byte 0x%02x", c);
    return buf;
  }

  void skip_ws() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
  }

  void expect_literal(std::string_view lit) {
    if (size_t(end_ - p_) < lit.size() || std::memcmp(p_, lit.data(), lit.size()) != 0)
      fail("invalid literal (expected '" + std::string(lit) + "')");
    p_ += lit.size();
  }

  void value(Value& out, size_t depth) {
    if (p_ >= end_) fail("unexpected end of input, expected a value");
    switch (*p_) {
      case '{': object(out, depth + 1); return;
      case '[': array(out, depth + 1); return;
      case '"': {
        std::string s;
        string(s);
        out = Value(std::move(s));
        return;
      }
      case 't':
        expect_literal("true");
        out = Value(true);
        return;
      case 'f':
        expect_literal("false");
        out = Value(false);
        return;
      case 'n':
        expect_literal("null");
        out = Value();
        return;
      default:
        if (*p_ == '-' || (*p_ >= '0' && *p_ <= '9')) {
          number(out);
          return;
        }
        fail("unexpected " + describe_here() + ", expected a value");
    }
  }

  void check_depth(size_t depth) {
    if (depth > opt_.max_depth) fail("nesting deeper than " + std::to_string(opt_.max_depth));
  }

  void object(Value& out, size_t depth) {
    check_depth(depth);
    ++p_;  // {
    skip_ws();
    if (p_ < end_ && *p_ == '}') {
      ++p_;
      out = Value(Object{});
      return;
    }
    Object tmp;
    for (;;) {
      skip_ws();
      if (p_ >= end_ || *p_ != '"') fail("unexpected " + describe_here() + ", expected a string key");
      std::string key;
      string(key);
      skip_ws();
      if (p_ >= end_ || *p_ != ':') fail("unexpected " + describe_here() + ", expected ':'");
      ++p_;
      skip_ws();
      tmp.emplace_back(std::piecewise_construct, std::forward_as_tuple(std::move(key)), std::forward_as_tuple());
      value(tmp.back().second, depth);
      skip_ws();
      if (p_ < end_ && *p_ == ',') {
        ++p_;
        continue;
      }
      if (p_ < end_ && *p_ == '}') {
        ++p_;
        break;
      }
      fail("unexpected " + describe_here() + ", expected ',' or '}'");
    }
    out = Value(std::move(tmp));
  }

  void array(Value& out, size_t depth) {
    check_depth(depth);
    ++p_;  // [
    skip_ws();
    if (p_ < end_ && *p_ == ']') {
      ++p_;
      out = Value(Array{});
      return;
    }
    Array tmp;
    for (;;) {
      skip_ws();
      tmp.emplace_back();
      value(tmp.back(), depth);
      skip_ws();
      if (p_ < end_ && *p_ == ',') {
        ++p_;
        continue;
      }
      if (p_ < end_ && *p_ == ']') {
        ++p_;
        break;
      }
      fail("unexpected " + describe_here() + ", expected ',' or ']'");
    }
    out = Value(std::move(tmp));
  }

  unsigned hex4(const char* at) {
    if (end_ - at < 4) fail_at(at, "truncated \\u escape");
    unsigned v = 0;
    for (int k = 0; k < 4; ++k) {
      char c = at[k];
      unsigned d;
      if (c >= '0' && c <= '9')
        d = unsigned(c - '0');
      else if (c >= 'a' && c <= 'f')
        d = unsigned(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F')
        d = unsigned(c - 'A' + 10);
      else
        fail_at(at + k, "invalid hex digit in \\u escape");
      v = v * 16 + d;
    }
    return v;
  }

  static void append_utf8(std::string& s, uint32_t cp) {
    if (cp < 0x80) {
      s += char(cp);
    } else if (cp < 0x800) {
      s += char(0xC0 | (cp >> 6));
      s += char(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      s += char(0xE0 | (cp >> 12));
      s += char(0x80 | ((cp >> 6) & 0x3F));
      s += char(0x80 | (cp & 0x3F));
    } else {
      s += char(0xF0 | (cp >> 18));
      s += char(0x80 | ((cp >> 12) & 0x3F));
      s += char(0x80 | ((cp >> 6) & 0x3F));
      s += char(0x80 | (cp & 0x3F));
    }
  }

  // p_ at the opening quote; leaves p_ after the closing quote.
  void string(std::string& s) {
    const char* open = p_;
    ++p_;
    for (;;) {
      const char* start = p_;
      // Fast scan over plain ASCII.
      while (p_ < end_) {
        unsigned char c = static_cast<unsigned char>(*p_);
        if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80) break;
        ++p_;
      }
      s.append(start, size_t(p_ - start));
      if (p_ >= end_) fail_at(open, "unterminated string");
      unsigned char c = static_cast<unsigned char>(*p_);
      if (c == '"') {
        ++p_;
        return;
      }
      if (c < 0x20) fail("control character (byte 0x" + hex2(c) + ") in a string; it must be escaped");
      if (c >= 0x80) {
        size_t n = utf8_len(std::string_view(p_, size_t(end_ - p_)), 0);
        if (!n) fail("invalid UTF-8 in a string");
        s.append(p_, n);
        p_ += n;
        continue;
      }
      // backslash
      if (end_ - p_ < 2) fail_at(open, "unterminated string");
      char e = p_[1];
      p_ += 2;
      switch (e) {
        case '"': s += '"'; break;
        case '\\': s += '\\'; break;
        case '/': s += '/'; break;
        case 'b': s += '\b'; break;
        case 'f': s += '\f'; break;
        case 'n': s += '\n'; break;
        case 'r': s += '\r'; break;
        case 't': s += '\t'; break;
        case 'u': {
          const char* esc = p_ - 2;
          uint32_t cp = hex4(p_);
          p_ += 4;
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (end_ - p_ < 6 || p_[0] != '\\' || p_[1] != 'u')
              fail_at(esc, "high surrogate \\u" + hex4s(cp) + " not followed by a low surrogate");
            uint32_t lo = hex4(p_ + 2);
            if (lo < 0xDC00 || lo > 0xDFFF)
              fail_at(esc, "high surrogate \\u" + hex4s(cp) + " followed by \\u" + hex4s(lo) + ", not a low surrogate");
            p_ += 6;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            fail_at(esc, "lone low surrogate \\u" + hex4s(cp));
          }
          append_utf8(s, cp);
          break;
        }
        default: p_ -= 1; fail("invalid escape '\\" + describe_here().substr(1, 1) + "'");
      }
    }
  }

  static std::string hex2(unsigned c) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "%02x", c & 0xFF);
    return buf;
  }
  static std::string hex4s(uint32_t c) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "%04X", c & 0xFFFF);
    return buf;
  }

  void number(Value& out) {
    const char* start = p_;
    bool is_int = true;
    if (*p_ == '-') ++p_;
    if (p_ >= end_) fail("truncated number");
    if (*p_ == '0') {
      ++p_;
    } else if (*p_ >= '1' && *p_ <= '9') {
      while (p_ < end_ && *p_ >= '0' && *p_ <= '9') ++p_;
    } else {
      fail("invalid number");
    }
    if (p_ < end_ && *p_ == '.') {
      is_int = false;
      ++p_;
      if (p_ >= end_ || !(*p_ >= '0' && *p_ <= '9')) fail("invalid number: digits must follow '.'");
      while (p_ < end_ && *p_ >= '0' && *p_ <= '9') ++p_;
    }
    if (p_ < end_ && (*p_ == 'e' || *p_ == 'E')) {
      is_int = false;
      ++p_;
      if (p_ < end_ && (*p_ == '+' || *p_ == '-')) ++p_;
      if (p_ >= end_ || !(*p_ >= '0' && *p_ <= '9')) fail("invalid number: digits must follow the exponent");
      while (p_ < end_ && *p_ >= '0' && *p_ <= '9') ++p_;
    }
    if (is_int) {
      int64_t i = 0;
      auto r = std::from_chars(start, p_, i);
      if (r.ec == std::errc() && r.ptr == p_) {
        out = Value(i);
        return;
      }
    }
    double d = 0;
    auto r = std::from_chars(start, p_, d);
    if (r.ec == std::errc::result_out_of_range) {
      // Overflow to +-inf or underflow to 0, as strtod would.
      bool neg = *start == '-';
      const char* e = start;
      while (e < p_ && *e != 'e' && *e != 'E') ++e;
      bool tiny = e < p_ && e[1] == '-';
      d = tiny ? (neg ? -0.0 : 0.0) : (neg ? -HUGE_VAL : HUGE_VAL);
    } else if (r.ec != std::errc() || r.ptr != p_) {
      fail_at(start, "invalid number");
    }
    out = Value(d);
  }
};

}  // namespace

Value parse(std::string_view text, std::string_view source, ParseOptions opt) {
  return Parser(text, source, opt).document();
}

Value parse_file(const std::filesystem::path& path, ParseOptions opt) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(path.string() + ": cannot open");
  std::string text;
  f.seekg(0, std::ios::end);
  auto size = f.tellg();
  if (size < 0) throw Error(path.string() + ": cannot read");
  text.resize(size_t(size));
  f.seekg(0);
  f.read(text.data(), std::streamsize(text.size()));
  if (!f) throw Error(path.string() + ": cannot read");
  return parse(text, path.string(), opt);
}

}  // namespace wgc::json
