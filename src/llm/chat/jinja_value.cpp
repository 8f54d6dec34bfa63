// jinja::Value: Python semantics for printing (str/repr), JSON conversion and equality.
#include "llm/chat/jinja.h"

#include "llm/chat/jinja_budget.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <unordered_map>

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
      out = "0.";
      out.append(size_t(-exp - 1), '0');
      out += digits;
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

// Text building with the size limit checked as it grows, and a step charged per element.
void grew(const std::string& out, const char* what) {
  charge_steps(1);
  if (out.size() > active_limits().string_bytes) check_string_size(out.size(), what);
}

void dump_json(std::string& out, const Value& v, int indent, bool sort_keys, size_t depth) {
  check_depth(depth, "tojson");
  auto nl = [&](size_t d) {
    out += '\n';
    size_t n = size_t(indent) * d;
    check_string_size(out.size() + n, "tojson");
    out.append(n, ' ');
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
        grew(out, "tojson");
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
        grew(out, "tojson");
      }
      if (indent >= 0) nl(depth);
      out += '}';
      break;
    }
  }
}

// repr() of `v` appended to `out`.
void append_repr(std::string& out, const Value& v, size_t depth) {
  check_depth(depth, "printing a value");
  switch (v.kind()) {
    case Value::Kind::String: out += py_quote(v.str()); break;
    case Value::Kind::List: {
      out += '[';
      const auto& a = v.items();
      for (size_t i = 0; i < a.size(); ++i) {
        if (i) out += ", ";
        append_repr(out, a[i], depth + 1);
        grew(out, "printing a value");
      }
      out += ']';
      break;
    }
    case Value::Kind::Dict: {
      out += '{';
      bool first = true;
      for (auto& [k, x] : v.members()) {
        if (!first) out += ", ";
        first = false;
        out += py_quote(k);
        out += ": ";
        append_repr(out, x, depth + 1);
        grew(out, "printing a value");
      }
      out += '}';
      break;
    }
    default: out += v.to_string();
  }
}

Value from_json_at(const json::Value& j, size_t depth) {
  check_depth(depth, "a JSON value");
  switch (j.type()) {
    case json::Type::Null: return Value(nullptr);
    case json::Type::Bool: return Value(j.as_bool());
    case json::Type::Number: return j.is_int() ? Value(j.as_int()) : Value(j.as_double());
    case json::Type::String: return Value(j.as_string());
    case json::Type::Array: {
      Array a;
      a.reserve(j.items().size());
      for (auto& x : j.items()) a.push_back(from_json_at(x, depth + 1));
      return Value(std::move(a));
    }
    case json::Type::Object: {
      // A repeated key keeps its first place and its last value (Python's json); a hash index
      // keeps big objects linear.
      Object o;
      o.reserve(j.members().size());
      std::unordered_map<std::string_view, size_t> index;
      for (auto& [k, x] : j.members()) {
        auto [it, fresh] = index.emplace(k, o.size());
        if (fresh)
          o.emplace_back(k, from_json_at(x, depth + 1));
        else
          o[it->second].second = from_json_at(x, depth + 1);
      }
      return Value(std::move(o));
    }
  }
  return Value();
}

json::Value to_json_at(const Value& v, size_t depth) {
  check_depth(depth, "a JSON value");
  switch (v.kind()) {
    case Value::Kind::Undefined:
    case Value::Kind::None:
    case Value::Kind::Callable: return json::Value();
    case Value::Kind::Bool: return json::Value(v.truthy());
    case Value::Kind::Int: return json::Value(v.as_int());
    case Value::Kind::Float: return json::Value(v.as_double());
    case Value::Kind::String: return json::Value(v.str());
    case Value::Kind::List: {
      json::Value a = json::Value::array();
      for (auto& x : v.items()) a.push_back(to_json_at(x, depth + 1));
      return a;
    }
    case Value::Kind::Dict: {
      json::Value o = json::Value::object();
      for (auto& [k, x] : v.members()) o.set(k, to_json_at(x, depth + 1));
      return o;
    }
  }
  return json::Value();
}

