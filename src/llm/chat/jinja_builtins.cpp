// Filters, tests, methods and globals of the chat-template engine, and their Python-semantics helpers.
#include "llm/chat/jinja_builtins.h"

#include "llm/chat/jinja_render.h"
#include "llm/tokenizer/unicode.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <ctime>
#include <unordered_set>

namespace wgc::llm::jinja {

size_t cp_count(const std::string& s) {
  charge_bytes(s.size());
  size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

std::vector<size_t> cp_starts(const std::string& s) {
  charge_bytes(s.size());
  std::vector<size_t> out;
  for (size_t i = 0; i < s.size();) {
    out.push_back(i);
    i += std::min(unicode::utf8_len(static_cast<unsigned char>(s[i])), s.size() - i);
  }
  out.push_back(s.size());
  return out;
}

std::string brief(const Value& v) {
  if (v.is_string()) {
    std::string r = v.str().size() > 40 ? v.str().substr(0, 40) + "..." : v.str();
    return Value(r).repr();
  }
  if (v.is_array()) return "a list of " + std::to_string(v.items().size()) + " items";
  if (v.is_object()) return "a dict of " + std::to_string(v.members().size()) + " keys";
  if (v.is_undefined()) return "undefined";
  return v.repr();
}

namespace {

constexpr size_t kKeywordOnly = SIZE_MAX;  // an Args::get position no call reaches

bool py_space(char32_t c) { return unicode::is_whitespace(c) || (c >= 0x1C && c <= 0x1F); }

}  // namespace

std::string strip(const std::string& s, const Value& chars, bool left, bool right) {
  bool ws = chars.is_undefined() || chars.is_none();
  std::vector<std::string> set;
  if (!ws) {
    std::string c = chars.to_string();
    std::vector<size_t> st = cp_starts(c);
    for (size_t i = 0; i + 1 < st.size(); ++i) set.push_back(c.substr(st[i], st[i + 1] - st[i]));
  }
  std::vector<size_t> starts = cp_starts(s);
  auto strip_it = [&](size_t k) {
    std::string_view c(s.data() + starts[k], starts[k + 1] - starts[k]);
    if (ws) {
      size_t i = 0;
      return py_space(unicode::next_codepoint(c, i));
    }
    charge_steps(1);
    return std::find(set.begin(), set.end(), c) != set.end();
  };
  size_t b = 0, e = starts.size() - 1;
  if (left)
    while (b < e && strip_it(b)) ++b;
  if (right)
    while (e > b && strip_it(e - 1)) --e;
  return s.substr(starts[b], starts[e] - starts[b]);
}

std::string ascii_map(std::string s, int (*f)(int)) {
  charge_bytes(s.size());
  for (auto& c : s)
    if (static_cast<unsigned char>(c) < 0x80) c = char(f(c));
  return s;
}

std::string title_case(const std::string& s) {
  charge_bytes(s.size());
  std::string out = s;
  bool prev_alpha = false;
  for (auto& c : out) {
    auto u = static_cast<unsigned char>(c);
    bool alpha = std::isalpha(u) != 0 || u >= 0x80;
    if (u < 0x80) c = char(prev_alpha ? std::tolower(u) : std::toupper(u));
    prev_alpha = alpha;
  }
  return out;
}

std::vector<std::string> py_split(const std::string& s, const Value& sep, int64_t maxsplit) {
  charge_bytes(s.size());
  std::vector<std::string> out;
  auto push = [&](std::string piece) {
    charge_steps(1);
    check_list_size(out.size() + 1, "split");
    out.push_back(std::move(piece));
  };
  if (sep.is_undefined() || sep.is_none()) {
    size_t i = 0;
    while (true) {
      while (i < s.size() && is_space(s[i])) ++i;
      if (i >= s.size()) break;
      if (maxsplit >= 0 && int64_t(out.size()) == maxsplit) {
        size_t e = s.size();
        while (e > i && is_space(s[e - 1])) --e;
        push(s.substr(i, e - i));
        break;
      }
      size_t j = i;
      while (j < s.size() && !is_space(s[j])) ++j;
      push(s.substr(i, j - i));
      i = j;
    }
    return out;
  }
  std::string d = sep.to_string();
  if (d.empty()) throw ValueError("split: empty separator");
  size_t pos = 0;
  while (true) {
    if (maxsplit >= 0 && int64_t(out.size()) == maxsplit) break;
    size_t hit = s.find(d, pos);
    if (hit == std::string::npos) break;
    push(s.substr(pos, hit - pos));
    pos = hit + d.size();
  }
  push(s.substr(pos));
  return out;
}

std::string replace_str(const std::string& s, const std::string& from, const std::string& to, int64_t count) {
  charge_bytes(s.size());
  std::string out;
  auto add = [&](std::string_view piece) {
    check_string_size(out.size() + piece.size(), "replace");
    charge_bytes(piece.size());
    out += piece;
  };
  int64_t n = 0;
  if (from.empty()) {  // Python: `to` before every character and at the end
    std::vector<size_t> starts = cp_starts(s);
    size_t i = 0;
    for (; i + 1 < starts.size() && (count < 0 || n < count); ++i, ++n) {
      add(to);
      add(std::string_view(s).substr(starts[i], starts[i + 1] - starts[i]));
    }
    if (count < 0 || n < count) add(to);
    add(std::string_view(s).substr(starts[i]));
    return out;
  }
  size_t pos = 0;
  while (count < 0 || n < count) {
    size_t hit = s.find(from, pos);
    if (hit == std::string::npos) break;
    add(std::string_view(s).substr(pos, hit - pos));
    add(to);
    pos = hit + from.size();
    ++n;
  }
  add(std::string_view(s).substr(pos));
  return out;
}

// Python slicing indices for a sequence of length n.
std::vector<size_t> slice_indices(int64_t n, const Value& start, const Value& stop, const Value& step_v) {
  int64_t step = step_v.is_undefined() || step_v.is_none() ? 1 : step_v.as_int();
  if (step == 0) throw ValueError("slice step cannot be zero");
  auto norm = [&](const Value& v, int64_t def) -> int64_t {
    if (v.is_undefined() || v.is_none()) return def;
    int64_t x = v.as_int();
    if (x < 0) x += n;
    if (step > 0) return std::clamp<int64_t>(x, 0, n);
    return std::clamp<int64_t>(x, -1, n - 1);
  };
  int64_t b = norm(start, step > 0 ? 0 : n - 1), e = norm(stop, step > 0 ? n : -1);
  std::vector<size_t> out;
  // Stepping stops before it passes the end, so a huge step cannot overflow the index.
  if (step > 0) {
    for (int64_t i = b; i < e; i += step) {
      out.push_back(size_t(i));
      if (e - i <= step) break;
    }
  } else {
    for (int64_t i = b; i > e; i += step) {
      out.push_back(size_t(i));
      if (step <= e - i) break;
    }
  }
  charge_steps(out.size());
  return out;
}

namespace {

int compare_at(const Value& a, const Value& b, const std::string& where, size_t depth) {
  if ((a.is_number() || a.is_bool()) && (b.is_number() || b.is_bool())) {
    double x = a.as_double(), y = b.as_double();
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (a.is_string() && b.is_string()) {
    charge_bytes(std::min(a.str().size(), b.str().size()));
    int c = a.str().compare(b.str());
    return c < 0 ? -1 : c > 0 ? 1 : 0;
  }
  if (a.is_array() && b.is_array()) {
    check_depth(depth, "comparing values");
    for (size_t i = 0; i < std::min(a.items().size(), b.items().size()); ++i) {
      charge_steps(1);
      if (int c = compare_at(a.items()[i], b.items()[i], where, depth + 1)) return c;
    }
    return a.items().size() < b.items().size() ? -1 : a.items().size() > b.items().size() ? 1 : 0;
  }
  throw Error(where + ": cannot compare " + brief(a) + " with " + brief(b));
}

}  // namespace

int compare_values(const Value& a, const Value& b, const std::string& where) {
  charge_steps(1);
  return compare_at(a, b, where, 0);
}

bool contains(const Value& container, const Value& x, const std::string& where) {
  if (container.is_string()) {
    if (!x.is_string()) throw Error(where + ": 'in <string>' needs a string on the left");
    charge_bytes(container.str().size());
    return container.str().find(x.str()) != std::string::npos;
  }
  if (container.is_array())
    return std::find(container.items().begin(), container.items().end(), x) != container.items().end();
  if (container.is_object()) return x.is_string() && container.find(x.str()) != nullptr;
  if (container.is_undefined() || container.is_none()) return false;
  throw Error(where + ": 'in' needs a string, list or dict, got " + brief(container));
}

// Elements when iterating: arrays, object keys, string characters.
std::vector<Value> iterate(const Value& v, const std::string& where) {
  std::vector<Value> out;
  if (v.is_array()) {
    charge_steps(v.items().size());
    return v.items();
  }
  if (v.is_object()) {
    charge_steps(v.members().size());
    for (auto& [k, x] : v.members()) out.emplace_back(k);
    return out;
  }
  if (v.is_string()) {
    const std::string& s = v.str();
    std::vector<size_t> starts = cp_starts(s);
    check_list_size(starts.size() - 1, "iterating a string");
    charge_steps(starts.size() - 1);
    out.reserve(starts.size() - 1);
    for (size_t i = 0; i + 1 < starts.size(); ++i) out.emplace_back(s.substr(starts[i], starts[i + 1] - starts[i]));
    return out;
  }
  if (v.is_undefined() || v.is_none()) return out;
  throw Error(where + ": " + brief(v) + " is not iterable");
}

void check_no_cycle(const Value& container, const Value& inserted, const std::string& where) {
  const void* target = container.container();
  if (!target || !inserted.container()) return;
  if (inserted.container() == target) throw Error(where + ": a list or dict cannot contain itself");
  // Only a container that is an element of another can be reached from `inserted`: most targets
  // (a namespace, a list only ever appended to) need no walk.
  Budget* budget = Budget::active();
  if (budget && !budget->is_contained(target)) return;
  std::vector<const Value*> todo{&inserted};
  std::unordered_set<const void*> seen;
  while (!todo.empty()) {
    const Value* v = todo.back();
    todo.pop_back();
    const void* c = v->container();
    if (!c || !seen.insert(c).second) continue;
    if (c == target) throw Error(where + ": a list or dict cannot contain itself");
    charge_steps(1);
    if (v->is_array())
      for (auto& x : v->items()) todo.push_back(&x);
    else
      for (auto& [k, x] : v->members()) todo.push_back(&x);
  }
}

Value Template::Impl::call_method(Frame& f, const Value& obj, const std::string& m, Args& a, int line,
                                  bool& found) const {
  found = true;
  std::string w = where(line);
  if (obj.is_string()) {
    const std::string& s = obj.str();
    if (m == "strip") return Value(strip(s, a.get(0, "chars"), true, true));
    if (m == "lstrip") return Value(strip(s, a.get(0, "chars"), true, false));
    if (m == "rstrip") return Value(strip(s, a.get(0, "chars"), false, true));
    if (m == "upper") return Value(ascii_map(s, ::toupper));
    if (m == "lower") return Value(ascii_map(s, ::tolower));
    if (m == "title") return Value(title_case(s));
    if (m == "capitalize")
      return Value(s.empty() ? s : ascii_map(s.substr(0, 1), ::toupper) + ascii_map(s.substr(1), ::tolower));
    if (m == "split" || m == "rsplit") {
      int64_t maxsplit = a.get(1, "maxsplit", Value(int64_t(-1))).as_int();
      std::vector<std::string> parts;
      if (m == "rsplit" && maxsplit >= 0) {
        // Split from the right: reverse, split, reverse back (separators are reversed too).
        Value sep = a.get(0, "sep");
        std::string rs(s.rbegin(), s.rend());
        Value rsep = sep.is_string() ? Value(std::string(sep.str().rbegin(), sep.str().rend())) : sep;
        parts = py_split(rs, rsep, maxsplit);
        for (auto& p : parts) std::reverse(p.begin(), p.end());
        std::reverse(parts.begin(), parts.end());
      } else {
        parts = py_split(s, a.get(0, "sep"), maxsplit);
      }
      Array r;
      for (auto& p : parts) r.emplace_back(p);
      return Value(std::move(r));
    }
    if (m == "splitlines") {
      Array r;
      size_t pos = 0;
      while (pos < s.size()) {
        size_t e = s.find_first_of("\r\n", pos);
        if (e == std::string::npos) {
          r.emplace_back(s.substr(pos));
          break;
        }
        r.emplace_back(s.substr(pos, e - pos));
        check_list_size(r.size(), "splitlines");
        charge_steps(1);
        pos = e + (s.compare(e, 2, "\r\n") == 0 ? 2 : 1);
      }
      return Value(std::move(r));
    }
    if (m == "startswith" || m == "endswith") {
      Value p = a.get(0, "prefix");
      std::vector<Value> options = p.is_array() ? p.items() : std::vector<Value>{p};
      for (auto& o : options) {
        std::string x = o.to_string();
        if (m == "startswith" ? s.starts_with(x) : s.ends_with(x)) return Value(true);
      }
      return Value(false);
    }
    if (m == "replace")
      return Value(replace_str(s, a.get(0, "old").to_string(), a.get(1, "new").to_string(),
                               a.get(2, "count", Value(int64_t(-1))).as_int()));
    if (m == "find" || m == "index" || m == "rfind") {
      std::string x = a.get(0, "sub").to_string();
      size_t p = m == "rfind" ? s.rfind(x) : s.find(x);
      if (p == std::string::npos) {
        if (m == "index") throw Error(w + ": substring not found");
        return Value(int64_t(-1));
      }
      return Value(int64_t(cp_count(s.substr(0, p))));
    }
    if (m == "count") {
      std::string x = a.get(0, "sub").to_string();
      if (x.empty()) return Value(int64_t(cp_count(s) + 1));
      int64_t n = 0;
      for (size_t p = s.find(x); p != std::string::npos; p = s.find(x, p + x.size())) ++n;
      return Value(n);
    }
    if (m == "center") return call_filter(f, "center", obj, a, line);
    if (m == "join") return Value(join(iterate(a.get(0, "iterable"), w), s, Value()));
    if (m == "isdigit" || m == "isalpha" || m == "isspace" || m == "isalnum" || m == "isupper" || m == "islower") {
      if (s.empty()) return Value(false);
      bool ok = true;
      for (char c : s) {
        auto u = static_cast<unsigned char>(c);
        if (m == "isdigit") ok = ok && std::isdigit(u);
        if (m == "isalpha") ok = ok && std::isalpha(u);
        if (m == "isalnum") ok = ok && std::isalnum(u);
        if (m == "isspace") ok = ok && is_space(c);
        if (m == "isupper") ok = ok && !std::islower(u);
        if (m == "islower") ok = ok && !std::isupper(u);
      }
      return Value(ok);
    }
  } else if (obj.is_object()) {
    if (m == "items") {
      Array r;
      for (auto& [k, v] : obj.members()) r.emplace_back(Array{Value(k), v});
      return Value(std::move(r));
    }
    if (m == "keys") {
      Array r;
      for (auto& [k, v] : obj.members()) r.emplace_back(k);
      return Value(std::move(r));
    }
    if (m == "values") {
      Array r;
      for (auto& [k, v] : obj.members()) r.push_back(v);
      return Value(std::move(r));
    }
    if (m == "get") {
      const Value* v = obj.find(a.get(0, "key").to_string());
      return v ? *v : a.get(1, "default", Value(nullptr));
    }
    if (m == "update") {
      Value o = a.get(0, "other");
      Value target = obj;  // shares the dict
      if (o.is_object()) {
        for (auto& [k, v] : o.members()) {
          check_no_cycle(target, v, w);
          target.set(k, v);
        }
      }
      for (auto& [k, v] : a.kw) {
        check_no_cycle(target, v, w);
        target.set(k, v);
      }
      return Value(nullptr);
    }
  } else if (obj.is_array()) {
    if (m == "append") {
      Value x = a.get(0, "x");
      check_no_cycle(obj, x, w);
      Value(obj).push_back(std::move(x));
      return Value(nullptr);
    }
    if (m == "pop") {
      auto& v = obj.items();
      if (v.empty()) throw Error(w + ": pop from an empty list");
      int64_t i = a.get(0, "index", Value(int64_t(-1))).as_int();
      if (i < 0) i += int64_t(v.size());
      if (i < 0 || size_t(i) >= v.size()) throw Error(w + ": pop index out of range");
      Value r = v[size_t(i)];
      v.erase(v.begin() + i);
      return r;
    }
    if (m == "index" || m == "count") {
      auto& v = obj.items();
      Value x = a.get(0, "x");
      if (m == "count") return Value(int64_t(std::count(v.begin(), v.end(), x)));
      auto it = std::find(v.begin(), v.end(), x);
      if (it == v.end()) throw Error(w + ": " + x.repr() + " is not in list");
      return Value(int64_t(it - v.begin()));
    }
  }
  found = false;
  return Value();
}

bool Template::Impl::run_test(Frame& f, const std::string& n, const Value& v, Args& a, int line) const {
  (void)f;
  if (n == "defined") return !v.is_undefined();
  if (n == "undefined") return v.is_undefined();
  if (n == "none") return v.is_none();
  if (n == "string") return v.is_string();
  if (n == "number") return v.is_number();
  if (n == "integer") return v.is_int();
  if (n == "float") return v.is_float();
  if (n == "boolean") return v.is_bool();
  if (n == "true") return v.is_bool() && v.truthy();
  if (n == "false") return v.is_bool() && !v.truthy();
  if (n == "mapping") return v.is_object();
  if (n == "iterable") return v.is_array() || v.is_object() || v.is_string();
  if (n == "sequence") return v.is_array() || v.is_string() || v.is_object();
  if (n == "callable") return v.is_function();
  if (n == "odd") return v.as_int() % 2 != 0;
  if (n == "even") return v.as_int() % 2 == 0;
  if (n == "divisibleby") {
    int64_t d = a.get(0, "num").as_int();
    return d != 0 && (d == -1 || v.as_int() % d == 0);  // (INT64_MIN % -1 overflows)
  }
  if (n == "eq" || n == "equalto" || n == "sameas" || n == "==") return v == a.get(0, "other");
  if (n == "ne" || n == "!=") return !(v == a.get(0, "other"));
  if (n == "lt" || n == "lessthan") return compare_values(v, a.get(0, "other"), where(line)) < 0;
  if (n == "gt" || n == "greaterthan") return compare_values(v, a.get(0, "other"), where(line)) > 0;
  if (n == "le") return compare_values(v, a.get(0, "other"), where(line)) <= 0;
  if (n == "ge") return compare_values(v, a.get(0, "other"), where(line)) >= 0;
  if (n == "in") return contains(a.get(0, "seq"), v, where(line));
  if (n == "lower") return v.is_string() && ascii_map(v.str(), ::tolower) == v.str();
  if (n == "upper") return v.is_string() && ascii_map(v.str(), ::toupper) == v.str();
  throw Error(where(line) + ": unknown test '" + n + "'");
}

Value Template::Impl::call_filter(Frame& f, const std::string& n, Value v, Args& a, int line) const {
  std::string w = where(line);
  if (n == "trim") return Value(strip(v.to_string(), a.get(0, "chars"), true, true));
  if (n == "length" || n == "count") {
    if (v.is_string()) return Value(int64_t(cp_count(v.str())));
    if (v.is_array()) return Value(int64_t(v.items().size()));
    if (v.is_object()) return Value(int64_t(v.members().size()));
    if (v.is_undefined()) return Value(int64_t(0));
    throw Error(w + ": length of " + v.repr());
  }
  if (n == "tojson") {
    Value ind = a.get(0, "indent");
    // (Beyond the string limit, an indent fails at its first line anyway.)
    int indent = ind.is_number() ? int(std::clamp<int64_t>(ind.as_int(), -1, int64_t(1) << 30)) : -1;
    return Value(v.to_json_text(indent, a.get(1, "sort_keys").truthy()));
  }
  if (n == "upper") return Value(ascii_map(v.to_string(), ::toupper));
  if (n == "lower") return Value(ascii_map(v.to_string(), ::tolower));
  if (n == "title") return Value(title_case(v.to_string()));
  if (n == "capitalize") {
    std::string s = v.to_string();
    return Value(s.empty() ? s : ascii_map(s.substr(0, 1), ::toupper) + ascii_map(s.substr(1), ::tolower));
  }
  if ((n == "first" || n == "last") && v.is_string()) {  // one character, without listing them all
    const std::string& str = v.str();
    if (str.empty()) return Value();
    size_t b = 0;
    if (n == "first")
      return Value(str.substr(0, std::min(unicode::utf8_len(static_cast<unsigned char>(str[0])), str.size())));
    std::vector<size_t> starts = cp_starts(str);
    b = starts[starts.size() - 2];
    return Value(str.substr(b));
  }
  if (n == "first" || n == "last") {
    auto items = iterate(v, w);
    if (items.empty()) return Value();
    return n == "first" ? items.front() : items.back();
  }
  if (n == "join") return Value(join(iterate(v, w), a.get(0, "d", Value("")).to_string(), a.get(1, "attribute")));
  if (n == "default" || n == "d") {
    bool boolean = a.get(1, "boolean").truthy();
    if (v.is_undefined() || (boolean && !v.truthy())) return a.get(0, "default_value", Value(""));
    return v;
  }
  if (n == "string") return Value(v.to_string());
  if (n == "int") {
    if (v.is_number() || v.is_bool()) return Value(v.as_int());
    if (v.is_string()) {
      int64_t x = 0;
      std::string s = strip(v.str(), Value(), true, true);
      auto r = std::from_chars(s.data(), s.data() + s.size(), x);
      if (r.ec == std::errc() && r.ptr == s.data() + s.size()) return Value(x);
      double d = 0;
      auto r2 = std::from_chars(s.data(), s.data() + s.size(), d);
      if (r2.ec == std::errc() && r2.ptr == s.data() + s.size()) return Value(Value(d).as_int());
    }
    return a.get(0, "default", Value(int64_t(0)));
  }
  if (n == "float") {
    if (v.is_number() || v.is_bool()) return Value(v.as_double());
    if (v.is_string()) {
      double d = 0;
      std::string s = strip(v.str(), Value(), true, true);
      auto r = std::from_chars(s.data(), s.data() + s.size(), d);
      if (r.ec == std::errc() && r.ptr == s.data() + s.size()) return Value(d);
    }
    return a.get(0, "default", Value(0.0));
  }
  if (n == "list") return Value(iterate(v, w));
  if (n == "items") {
    Array r;
    if (v.is_object())
      for (auto& [k, x] : v.members()) r.emplace_back(Array{Value(k), x});
    return Value(std::move(r));
  }
  if (n == "dictsort") {
    Array r;
    if (v.is_object())
      for (auto& [k, x] : v.members()) r.emplace_back(Array{Value(k), x});
    std::stable_sort(r.begin(), r.end(),
                     [&](const Value& x, const Value& y) { return compare_values(x.items()[0], y.items()[0], w) < 0; });
    return Value(std::move(r));
  }
  if (n == "reverse") {
    if (v.is_string()) {
      const std::string& str = v.str();
      std::vector<size_t> starts = cp_starts(str);
      std::string r;
      r.reserve(str.size());
      for (size_t i = starts.size() - 1; i > 0; --i) r.append(str, starts[i - 1], starts[i] - starts[i - 1]);
      return Value(r);
    }
    auto items = iterate(v, w);
    std::reverse(items.begin(), items.end());
    return Value(items);
  }
  if (n == "replace")
    return Value(replace_str(v.to_string(), a.get(0, "old").to_string(), a.get(1, "new").to_string(),
                             a.get(2, "count", Value(int64_t(-1))).as_int()));
  if (n == "safe") return v;
  if (n == "escape" || n == "e") {
    std::string r, s = v.to_string();
    charge_bytes(s.size());
    for (char c : s) {
      if (r.size() > active_limits().string_bytes) check_string_size(r.size(), "escape");
      switch (c) {
        case '&': r += "&amp;"; break;
        case '<': r += "&lt;"; break;
        case '>': r += "&gt;"; break;
        case '"': r += "&#34;"; break;
        case '\'': r += "&#39;"; break;
        default: r += c;
      }
    }
    return Value(r);
  }
  if (n == "select" || n == "reject" || n == "selectattr" || n == "rejectattr") {
    bool attr = n.ends_with("attr");
    bool want = n.starts_with("select");
    Array r;
    for (auto& item : iterate(v, w)) {
      Value subject = attr ? item.get(a.get(0, "attribute").to_string()) : item;
      size_t first = attr ? 1 : 0;
      bool ok;
      if (a.pos.size() <= first) {
        ok = subject.truthy();
      } else {
        Args ta;
        ta.where = w;
        for (size_t i = first + 1; i < a.pos.size(); ++i) ta.pos.push_back(a.pos[i]);
        ok = run_test(f, a.pos[first].to_string(), subject, ta, line);
      }
      if (ok == want) r.push_back(item);
    }
    return Value(std::move(r));
  }
  if (n == "map") {
    Array r;
    Value attr = a.get(kKeywordOnly, "attribute");
    for (auto& item : iterate(v, w)) {
      if (attr.is_string()) {
        Value x = item.get(attr.str());
        if (x.is_undefined()) x = a.get(kKeywordOnly, "default");
        r.push_back(x);
      } else {
        Args fa;
        fa.where = w;
        for (size_t i = 1; i < a.pos.size(); ++i) fa.pos.push_back(a.pos[i]);
        Budget::Nest nest(f.st->budget);  // map('map', 'map', ...) recurses
        r.push_back(call_filter(f, a.get(0, "filter").to_string(), item, fa, line));
      }
    }
    return Value(std::move(r));
  }
  if (n == "unique") {
    Array r;
    for (auto& item : iterate(v, w))
      if (std::find(r.begin(), r.end(), item) == r.end()) r.push_back(item);
    return Value(std::move(r));
  }
  if (n == "sort") {
    auto items = iterate(v, w);
    bool rev = a.get(0, "reverse").truthy();
    Value attr = a.get(2, "attribute");
    std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
      const Value& xx = attr.is_string() ? x.get(attr.str()) : x;
      const Value& yy = attr.is_string() ? y.get(attr.str()) : y;
      int c = compare_values(xx, yy, w);
      return rev ? c > 0 : c < 0;
    });
    return Value(items);
  }
  if (n == "sum") {
    Value acc = a.get(1, "start", Value(int64_t(0)));
    Value attr = a.get(0, "attribute");
    for (auto& item : iterate(v, w)) {
      Value x = attr.is_string() ? item.get(attr.str()) : item;
      if (acc.is_float() || x.is_float()) {
        acc = Value(acc.as_double() + x.as_double());
      } else {
        int64_t r = 0;
        if (__builtin_add_overflow(acc.as_int(), x.as_int(), &r))
          throw Error(w + ": integer overflow in sum: beyond 64 bits");
        acc = Value(r);
      }
    }
    return acc;
  }
  if (n == "min" || n == "max") {
    auto items = iterate(v, w);
    if (items.empty()) return Value();
    Value best = items[0];
    for (auto& x : items)
      if ((n == "min") == (compare_values(x, best, w) < 0) && !(x == best)) best = x;
    return best;
  }
  if (n == "round") {
    double d = v.as_double();
    int64_t prec = a.get(0, "precision", Value(int64_t(0))).as_int();
    std::string method = a.get(1, "method", Value("common")).to_string();
    double p = std::pow(10.0, double(prec));
    double x = d * p;
    x = method == "ceil" ? std::ceil(x) : method == "floor" ? std::floor(x) : std::nearbyint(x);  // half to even
    return Value(x / p);
  }
  if (n == "abs") {
    if (!v.is_int()) return Value(std::fabs(v.as_double()));
    if (v.as_int() == INT64_MIN) throw Error(w + ": integer overflow: abs(" + std::to_string(v.as_int()) + ")");
    return Value(v.as_int() < 0 ? -v.as_int() : v.as_int());
  }
  if (n == "indent") {
    Value wv = a.get(0, "width", Value(int64_t(4)));
    int64_t width = wv.is_string() ? 0 : std::max<int64_t>(0, wv.as_int());
    check_string_size(size_t(std::min<int64_t>(width, int64_t(1) << 62)), "indent");
    std::string pad = wv.is_string() ? wv.str() : std::string(size_t(width), ' ');
    bool first = a.get(1, "first").truthy(), blank = a.get(2, "blank").truthy();
    std::string s = v.to_string(), r;
    size_t pos = 0;
    bool is_first = true;
    while (pos <= s.size()) {
      size_t e = s.find('\n', pos);
      std::string ln = s.substr(pos, e == std::string::npos ? std::string::npos : e - pos);
      bool padded = (is_first && first) || (!is_first && (blank || !ln.empty()));
      check_string_size(r.size() + (padded ? pad.size() : 0) + ln.size() + 1, "indent");
      charge_bytes(pad.size() + ln.size());
      if (padded) r += pad;
      r += ln;
      if (e == std::string::npos) break;
      r += '\n';
      pos = e + 1;
      is_first = false;
    }
    return Value(r);
  }
  if (n == "wordcount") return Value(int64_t(py_split(v.to_string(), Value(), -1).size()));
  if (n == "center") {
    std::string s = v.to_string();
    int64_t width = a.get(0, "width", Value(int64_t(80))).as_int();
    int64_t len = int64_t(cp_count(s));
    if (len >= width) return Value(s);
    check_string_size(s.size() + size_t(std::min<int64_t>(width - len, int64_t(1) << 62)), "center");
    int64_t total = width - len, left = total / 2 + (total & width & 1);
    return Value(std::string(size_t(left), ' ') + s + std::string(size_t(total - left), ' '));
  }
  if (n == "batch") {
    int64_t size = std::max<int64_t>(1, a.get(0, "linecount").as_int());
    Array r;
    for (auto& item : iterate(v, w)) {
      if (r.empty() || int64_t(r.back().items().size()) == size) r.emplace_back(Array{});
      r.back().push_back(item);
    }
    return Value(std::move(r));
  }
  throw Error(w + ": unknown filter '" + n + "'");
}

std::string join(const std::vector<Value>& items, const std::string& sep, const Value& attribute) {
  std::string r;
  for (size_t i = 0; i < items.size(); ++i) {
    std::string x = (attribute.is_string() ? items[i].get(attribute.str()) : items[i]).to_string();
    check_string_size(r.size() + (i ? sep.size() : 0) + x.size(), "join");
    charge_bytes(sep.size() + x.size());
    if (i) r += sep;
    r += x;
  }
  return r;
}

void add_globals(std::unordered_map<std::string, Value>& g, const std::string& name) {
  g["raise_exception"] = Value(Function([name](Args& a) -> Value {
    throw Error(name + ": raise_exception: " + (a.pos.empty() ? std::string() : a.pos[0].to_string()));
  }));
  g["strftime_now"] = Value(Function([](Args& a) -> Value {
    std::time_t t = std::time(nullptr);
    std::tm tm{};
    localtime_r(&t, &tm);
    char buf[256];
    size_t n = std::strftime(buf, sizeof buf, a.get(0, "format", Value("%Y-%m-%d")).to_string().c_str(), &tm);
    return Value(std::string(buf, n));
  }));
  g["namespace"] = Value(Function([](Args& a) -> Value {
    Value ns = Value::object();
    for (auto& p : a.pos)
      if (p.is_object())
        for (auto& [k, v] : p.members()) ns.set(k, v);
    for (auto& [k, v] : a.kw) ns.set(k, v);
    return ns;
  }));
  g["dict"] = Value(Function([](Args& a) -> Value {
    Value d = Value::object();
    for (auto& p : a.pos)
      if (p.is_object())
        for (auto& [k, v] : p.members()) d.set(k, v);
    for (auto& [k, v] : a.kw) d.set(k, v);
    return d;
  }));
  g["range"] = Value(Function([](Args& a) -> Value {
    int64_t start = 0, stop = 0, step = 1;
    if (a.pos.size() == 1) {
      stop = a.pos[0].as_int();
    } else if (a.pos.size() >= 2) {
      start = a.pos[0].as_int();
      stop = a.pos[1].as_int();
      if (a.pos.size() > 2) step = a.pos[2].as_int();
    } else {
      throw Error(a.where + ": range needs arguments");
    }
    if (step == 0) throw Error(a.where + ": range step is zero");
    // The count first, in unsigned 64-bit arithmetic: neither the bound nor the stepping can
    // overflow (the items themselves lie between start and stop).
    bool up = step > 0;
    uint64_t span = up ? (stop > start ? uint64_t(stop) - uint64_t(start) : 0)
                       : (start > stop ? uint64_t(start) - uint64_t(stop) : 0);
    uint64_t mag = up ? uint64_t(step) : uint64_t(0) - uint64_t(step);
    uint64_t count = span == 0 ? 0 : (span - 1) / mag + 1;
    int64_t max = active_limits().range_items;
    if (count > uint64_t(max))
      throw Error(a.where + ": range of " + std::to_string(count) + " items exceeds the limit of " +
                  std::to_string(max) + " (jinja::kMaxRangeItems)");
    charge_steps(count);
    Array r;
    r.reserve(size_t(count));
    for (uint64_t k = 0; k < count; ++k) r.emplace_back(int64_t(uint64_t(start) + k * uint64_t(step)));
    return Value(std::move(r));
  }));
}

}  // namespace wgc::llm::jinja
