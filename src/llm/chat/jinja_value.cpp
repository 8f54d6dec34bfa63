// jinja::Value: Python semantics for printing (str/repr), JSON conversion and equality.
#include "llm/chat/jinja.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace wgc::llm::jinja {

namespace {

// Python's repr(float): shortest round-trip digits, fixed for 1e-4 <= |x| < 1e16, else scientific.
std::string float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  if (d == 0) return std::signbit(d) ? "-0.0" : "0.0";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string sci(buf, r.ptr);  // d.ddde[+-]XX
  size_t e = sci.find('e');
  int exp = std::stoi(sci.substr(e + 1));
  std::string mant = sci.substr(0, e);
  bool neg = mant[0] == '-';
  if (neg) mant = mant.substr(1);
  std::string digits;
  for (char c : mant)
    if (c != '.') digits += c;
  std::string out;
  if (exp >= -4 && exp < 16) {
    if (exp >= 0) {
      std::string ip = digits.substr(0, std::min(digits.size(), size_t(exp) + 1));
      while (ip.size() < size_t(exp) + 1) ip += '0';
      std::string fp = digits.size() > size_t(exp) + 1 ? digits.substr(size_t(exp) + 1) : "0";
      out = ip + "." + fp;
    } else {
      out = "0." + std::string(size_t(-exp - 1), '0') + digits;
    }
  } else {
    out = digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char eb[16];
    std::snprintf(eb, sizeof eb, "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
    out += eb;
  }
  return neg ? "-" + out : out;
}

std::string py_quote(const std::string& s) {
  // Python repr of a str: single quotes unless the text has ' and no ".
  char q = (s.find('\'') != std::string::npos && s.find('"') == std::string::npos) ? '"' : '\'';
  std::string out(1, q);
  for (char c : s) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c == q) {
          out += '\\';
          out += c;
        } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
          char b[8];
          std::snprintf(b, sizeof b, "\\x%02x", static_cast<unsigned char>(c));
          out += b;
        } else {
          out += c;
        }
    }
  }
  return out + q;
}

void dump_json(std::string& out, const Value& v, int indent, bool sort_keys, int depth) {
  auto nl = [&](int d) {
    out += '\n';
    out.append(size_t(indent * d), ' ');
  };
  switch (v.kind()) {
    case Value::Kind::Undefined:
    case Value::Kind::None: out += "null"; break;
    case Value::Kind::Bool: out += v.truthy() ? "true" : "false"; break;
    case Value::Kind::Int: out += std::to_string(v.as_int()); break;
    case Value::Kind::Float: {
      double d = v.as_double();
      out += std::isnan(d) ? "NaN" : std::isinf(d) ? (d > 0 ? "Infinity" : "-Infinity") : float_repr(d);
      break;
    }
    case Value::Kind::String: json::write_string(out, v.str()); break;  // as json.dumps(ensure_ascii=False)
    case Value::Kind::Callable: out += "null"; break;
    case Value::Kind::List: {
      const auto& a = v.items();
      if (a.empty()) {
        out += "[]";
        break;
      }
      out += '[';
      for (size_t i = 0; i < a.size(); ++i) {
        if (i) out += indent >= 0 ? "," : ", ";
        if (indent >= 0) nl(depth + 1);
        dump_json(out, a[i], indent, sort_keys, depth + 1);
      }
      if (indent >= 0) nl(depth);
      out += ']';
      break;
    }
    case Value::Kind::Dict: {
      std::vector<const std::pair<std::string, Value>*> m;
      for (auto& kv : v.members()) m.push_back(&kv);
      if (sort_keys) std::stable_sort(m.begin(), m.end(), [](auto* a, auto* b) { return a->first < b->first; });
      if (m.empty()) {
        out += "{}";
        break;
      }
      out += '{';
      for (size_t i = 0; i < m.size(); ++i) {
        if (i) out += indent >= 0 ? "," : ", ";
        if (indent >= 0) nl(depth + 1);
        json::write_string(out, m[i]->first);
        out += ": ";
        dump_json(out, m[i]->second, indent, sort_keys, depth + 1);
      }
      if (indent >= 0) nl(depth);
      out += '}';
      break;
    }
  }
}

}  // namespace