bool equal(const Value& a, const Value& b, size_t depth) {
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
    case K::String: charge_bytes(std::min(a.str().size(), b.str().size())); return a.str() == b.str();
    case K::List: {
      check_depth(depth, "comparing values");
      if (a.items().size() != b.items().size()) return false;
      for (size_t i = 0; i < a.items().size(); ++i) {
        charge_steps(1);
        if (!equal(a.items()[i], b.items()[i], depth + 1)) return false;
      }
      return true;
    }
    case K::Dict: {
      check_depth(depth, "comparing values");
      if (a.members().size() != b.members().size()) return false;
      for (auto& [k, v] : a.members()) {
        charge_steps(1);
        const Value* o = b.find(k);
        if (!o || !equal(*o, v, depth + 1)) return false;
      }
      return true;
    }
    case K::Callable: return &a.function() == &b.function();
    default: return false;
  }
}

}  // namespace

Value::~Value() {
  if (a_ || o_) release_containers();
}

// Python's "trashcan": the last reference to a list or dict is parked and freed by a loop, so
// freeing its elements parks theirs instead of recursing.
void Value::release_containers() noexcept {
  thread_local std::vector<std::shared_ptr<Array>> arrays;
  thread_local std::vector<std::shared_ptr<Object>> objects;
  thread_local bool draining = false;
  if (a_ && a_.use_count() == 1) arrays.push_back(std::move(a_));
  if (o_ && o_.use_count() == 1) objects.push_back(std::move(o_));
  if (draining) return;
  draining = true;
  while (!arrays.empty() || !objects.empty()) {
    if (!arrays.empty()) {
      std::shared_ptr<Array> a = std::move(arrays.back());
      arrays.pop_back();
      a.reset();  // its elements' destructors park their own containers
    } else {
      std::shared_ptr<Object> o = std::move(objects.back());
      objects.pop_back();
      o.reset();
    }
  }
  draining = false;
}

int64_t Value::float_to_int(double d) {
  // [-2^63, 2^63) holds every double that truncates to a 64-bit integer.
  if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0))
    throw ValueError("the float " + float_repr(d) + " does not fit a 64-bit integer");
  return int64_t(d);
}

Value Value::from_json(const json::Value& j) { return from_json_at(j, 0); }

json::Value Value::to_json() const { return to_json_at(*this, 0); }

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
  charge_steps(o_->size() / 16 + 1);  // (a linear search: dicts in templates are small)
  for (auto& [k, v] : *o_)
    if (k == key) return &v;
  return nullptr;
}

Value Value::get(std::string_view key) const {
  const Value* v = find(key);
  return v ? *v : Value();
}

void Value::note_elements() const {
  Budget* b = Budget::active();
  if (!b) return;
  if (a_)
    for (auto& x : *a_) b->note_contained(x.container());
  if (o_)
    for (auto& [k, x] : *o_) b->note_contained(x.container());
}

Value& Value::set(std::string key, Value v) {
  if (Budget* b = Budget::active()) b->note_contained(v.container());
  charge_steps(o_->size() / 16 + 1);  // (a linear search: dicts in templates are small)
  for (auto& [k, x] : *o_)
    if (k == key) return x = std::move(v);
  check_list_size(o_->size() + 1, "a dict");
  o_->emplace_back(std::move(key), std::move(v));
  return o_->back().second;
}

void Value::push_back(Value v) {
  if (Budget* b = Budget::active()) b->note_contained(v.container());
  check_list_size(a_->size() + 1, "a list");
  a_->push_back(std::move(v));
}

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
  std::string out;
  append_repr(out, *this, 0);
  return out;
}

std::string Value::to_json_text(int indent, bool sort_keys) const {
  std::string out;
  dump_json(out, *this, indent, sort_keys, 0);
  return out;
}

bool operator==(const Value& a, const Value& b) {
  charge_steps(1);
  return equal(a, b, 0);
}

Value Args::get(size_t i, std::string_view name, Value def) const {
  if (i < pos.size()) return pos[i];
  for (auto& [k, v] : kw)
    if (k == name) return v;
  return def;
}

}  // namespace wgc::llm::jinja