Value Value::from_json(const json::Value& j) {
  switch (j.type()) {
    case json::Type::Null: return Value(nullptr);
    case json::Type::Bool: return Value(j.as_bool());
    case json::Type::Number: return j.is_int() ? Value(j.as_int()) : Value(j.as_double());
    case json::Type::String: return Value(j.as_string());
    case json::Type::Array: {
      Array a;
      for (auto& x : j.items()) a.push_back(from_json(x));
      return Value(std::move(a));
    }
    case json::Type::Object: {
      Value o = Value::object();
      for (auto& [k, x] : j.members()) o.set(k, from_json(x));
      return o;
    }
  }
  return Value();
}

json::Value Value::to_json() const {
  switch (kind_) {
    case Kind::Undefined:
    case Kind::None:
    case Kind::Callable: return json::Value();
    case Kind::Bool: return json::Value(truthy());
    case Kind::Int: return json::Value(i_);
    case Kind::Float: return json::Value(f_);
    case Kind::String: return json::Value(*s_);
    case Kind::List: {
      json::Value a = json::Value::array();
      for (auto& x : *a_) a.push_back(x.to_json());
      return a;
    }
    case Kind::Dict: {
      json::Value o = json::Value::object();
      for (auto& [k, x] : *o_) o.set(k, x.to_json());
      return o;
    }
  }
  return json::Value();
}

bool Value::truthy() const {
  switch (kind_) {
    case Kind::Undefined:
    case Kind::None: return false;
    case Kind::Bool:
    case Kind::Int: return i_ != 0;
    case Kind::Float: return f_ != 0;
    case Kind::String: return !s_->empty();
    case Kind::List: return !a_->empty();
    case Kind::Dict: return !o_->empty();
    case Kind::Callable: return true;
  }
  return false;
}

const Value* Value::find(std::string_view key) const {
  if (kind_ != Kind::Dict) return nullptr;
  for (auto& [k, v] : *o_)
    if (k == key) return &v;
  return nullptr;
}

Value Value::get(std::string_view key) const {
  const Value* v = find(key);
  return v ? *v : Value();
}

Value& Value::set(std::string key, Value v) {
  for (auto& [k, x] : *o_)
    if (k == key) return x = std::move(v);
  o_->emplace_back(std::move(key), std::move(v));
  return o_->back().second;
}

void Value::push_back(Value v) { a_->push_back(std::move(v)); }

std::string Value::to_string() const {
  switch (kind_) {
    case Kind::Undefined: return "";
    case Kind::None: return "None";
    case Kind::Bool: return i_ ? "True" : "False";
    case Kind::Int: return std::to_string(i_);
    case Kind::Float: return float_repr(f_);
    case Kind::String: return *s_;
    case Kind::Callable: return "<function>";
    default: return repr();
  }
}

std::string Value::repr() const {
  switch (kind_) {
    case Kind::String: return py_quote(*s_);
    case Kind::List: {
      std::string r = "[";
      for (size_t i = 0; i < a_->size(); ++i) r += (i ? ", " : "") + (*a_)[i].repr();
      return r + "]";
    }
    case Kind::Dict: {
      std::string r = "{";
      bool first = true;
      for (auto& [k, v] : *o_) {
        r += (first ? "" : ", ") + py_quote(k) + ": " + v.repr();
        first = false;
      }
      return r + "}";
    }
    default: return to_string();
  }
}

std::string Value::to_json_text(int indent, bool sort_keys) const {
  std::string out;
  dump_json(out, *this, indent, sort_keys, 0);
  return out;
}

bool operator==(const Value& a, const Value& b) {
  using K = Value::Kind;
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_double() == b.as_double();
    return a.as_int() == b.as_int();
  }
  if ((a.is_bool() && b.is_number()) || (a.is_number() && b.is_bool())) return a.as_double() == b.as_double();
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case K::Undefined:
    case K::None: return true;
    case K::Bool: return a.truthy() == b.truthy();
    case K::String: return a.str() == b.str();
    case K::List: return a.items() == b.items();
    case K::Dict: {
      if (a.members().size() != b.members().size()) return false;
      for (auto& [k, v] : a.members()) {
        const Value* o = b.find(k);
        if (!o || !(*o == v)) return false;
      }
      return true;
    }
    case K::Callable: return &a.function() == &b.function();
    default: return false;
  }
}

Value Args::get(size_t i, std::string_view name, Value def) const {
  if (i < pos.size()) return pos[i];
  for (auto& [k, v] : kw)
    if (k == name) return v;
  return def;
}

}  // namespace wgc::llm::jinja
