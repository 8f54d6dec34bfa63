#include "llm/chat/jinja.h"

#include "llm/tokenizer/unicode.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <ctime>
#include <map>
#include <unordered_map>

namespace wgc::llm::jinja {

// ================================================================================================
// Values
// ================================================================================================

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

void json_string(std::string& out, const std::string& s) {
  // json.dumps(ensure_ascii=False)
  out += '"';
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char b[8];
          std::snprintf(b, sizeof b, "\\u%04x", static_cast<unsigned char>(c));
          out += b;
        } else {
          out += c;
        }
    }
  }
  out += '"';
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
    case Value::Kind::String: json_string(out, v.str()); break;
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
        json_string(out, m[i]->first);
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

// ================================================================================================
// Lexer
// ================================================================================================

namespace {

enum class Tok { Name, Int, Float, String, Op, End };

struct Token {
  Tok type;
  std::string text;
  int line;
};

struct Chunk {
  enum Kind { Text, Expr, Stmt } kind;
  std::string text;           // Text
  std::vector<Token> tokens;  // Expr / Stmt
  int line;
};

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
bool is_ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_ident(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

class Lexer {
 public:
  Lexer(std::string_view src, const std::string& name) : s_(src), name_(name) {}

  std::vector<Chunk> run() {
    std::vector<Chunk> out;
    size_t pos = 0;
    int line = 1;
    bool strip_next = false;    // the previous tag ended with '-'
    bool line_starting = true;  // the text begins a line (for lstrip_blocks)
    while (pos <= s_.size()) {
      size_t open = find_open(pos);
      std::string text(s_.substr(pos, open - pos));
      if (strip_next) {
        size_t k = 0;
        while (k < text.size() && is_space(text[k])) ++k;
        if (k > 0 && text[k - 1] == '\n') line_starting = true;
        text.erase(0, k);
      }
      if (open == s_.size()) {
        push_text(out, std::move(text), line);
        break;
      }
      char kind = s_[open + 1];  // '{', '%' or '#'
      size_t inner = open + 2;
      char lflag = inner < s_.size() && (s_[inner] == '-' || s_[inner] == '+') ? s_[inner] : 0;
      if (lflag) ++inner;
      if (lflag == '-') {
        size_t k = text.size();
        while (k > 0 && is_space(text[k - 1])) --k;
        text.resize(k);
      } else if (lflag != '+' && kind != '{') {
        // lstrip_blocks: whitespace from the start of the line to the tag goes.
        size_t nl = text.rfind('\n');
        size_t from = nl == std::string::npos ? 0 : nl + 1;
        if (nl != std::string::npos || line_starting) {
          bool blank = std::all_of(text.begin() + long(from), text.end(), [](char c) { return c == ' ' || c == '\t'; });
          if (blank) text.resize(from);
        }
      }
      int text_line = line;
      line += int(std::count(s_.begin() + long(pos), s_.begin() + long(open), '\n'));
      push_text(out, std::move(text), text_line);
      int tag_line = line;

      size_t close;  // index of the closing "}}" / "%}" / "#}" (after any flag)
      char rflag = 0;
      if (kind == '#') {
        size_t e = s_.find("#}", inner);
        if (e == std::string::npos) fail(tag_line, "unclosed comment");
        close = e;
        if (close > inner && (s_[close - 1] == '-' || s_[close - 1] == '+')) rflag = s_[close - 1];
      } else {
        Chunk c{kind == '{' ? Chunk::Expr : Chunk::Stmt, "", {}, tag_line};
        int tok_line = tag_line;
        close = lex_tag(inner, kind == '{' ? '}' : '%', c.tokens, tok_line, rflag);
        if (c.kind == Chunk::Stmt && !c.tokens.empty() && c.tokens[0].type == Tok::Name && c.tokens[0].text == "raw") {
          // {% raw %} ... {% endraw %}: verbatim.
          size_t after = close + 2;
          size_t e = find_endraw(after);
          if (e == std::string::npos) fail(tag_line, "unclosed raw block");
          push_text(out, std::string(s_.substr(after, e - after)), tag_line);
          close = s_.find("%}", e);
          rflag = close > 0 && s_[close - 1] == '-' ? '-' : 0;
        } else {
          c.tokens.push_back(Token{Tok::End, "", tok_line});
          out.push_back(std::move(c));
        }
      }
      line += int(std::count(s_.begin() + long(open), s_.begin() + long(close), '\n'));
      pos = close + 2;
      strip_next = rflag == '-';
      line_starting = false;
      // trim_blocks: the first newline after a block or comment tag goes.
      if (kind != '{' && rflag != '+' && !strip_next && pos < s_.size() && s_[pos] == '\n') {
        ++pos;
        ++line;
        line_starting = true;
      } else if (kind != '{' && rflag != '+' && !strip_next && pos + 1 < s_.size() && s_[pos] == '\r' &&
                 s_[pos + 1] == '\n') {
        pos += 2;
        ++line;
        line_starting = true;
      }
      if (pos > s_.size()) break;
      if (pos == s_.size()) break;
    }
    return out;
  }

 private:
  std::string_view s_;
  const std::string& name_;

  [[noreturn]] void fail(int line, const std::string& what) const {
    throw Error(name_ + ":" + std::to_string(line) + ": " + what);
  }

  static void push_text(std::vector<Chunk>& out, std::string text, int line) {
    if (!text.empty()) out.push_back(Chunk{Chunk::Text, std::move(text), {}, line});
  }

  size_t find_open(size_t pos) const {
    while (true) {
      size_t p = s_.find('{', pos);
      if (p == std::string::npos || p + 1 >= s_.size()) return s_.size();
      char c = s_[p + 1];
      if (c == '{' || c == '%' || c == '#') return p;
      pos = p + 1;
    }
  }

  size_t find_endraw(size_t pos) const {
    while (true) {
      size_t p = s_.find("{%", pos);
      if (p == std::string::npos) return p;
      size_t q = p + 2;
      if (q < s_.size() && (s_[q] == '-' || s_[q] == '+')) ++q;
      while (q < s_.size() && is_space(s_[q])) ++q;
      if (s_.compare(q, 6, "endraw") == 0) return p;
      pos = p + 2;
    }
  }

  // Tokens of a tag up to its closing delimiter; returns the index of the delimiter.
  size_t lex_tag(size_t i, char closer, std::vector<Token>& toks, int& line, char& rflag) {
    int depth = 0;  // brackets: a '}' inside a dict literal does not close an expression
    while (true) {
      while (i < s_.size() && is_space(s_[i])) {
        if (s_[i] == '\n') ++line;
        ++i;
      }
      if (i >= s_.size()) fail(line, std::string("unclosed tag, expected '") + closer + "}'");
      char c = s_[i];
      if ((c == '-' || c == '+') && i + 2 < s_.size() + 1 && s_.compare(i + 1, 2, std::string(1, closer) + "}") == 0 &&
          depth == 0) {
        rflag = c;
        return i + 1;
      }
      if (c == closer && i + 1 < s_.size() && s_[i + 1] == '}' && depth == 0) return i;
      if (is_ident_start(c)) {
        size_t b = i;
        while (i < s_.size() && is_ident(s_[i])) ++i;
        toks.push_back({Tok::Name, std::string(s_.substr(b, i - b)), line});
      } else if (std::isdigit(static_cast<unsigned char>(c))) {
        size_t b = i;
        bool is_float = false;
        while (i < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[i])) || s_[i] == '_')) ++i;
        if (i + 1 < s_.size() && s_[i] == '.' && std::isdigit(static_cast<unsigned char>(s_[i + 1]))) {
          is_float = true;
          ++i;
          while (i < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i]))) ++i;
        }
        if (i < s_.size() && (s_[i] == 'e' || s_[i] == 'E')) {
          size_t j = i + 1;
          if (j < s_.size() && (s_[j] == '+' || s_[j] == '-')) ++j;
          if (j < s_.size() && std::isdigit(static_cast<unsigned char>(s_[j]))) {
            is_float = true;
            i = j;
            while (i < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i]))) ++i;
          }
        }
        std::string num(s_.substr(b, i - b));
        num.erase(std::remove(num.begin(), num.end(), '_'), num.end());
        toks.push_back({is_float ? Tok::Float : Tok::Int, num, line});
      } else if (c == '\'' || c == '"') {
        toks.push_back({Tok::String, lex_string(i, line), line});
      } else {
        static const char* ops[] = {"**", "//", "==", "!=", "<=", ">=", "<", ">", "+", "-", "*", "/", "%",
                                    "~",  "(",  ")",  "[",  "]",  "{",  "}", ",", ".", ":", "|", "=", "!"};
        bool ok = false;
        for (const char* op : ops) {
          size_t n = std::strlen(op);
          if (s_.compare(i, n, op) == 0) {
            toks.push_back({Tok::Op, op, line});
            if (c == '(' || c == '[' || c == '{') ++depth;
            if (c == ')' || c == ']' || c == '}') --depth;
            i += n;
            ok = true;
            break;
          }
        }
        if (!ok) fail(line, std::string("unexpected character '") + c + "'");
      }
    }
  }

  std::string lex_string(size_t& i, int& line) {
    char q = s_[i++];
    std::string out;
    while (true) {
      if (i >= s_.size()) fail(line, "unterminated string");
      char c = s_[i++];
      if (c == q) break;
      if (c == '\n') ++line;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (i >= s_.size()) fail(line, "unterminated string");
      char e = s_[i++];
      switch (e) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'v': out += '\v'; break;
        case '0': out += '\0'; break;
        case '\\': out += '\\'; break;
        case '\'': out += '\''; break;
        case '"': out += '"'; break;
        case '\n': ++line; break;
        case 'x':
        case 'u':
        case 'U': {
          size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          if (i + n > s_.size()) fail(line, "bad escape in string");
          uint32_t cp = 0;
          auto r = std::from_chars(s_.data() + i, s_.data() + i + n, cp, 16);
          if (r.ptr != s_.data() + i + n) fail(line, "bad escape in string");
          i += n;
          unicode::append_utf8(out, char32_t(cp));
          break;
        }
        default: out += '\\'; out += e;
      }
    }
    return out;
  }
};

// ================================================================================================
// AST
// ================================================================================================

struct Expr;
using ExprP = std::unique_ptr<Expr>;

struct Expr {
  enum Kind {
    Literal,
    Name,
    List,
    Dict,
    Tuple,
    Attr,
    Item,
    Slice,
    Call,
    Filter,
    Test,
    Unary,
    Binary,
    And,
    Or,
    Not,
    Cond,
    Compare
  } kind;
  int line = 0;
  Value value;                                        // Literal
  std::string name;                                   // Name, Attr, Filter, Test; op for Unary/Binary
  ExprP a, b, c;                                      // operands: Attr/Item/Slice(a[b:c:d]) object=a
  ExprP d;                                            // Slice step
  std::vector<ExprP> items;                           // List/Tuple/Call args/Filter args/Dict keys
  std::vector<ExprP> values;                          // Dict values
  std::vector<std::pair<std::string, ExprP>> kwargs;  // Call/Filter/Test
  std::vector<std::string> ops;                       // Compare: ops between items
  bool negated = false;                               // Test: is not
};

struct Node;
using NodeP = std::unique_ptr<Node>;
using Body = std::vector<NodeP>;

struct Node {
  enum Kind { Text, Output, If, For, Set, SetBlock, Macro, FilterBlock, Break, Continue, Call } kind;
  int line = 0;
  std::string text;                                   // Text
  ExprP expr;                                         // Output, Set value, For iterable, Call expr
  std::vector<std::pair<ExprP, Body>> branches;       // If: (cond or null for else, body)
  std::vector<std::string> targets;                   // For/Set/SetBlock names (Set: "ns.attr")
  ExprP cond;                                         // For ... if cond
  Body body, else_body;                               // For, SetBlock, Macro, FilterBlock
  std::string name;                                   // Macro/FilterBlock filter name
  std::vector<std::pair<std::string, ExprP>> params;  // Macro params with defaults
  ExprP filter_call;                                  // FilterBlock: filter with args (a = null)
};

// ================================================================================================
// Parser
// ================================================================================================

class Parser {
 public:
  Parser(std::vector<Chunk> chunks, const std::string& name) : chunks_(std::move(chunks)), name_(name) {}

  Body parse() {
    Body body = parse_body({});
    if (ci_ < chunks_.size()) fail(chunks_[ci_].line, "unexpected '" + chunks_[ci_].tokens[0].text + "'");
    return body;
  }

 private:
  std::vector<Chunk> chunks_;
  const std::string& name_;
  size_t ci_ = 0;  // current chunk
  std::vector<Token>* toks_ = nullptr;
  size_t ti_ = 0;  // token in the current tag

  [[noreturn]] void fail(int line, const std::string& what) const {
    throw Error(name_ + ":" + std::to_string(line) + ": " + what);
  }

  // --- tags ---
  const Token& peek(size_t k = 0) const { return (*toks_)[std::min(ti_ + k, toks_->size() - 1)]; }
  const Token& next() {
    const Token& t = peek();
    if (ti_ < toks_->size() - 1) ++ti_;
    return t;
  }
  bool at_op(const char* op) const { return peek().type == Tok::Op && peek().text == op; }
  bool at_name(const char* n) const { return peek().type == Tok::Name && peek().text == n; }
  bool accept_op(const char* op) {
    if (!at_op(op)) return false;
    next();
    return true;
  }
  bool accept_name(const char* n) {
    if (!at_name(n)) return false;
    next();
    return true;
  }
  void expect_op(const char* op) {
    if (!accept_op(op)) fail(peek().line, std::string("expected '") + op + "', got '" + peek().text + "'");
  }
  std::string expect_name() {
    if (peek().type != Tok::Name) fail(peek().line, "expected a name, got '" + peek().text + "'");
    return next().text;
  }
  void expect_end() {
    if (peek().type != Tok::End) fail(peek().line, "unexpected '" + peek().text + "' at the end of the tag");
  }

  // The keyword of the statement chunk at `i` ("" for other chunks).
  std::string keyword(size_t i) const {
    if (i >= chunks_.size() || chunks_[i].kind != Chunk::Stmt || chunks_[i].tokens.empty()) return "";
    return chunks_[i].tokens[0].text;
  }

  Body parse_body(const std::vector<std::string>& enders) {
    Body body;
    while (ci_ < chunks_.size()) {
      Chunk& c = chunks_[ci_];
      if (c.kind == Chunk::Text) {
        auto n = std::make_unique<Node>();
        n->kind = Node::Text;
        n->text = c.text;
        n->line = c.line;
        body.push_back(std::move(n));
        ++ci_;
        continue;
      }
      toks_ = &c.tokens;
      ti_ = 0;
      if (c.kind == Chunk::Expr) {
        auto n = std::make_unique<Node>();
        n->kind = Node::Output;
        n->line = c.line;
        n->expr = parse_expr();
        expect_end();
        body.push_back(std::move(n));
        ++ci_;
        continue;
      }
      std::string kw = keyword(ci_);
      if (std::find(enders.begin(), enders.end(), kw) != enders.end()) return body;
      body.push_back(parse_stmt());
    }
    if (!enders.empty()) fail(chunks_.empty() ? 1 : chunks_.back().line, "missing '{% " + enders.back() + " %}'");
    return body;
  }

  void begin_chunk() {
    toks_ = &chunks_[ci_].tokens;
    ti_ = 1;  // after the keyword
  }

  NodeP parse_stmt() {
    Chunk& c = chunks_[ci_];
    int line = c.line;
    std::string kw = c.tokens[0].text;
    begin_chunk();
    auto n = std::make_unique<Node>();
    n->line = line;
    if (kw == "if") {
      n->kind = Node::If;
      ExprP cond = parse_expr();
      expect_end();
      ++ci_;
      while (true) {
        Body b = parse_body({"elif", "else", "endif"});
        n->branches.emplace_back(std::move(cond), std::move(b));
        std::string k = keyword(ci_);
        begin_chunk();
        if (k == "elif") {
          cond = parse_expr();
          expect_end();
          ++ci_;
        } else if (k == "else") {
          expect_end();
          ++ci_;
          Body eb = parse_body({"endif"});
          n->branches.emplace_back(nullptr, std::move(eb));
          begin_chunk();
          expect_end();
          ++ci_;
          break;
        } else {
          expect_end();
          ++ci_;
          break;
        }
      }
    } else if (kw == "for") {
      n->kind = Node::For;
      n->targets.push_back(expect_name());
      while (accept_op(",")) n->targets.push_back(expect_name());
      if (!accept_name("in")) fail(line, "expected 'in' in for");
      n->expr = parse_expr(false);
      if (accept_name("if")) n->cond = parse_expr(false);
      accept_name("recursive");
      expect_end();
      ++ci_;
      n->body = parse_body({"else", "endfor"});
      if (keyword(ci_) == "else") {
        begin_chunk();
        expect_end();
        ++ci_;
        n->else_body = parse_body({"endfor"});
      }
      begin_chunk();
      expect_end();
      ++ci_;
    } else if (kw == "set") {
      std::string target = expect_name();
      if (accept_op(".")) target += "." + expect_name();
      std::vector<std::string> targets{target};
      while (accept_op(",")) targets.push_back(expect_name());
      if (accept_op("=")) {
        n->kind = Node::Set;
        n->targets = targets;
        n->expr = parse_expr();
        expect_end();
        ++ci_;
      } else {
        n->kind = Node::SetBlock;
        n->targets = targets;
        if (accept_op("|")) n->filter_call = parse_filter_tail(nullptr);
        expect_end();
        ++ci_;
        n->body = parse_body({"endset"});
        begin_chunk();
        expect_end();
        ++ci_;
      }
    } else if (kw == "macro") {
      n->kind = Node::Macro;
      n->name = expect_name();
      expect_op("(");
      while (!accept_op(")")) {
        std::string p = expect_name();
        ExprP def;
        if (accept_op("=")) def = parse_expr();
        n->params.emplace_back(p, std::move(def));
        if (!at_op(")")) expect_op(",");
      }
      expect_end();
      ++ci_;
      n->body = parse_body({"endmacro"});
      begin_chunk();
      expect_end();
      ++ci_;
    } else if (kw == "filter") {
      n->kind = Node::FilterBlock;
      n->filter_call = parse_filter_tail(nullptr);
      expect_end();
      ++ci_;
      n->body = parse_body({"endfilter"});
      begin_chunk();
      expect_end();
      ++ci_;
    } else if (kw == "generation") {  // transformers' AssistantTracker: renders its body
      n->kind = Node::FilterBlock;
      expect_end();
      ++ci_;
      n->body = parse_body({"endgeneration"});
      begin_chunk();
      expect_end();
      ++ci_;
    } else if (kw == "break" || kw == "continue") {
      n->kind = kw == "break" ? Node::Break : Node::Continue;
      expect_end();
      ++ci_;
    } else if (kw == "do") {
      n->kind = Node::Call;
      n->expr = parse_expr();
      expect_end();
      ++ci_;
    } else {
      fail(line, "unknown or unsupported tag '" + kw + "'");
    }
    return n;
  }

  // --- expressions (Jinja2's precedence) ---
  ExprP make(Expr::Kind k, int line) {
    auto e = std::make_unique<Expr>();
    e->kind = k;
    e->line = line;
    return e;
  }

  ExprP parse_expr(bool with_cond = true) {
    ExprP e = parse_or();
    if (with_cond && at_name("if")) {
      int line = next().line;
      auto c = make(Expr::Cond, line);
      c->b = parse_or();  // condition
      c->a = std::move(e);
      if (accept_name("else")) c->c = parse_expr();
      return c;
    }
    return e;
  }
  ExprP parse_or() {
    ExprP e = parse_and();
    while (at_name("or")) {
      auto n = make(Expr::Or, next().line);
      n->a = std::move(e);
      n->b = parse_and();
      e = std::move(n);
    }
    return e;
  }
  ExprP parse_and() {
    ExprP e = parse_not();
    while (at_name("and")) {
      auto n = make(Expr::And, next().line);
      n->a = std::move(e);
      n->b = parse_not();
      e = std::move(n);
    }
    return e;
  }
  ExprP parse_not() {
    if (at_name("not")) {
      auto n = make(Expr::Not, next().line);
      n->a = parse_not();
      return n;
    }
    return parse_compare();
  }
  ExprP parse_compare() {
    ExprP e = parse_math1();
    ExprP cmp;
    while (true) {
      std::string op;
      if (peek().type == Tok::Op &&
          (at_op("==") || at_op("!=") || at_op("<") || at_op(">") || at_op("<=") || at_op(">="))) {
        op = next().text;
      } else if (at_name("in")) {
        next();
        op = "in";
      } else if (at_name("not") && peek(1).type == Tok::Name && peek(1).text == "in") {
        next();
        next();
        op = "not in";
      } else {
        break;
      }
      if (!cmp) {
        cmp = make(Expr::Compare, e->line);
        cmp->items.push_back(std::move(e));
      }
      cmp->ops.push_back(op);
      cmp->items.push_back(parse_math1());
    }
    return cmp ? std::move(cmp) : std::move(e);
  }
  ExprP binary(std::string op, ExprP l, ExprP r, int line) {
    auto n = make(Expr::Binary, line);
    n->name = std::move(op);
    n->a = std::move(l);
    n->b = std::move(r);
    return n;
  }
  ExprP parse_math1() {
    ExprP e = parse_concat();
    while (at_op("+") || at_op("-")) {
      const Token& t = next();
      e = binary(t.text, std::move(e), parse_concat(), t.line);
    }
    return e;
  }
  ExprP parse_concat() {
    ExprP e = parse_math2();
    while (at_op("~")) {
      int line = next().line;
      e = binary("~", std::move(e), parse_math2(), line);
    }
    return e;
  }
  ExprP parse_math2() {
    ExprP e = parse_pow();
    while (at_op("*") || at_op("/") || at_op("//") || at_op("%")) {
      const Token& t = next();
      e = binary(t.text, std::move(e), parse_pow(), t.line);
    }
    return e;
  }
  ExprP parse_pow() {
    ExprP e = parse_unary();
    while (at_op("**")) {
      int line = next().line;
      e = binary("**", std::move(e), parse_unary(), line);
    }
    return e;
  }
  ExprP parse_unary(bool with_filter = true) {
    if (at_op("-") || at_op("+")) {
      const Token& t = next();
      auto n = make(Expr::Unary, t.line);
      n->name = t.text;
      n->a = parse_unary(false);
      return with_filter ? parse_filters(std::move(n)) : std::move(n);
    }
    ExprP e = parse_postfix(parse_primary());
    return with_filter ? parse_filters(std::move(e)) : std::move(e);
  }
  ExprP parse_primary() {
    const Token& t = next();
    switch (t.type) {
      case Tok::Name: {
        if (t.text == "true" || t.text == "True") return literal(Value(true), t.line);
        if (t.text == "false" || t.text == "False") return literal(Value(false), t.line);
        if (t.text == "none" || t.text == "None") return literal(Value(nullptr), t.line);
        auto n = make(Expr::Name, t.line);
        n->name = t.text;
        return n;
      }
      case Tok::Int: return literal(Value(int64_t(std::stoll(t.text))), t.line);
      case Tok::Float: return literal(Value(std::stod(t.text)), t.line);
      case Tok::String: {
        std::string s = t.text;
        while (peek().type == Tok::String) s += next().text;  // adjacent literals concatenate
        return literal(Value(s), t.line);
      }
      case Tok::Op:
        if (t.text == "(") {
          if (accept_op(")")) return make(Expr::Tuple, t.line);
          ExprP e = parse_expr();
          if (at_op(",")) {
            auto tup = make(Expr::Tuple, t.line);
            tup->items.push_back(std::move(e));
            while (accept_op(",")) {
              if (at_op(")")) break;
              tup->items.push_back(parse_expr());
            }
            expect_op(")");
            return tup;
          }
          expect_op(")");
          return e;
        }
        if (t.text == "[") {
          auto l = make(Expr::List, t.line);
          while (!accept_op("]")) {
            l->items.push_back(parse_expr());
            if (!at_op("]")) expect_op(",");
          }
          return l;
        }
        if (t.text == "{") {
          auto d = make(Expr::Dict, t.line);
          while (!accept_op("}")) {
            d->items.push_back(parse_expr());
            expect_op(":");
            d->values.push_back(parse_expr());
            if (!at_op("}")) expect_op(",");
          }
          return d;
        }
        break;
      default: break;
    }
    fail(t.line, t.type == Tok::End ? "unexpected end of expression" : "unexpected '" + t.text + "'");
  }
  ExprP literal(Value v, int line) {
    auto n = make(Expr::Literal, line);
    n->value = std::move(v);
    return n;
  }
  void parse_call_args(Expr& call) {
    while (!accept_op(")")) {
      if (peek().type == Tok::Name && peek(1).type == Tok::Op && peek(1).text == "=") {
        std::string k = next().text;
        next();
        call.kwargs.emplace_back(k, parse_expr());
      } else {
        call.items.push_back(parse_expr());
      }
      if (!at_op(")")) expect_op(",");
    }
  }
  ExprP parse_postfix(ExprP e) {
    while (true) {
      if (at_op(".")) {
        int line = next().line;
        auto n = make(Expr::Attr, line);
        if (peek().type == Tok::Int) {  // x.0
          n->kind = Expr::Item;
          n->b = literal(Value(int64_t(std::stoll(next().text))), line);
        } else {
          n->name = expect_name();
        }
        n->a = std::move(e);
        e = std::move(n);
      } else if (at_op("[")) {
        int line = next().line;
        ExprP start, stop, step;
        bool slice = false;
        if (!at_op(":")) start = parse_expr();
        if (accept_op(":")) {
          slice = true;
          if (!at_op("]") && !at_op(":")) stop = parse_expr();
          if (accept_op(":") && !at_op("]")) step = parse_expr();
        }
        expect_op("]");
        auto n = make(slice ? Expr::Slice : Expr::Item, line);
        n->a = std::move(e);
        n->b = std::move(start);
        n->c = std::move(stop);
        n->d = std::move(step);
        e = std::move(n);
      } else if (at_op("(")) {
        int line = next().line;
        auto n = make(Expr::Call, line);
        n->a = std::move(e);
        parse_call_args(*n);
        e = std::move(n);
      } else {
        return e;
      }
    }
  }
  // After '|': name [(args)] applied to `subject`.
  ExprP parse_filter_tail(ExprP subject) {
    int line = peek().line;
    auto f = make(Expr::Filter, line);
    f->name = expect_name();
    while (accept_op(".")) f->name += "." + expect_name();
    f->a = std::move(subject);
    if (accept_op("(")) parse_call_args(*f);
    return f;
  }
  ExprP parse_filters(ExprP e) {
    while (true) {
      if (accept_op("|")) {
        e = parse_filter_tail(std::move(e));
      } else if (at_name("is")) {
        int line = next().line;
        auto t = make(Expr::Test, line);
        t->negated = accept_name("not");
        t->name = expect_name();
        t->a = std::move(e);
        if (accept_op("(")) {
          parse_call_args(*t);
        } else if (peek().type == Tok::String || peek().type == Tok::Int || peek().type == Tok::Float || at_op("[") ||
                   at_op("{") ||
                   (peek().type == Tok::Name && !at_name("and") && !at_name("or") && !at_name("else") &&
                    !at_name("if") && !at_name("in") && !at_name("not") && !at_name("is"))) {
          t->items.push_back(parse_postfix(parse_primary()));
        }
        e = std::move(t);
      } else {
        return e;
      }
    }
  }
};

// ================================================================================================
// Interpreter
// ================================================================================================

enum class Flow { Normal, Break, Continue };

size_t cp_count(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

std::vector<std::string> code_points(const std::string& s) {
  std::vector<std::string> out;
  for (size_t i = 0; i < s.size();) {
    size_t n = std::min(unicode::utf8_len(static_cast<unsigned char>(s[i])), s.size() - i);
    out.push_back(s.substr(i, n));
    i += n;
  }
  return out;
}

bool py_space(char32_t c) { return unicode::is_whitespace(c) || (c >= 0x1C && c <= 0x1F); }

std::string strip(const std::string& s, const Value& chars, bool left, bool right) {
  std::vector<std::string> cps = code_points(s);
  std::vector<std::string> set;
  bool ws = chars.is_undefined() || chars.is_none();
  if (!ws) set = code_points(chars.to_string());
  auto strip_it = [&](const std::string& c) {
    if (ws) {
      size_t i = 0;
      return py_space(unicode::next_codepoint(c, i));
    }
    return std::find(set.begin(), set.end(), c) != set.end();
  };
  size_t b = 0, e = cps.size();
  if (left)
    while (b < e && strip_it(cps[b])) ++b;
  if (right)
    while (e > b && strip_it(cps[e - 1])) --e;
  std::string out;
  for (size_t i = b; i < e; ++i) out += cps[i];
  return out;
}

std::string ascii_map(std::string s, int (*f)(int)) {
  for (auto& c : s)
    if (static_cast<unsigned char>(c) < 0x80) c = char(f(c));
  return s;
}

std::string title_case(const std::string& s) {
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
  std::vector<std::string> out;
  if (sep.is_undefined() || sep.is_none()) {
    size_t i = 0;
    while (true) {
      while (i < s.size() && is_space(s[i])) ++i;
      if (i >= s.size()) break;
      if (maxsplit >= 0 && int64_t(out.size()) == maxsplit) {
        size_t e = s.size();
        while (e > i && is_space(s[e - 1])) --e;
        out.push_back(s.substr(i, e - i));
        break;
      }
      size_t j = i;
      while (j < s.size() && !is_space(s[j])) ++j;
      out.push_back(s.substr(i, j - i));
      i = j;
    }
    return out;
  }
  std::string d = sep.to_string();
  if (d.empty()) throw Error("split: empty separator");
  size_t pos = 0;
  while (true) {
    if (maxsplit >= 0 && int64_t(out.size()) == maxsplit) break;
    size_t hit = s.find(d, pos);
    if (hit == std::string::npos) break;
    out.push_back(s.substr(pos, hit - pos));
    pos = hit + d.size();
  }
  out.push_back(s.substr(pos));
  return out;
}

std::string replace_str(const std::string& s, const std::string& from, const std::string& to, int64_t count) {
  if (from.empty()) return s;
  std::string out;
  size_t pos = 0;
  int64_t n = 0;
  while (count < 0 || n < count) {
    size_t hit = s.find(from, pos);
    if (hit == std::string::npos) break;
    out.append(s, pos, hit - pos);
    out += to;
    pos = hit + from.size();
    ++n;
  }
  out.append(s, pos);
  return out;
}

// Python slicing indices for a sequence of length n.
std::vector<size_t> slice_indices(int64_t n, const Value& start, const Value& stop, const Value& step_v) {
  int64_t step = step_v.is_undefined() || step_v.is_none() ? 1 : step_v.as_int();
  if (step == 0) throw Error("slice step cannot be zero");
  auto norm = [&](const Value& v, int64_t def) -> int64_t {
    if (v.is_undefined() || v.is_none()) return def;
    int64_t x = v.as_int();
    if (x < 0) x += n;
    if (step > 0) return std::clamp<int64_t>(x, 0, n);
    return std::clamp<int64_t>(x, -1, n - 1);
  };
  int64_t b = norm(start, step > 0 ? 0 : n - 1), e = norm(stop, step > 0 ? n : -1);
  std::vector<size_t> out;
  if (step > 0)
    for (int64_t i = b; i < e; i += step) out.push_back(size_t(i));
  else
    for (int64_t i = b; i > e; i += step) out.push_back(size_t(i));
  return out;
}

int compare_values(const Value& a, const Value& b, const std::string& where) {
  if ((a.is_number() || a.is_bool()) && (b.is_number() || b.is_bool())) {
    double x = a.as_double(), y = b.as_double();
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (a.is_string() && b.is_string()) return a.str().compare(b.str()) < 0 ? -1 : a.str() == b.str() ? 0 : 1;
  if (a.is_array() && b.is_array()) {
    for (size_t i = 0; i < std::min(a.items().size(), b.items().size()); ++i)
      if (int c = compare_values(a.items()[i], b.items()[i], where)) return c;
    return a.items().size() < b.items().size() ? -1 : a.items().size() > b.items().size() ? 1 : 0;
  }
  throw Error(where + ": cannot compare " + a.repr() + " with " + b.repr());
}

bool contains(const Value& container, const Value& x, const std::string& where) {
  if (container.is_string()) {
    if (!x.is_string()) throw Error(where + ": 'in <string>' needs a string on the left");
    return container.str().find(x.str()) != std::string::npos;
  }
  if (container.is_array())
    return std::find(container.items().begin(), container.items().end(), x) != container.items().end();
  if (container.is_object()) return x.is_string() && container.find(x.str()) != nullptr;
  if (container.is_undefined() || container.is_none()) return false;
  throw Error(where + ": 'in' needs a string, list or dict, got " + container.repr());
}

// Elements when iterating: arrays, object keys, string characters.
std::vector<Value> iterate(const Value& v, const std::string& where) {
  std::vector<Value> out;
  if (v.is_array()) return v.items();
  if (v.is_object()) {
    for (auto& [k, x] : v.members()) out.emplace_back(k);
    return out;
  }
  if (v.is_string()) {
    for (auto& c : code_points(v.str())) out.emplace_back(c);
    return out;
  }
  if (v.is_undefined() || v.is_none()) return out;
  throw Error(where + ": " + v.repr() + " is not iterable");
}

struct Macro {
  const Node* node;
};

}  // namespace

struct Template::Impl {
  std::string name;
  Body body;

  struct Frame {
    std::vector<std::unordered_map<std::string, Value>> scopes;
  };

  std::string where(int line) const { return name + ":" + std::to_string(line); }

  Value lookup(Frame& f, const std::string& n) const {
    for (auto it = f.scopes.rbegin(); it != f.scopes.rend(); ++it) {
      auto v = it->find(n);
      if (v != it->end()) return v->second;
    }
    return Value();
  }

  Value eval(Frame& f, const Expr& e) const;
  Value call_filter(Frame& f, const std::string& name, Value subject, Args& args, int line) const;
  bool run_test(Frame& f, const std::string& name, const Value& v, Args& args, int line) const;
  Value call_method(const Value& obj, const std::string& m, Args& args, int line, bool& found) const;
  Flow exec(Frame& f, const Body& nodes, std::string& out) const;
  Value make_macro(Frame& f, const Node& n) const;

  Args eval_args(Frame& f, const Expr& e) const {
    Args a;
    a.where = where(e.line);
    for (auto& x : e.items) a.pos.push_back(eval(f, *x));
    for (auto& [k, x] : e.kwargs) a.kw.emplace_back(k, eval(f, *x));
    return a;
  }
};

Value Template::Impl::make_macro(Frame& f, const Node& n) const {
  const Node* node = &n;
  auto globals = f.scopes.front();
  return Value(Function([this, node, globals](Args& args) -> Value {
    Frame mf;
    mf.scopes.push_back(globals);
    mf.scopes.emplace_back();
    auto& local = mf.scopes.back();
    for (size_t i = 0; i < node->params.size(); ++i) {
      const auto& [pname, def] = node->params[i];
      Value v = args.get(i, pname);
      if (v.is_undefined() && def) v = eval(mf, *def);
      local[pname] = v;
    }
    std::string out;
    exec(mf, node->body, out);
    return Value(out);
  }));
}

Value Template::Impl::call_method(const Value& obj, const std::string& m, Args& a, int line, bool& found) const {
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
    if (m == "center") {
      Frame none;
      return call_filter(none, "center", obj, a, line);
    }
    if (m == "join") {
      std::string r;
      auto items = iterate(a.get(0, "iterable"), w);
      for (size_t i = 0; i < items.size(); ++i) r += (i ? s : "") + items[i].to_string();
      return Value(r);
    }
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
      if (o.is_object())
        for (auto& [k, v] : o.members()) target.set(k, v);
      for (auto& [k, v] : a.kw) target.set(k, v);
      return Value(nullptr);
    }
  } else if (obj.is_array()) {
    if (m == "append") {
      obj.items().push_back(a.get(0, "x"));
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
    return d != 0 && v.as_int() % d == 0;
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
    return Value(v.to_json_text(ind.is_number() ? int(ind.as_int()) : -1, a.get(1, "sort_keys").truthy()));
  }
  if (n == "upper") return Value(ascii_map(v.to_string(), ::toupper));
  if (n == "lower") return Value(ascii_map(v.to_string(), ::tolower));
  if (n == "title") return Value(title_case(v.to_string()));
  if (n == "capitalize") {
    std::string s = v.to_string();
    return Value(s.empty() ? s : ascii_map(s.substr(0, 1), ::toupper) + ascii_map(s.substr(1), ::tolower));
  }
  if (n == "first" || n == "last") {
    auto items = iterate(v, w);
    if (items.empty()) return Value();
    return n == "first" ? items.front() : items.back();
  }
  if (n == "join") {
    Value attr = a.get(1, "attribute");
    std::string sep = a.get(0, "d", Value("")).to_string(), r;
    auto items = iterate(v, w);
    for (size_t i = 0; i < items.size(); ++i)
      r += (i ? sep : "") + (attr.is_string() ? items[i].get(attr.str()) : items[i]).to_string();
    return Value(r);
  }
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
      if (r2.ec == std::errc() && r2.ptr == s.data() + s.size()) return Value(int64_t(d));
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
      auto cps = code_points(v.str());
      std::string r;
      for (auto it = cps.rbegin(); it != cps.rend(); ++it) r += *it;
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
    std::string r;
    for (char c : v.to_string()) {
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
    Value attr = a.get(99, "attribute");
    for (auto& item : iterate(v, w)) {
      if (attr.is_string()) {
        Value x = item.get(attr.str());
        if (x.is_undefined()) x = a.get(99, "default");
        r.push_back(x);
      } else {
        Args fa;
        fa.where = w;
        for (size_t i = 1; i < a.pos.size(); ++i) fa.pos.push_back(a.pos[i]);
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
      acc =
          (acc.is_float() || x.is_float()) ? Value(acc.as_double() + x.as_double()) : Value(acc.as_int() + x.as_int());
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
  if (n == "abs")
    return v.is_int() ? Value(v.as_int() < 0 ? -v.as_int() : v.as_int()) : Value(std::fabs(v.as_double()));
  if (n == "indent") {
    Value wv = a.get(0, "width", Value(int64_t(4)));
    std::string pad = wv.is_string() ? wv.str() : std::string(size_t(wv.as_int()), ' ');
    bool first = a.get(1, "first").truthy(), blank = a.get(2, "blank").truthy();
    std::string s = v.to_string(), r;
    size_t pos = 0;
    bool is_first = true;
    while (pos <= s.size()) {
      size_t e = s.find('\n', pos);
      std::string ln = s.substr(pos, e == std::string::npos ? std::string::npos : e - pos);
      if ((is_first && first) || (!is_first && (blank || !ln.empty()))) r += pad;
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
    int64_t total = width - len, left = total / 2 + (total & width & 1);
    return Value(std::string(size_t(left), ' ') + s + std::string(size_t(total - left), ' '));
  }
  if (n == "batch") {
    int64_t size = std::max<int64_t>(1, a.get(0, "linecount").as_int());
    Array r;
    for (auto& item : iterate(v, w)) {
      if (r.empty() || int64_t(r.back().items().size()) == size) r.emplace_back(Array{});
      r.back().items().push_back(item);
    }
    return Value(std::move(r));
  }
  throw Error(w + ": unknown filter '" + n + "'");
}

Value Template::Impl::eval(Frame& f, const Expr& e) const {
  switch (e.kind) {
    case Expr::Literal: return e.value;
    case Expr::Name: return lookup(f, e.name);
    case Expr::List:
    case Expr::Tuple: {
      Array a;
      for (auto& x : e.items) a.push_back(eval(f, *x));
      return Value(std::move(a));
    }
    case Expr::Dict: {
      Value o = Value::object();
      for (size_t i = 0; i < e.items.size(); ++i) o.set(eval(f, *e.items[i]).to_string(), eval(f, *e.values[i]));
      return o;
    }
    case Expr::Attr: {
      Value obj = eval(f, *e.a);
      if (obj.is_object()) return obj.get(e.name);
      return Value();
    }
    case Expr::Item: {
      Value obj = eval(f, *e.a);
      Value key = eval(f, *e.b);
      if (obj.is_object()) return key.is_string() ? obj.get(key.str()) : obj.get(key.to_string());
      if (obj.is_array() && (key.is_int() || key.is_bool())) {
        int64_t i = key.as_int(), n = int64_t(obj.items().size());
        if (i < 0) i += n;
        return i >= 0 && i < n ? obj.items()[size_t(i)] : Value();
      }
      if (obj.is_string() && key.is_int()) {
        auto cps = code_points(obj.str());
        int64_t i = key.as_int(), n = int64_t(cps.size());
        if (i < 0) i += n;
        return i >= 0 && i < n ? Value(cps[size_t(i)]) : Value();
      }
      return Value();
    }
    case Expr::Slice: {
      Value obj = eval(f, *e.a);
      Value b = e.b ? eval(f, *e.b) : Value(), c = e.c ? eval(f, *e.c) : Value(), d = e.d ? eval(f, *e.d) : Value();
      if (obj.is_string()) {
        auto cps = code_points(obj.str());
        std::string r;
        for (size_t i : slice_indices(int64_t(cps.size()), b, c, d)) r += cps[i];
        return Value(r);
      }
      if (obj.is_array()) {
        Array r;
        for (size_t i : slice_indices(int64_t(obj.items().size()), b, c, d)) r.push_back(obj.items()[i]);
        return Value(std::move(r));
      }
      if (obj.is_undefined()) return Value();
      throw Error(where(e.line) + ": cannot slice " + obj.repr());
    }
    case Expr::Call: {
      Args args = eval_args(f, e);
      if (e.a->kind == Expr::Attr) {
        Value obj = eval(f, *e.a->a);
        bool found = false;
        if (obj.is_string() || obj.is_array() || obj.is_object()) {
          Value r = call_method(obj, e.a->name, args, e.line, found);
          if (found) return r;
        }
        Value fn = obj.is_object() ? obj.get(e.a->name) : Value();
        if (fn.is_function()) return fn.function()(args);
        throw Error(where(e.line) + ": " + (obj.is_undefined() ? "undefined value" : obj.repr().substr(0, 40)) +
                    " has no method '" + e.a->name + "'");
      }
      Value fn = eval(f, *e.a);
      if (!fn.is_function())
        throw Error(where(e.line) + ": " + (e.a->kind == Expr::Name ? "'" + e.a->name + "'" : std::string("value")) +
                    " is not callable" + (fn.is_undefined() ? " (undefined)" : ""));
      return fn.function()(args);
    }
    case Expr::Filter: {
      Value subject = eval(f, *e.a);
      Args args = eval_args(f, e);
      return call_filter(f, e.name, std::move(subject), args, e.line);
    }
    case Expr::Test: {
      Value v = eval(f, *e.a);
      Args args = eval_args(f, e);
      return Value(run_test(f, e.name, v, args, e.line) != e.negated);
    }
    case Expr::Unary: {
      Value v = eval(f, *e.a);
      if (!v.is_number() && !v.is_bool()) throw Error(where(e.line) + ": unary " + e.name + " on " + v.repr());
      if (e.name == "+") return v;
      return v.is_float() ? Value(-v.as_double()) : Value(-v.as_int());
    }
    case Expr::Not: return Value(!eval(f, *e.a).truthy());
    case Expr::And: {
      Value l = eval(f, *e.a);
      return l.truthy() ? eval(f, *e.b) : l;
    }
    case Expr::Or: {
      Value l = eval(f, *e.a);
      return l.truthy() ? l : eval(f, *e.b);
    }
    case Expr::Cond: {
      if (eval(f, *e.b).truthy()) return eval(f, *e.a);
      return e.c ? eval(f, *e.c) : Value();
    }
    case Expr::Compare: {
      Value l = eval(f, *e.items[0]);
      for (size_t i = 0; i < e.ops.size(); ++i) {
        Value r = eval(f, *e.items[i + 1]);
        const std::string& op = e.ops[i];
        bool ok;
        if (op == "==")
          ok = l == r;
        else if (op == "!=")
          ok = !(l == r);
        else if (op == "in")
          ok = contains(r, l, where(e.line));
        else if (op == "not in")
          ok = !contains(r, l, where(e.line));
        else {
          int c = compare_values(l, r, where(e.line));
          ok = op == "<" ? c < 0 : op == ">" ? c > 0 : op == "<=" ? c <= 0 : c >= 0;
        }
        if (!ok) return Value(false);
        l = std::move(r);
      }
      return Value(true);
    }
    case Expr::Binary: {
      Value l = eval(f, *e.a), r = eval(f, *e.b);
      const std::string& op = e.name;
      std::string w = where(e.line);
      if (op == "~") return Value(l.to_string() + r.to_string());
      if (op == "+") {
        if (l.is_string() && r.is_string()) return Value(l.str() + r.str());
        if (l.is_array() && r.is_array()) {
          Array a = l.items();
          a.insert(a.end(), r.items().begin(), r.items().end());
          return Value(std::move(a));
        }
      }
      if (op == "*" && ((l.is_string() && r.is_int()) || (l.is_int() && r.is_string()))) {
        const Value& s = l.is_string() ? l : r;
        int64_t n = l.is_string() ? r.as_int() : l.as_int();
        std::string out;
        for (int64_t i = 0; i < n; ++i) out += s.str();
        return Value(out);
      }
      if (op == "%" && l.is_string()) {  // "%s" formatting
        std::vector<Value> vals = r.is_array() ? r.items() : std::vector<Value>{r};
        std::string out;
        size_t k = 0;
        const std::string& s = l.str();
        for (size_t i = 0; i < s.size(); ++i) {
          if (s[i] == '%' && i + 1 < s.size()) {
            char c = s[++i];
            if (c == '%') {
              out += '%';
            } else if (k < vals.size()) {
              out += c == 'r' ? vals[k].repr() : vals[k].to_string();
              ++k;
            }
          } else {
            out += s[i];
          }
        }
        return Value(out);
      }
      bool num = (l.is_number() || l.is_bool()) && (r.is_number() || r.is_bool());
      if (!num) throw Error(w + ": unsupported operands for " + op + ": " + l.repr() + " and " + r.repr());
      bool fl = l.is_float() || r.is_float();
      if (op == "+") return fl ? Value(l.as_double() + r.as_double()) : Value(l.as_int() + r.as_int());
      if (op == "-") return fl ? Value(l.as_double() - r.as_double()) : Value(l.as_int() - r.as_int());
      if (op == "*") return fl ? Value(l.as_double() * r.as_double()) : Value(l.as_int() * r.as_int());
      if (op == "/") {
        if (r.as_double() == 0) throw Error(w + ": division by zero");
        return Value(l.as_double() / r.as_double());
      }
      if (op == "//" || op == "%") {
        if (r.as_double() == 0) throw Error(w + ": division by zero");
        if (fl) {
          double q = std::floor(l.as_double() / r.as_double());
          return op == "//" ? Value(q) : Value(l.as_double() - q * r.as_double());
        }
        int64_t a = l.as_int(), b = r.as_int(), q = a / b;
        if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
        return op == "//" ? Value(q) : Value(a - q * b);
      }
      if (op == "**") {
        if (!fl && r.as_int() >= 0) {
          int64_t x = 1;
          for (int64_t i = 0; i < r.as_int(); ++i) x *= l.as_int();
          return Value(x);
        }
        return Value(std::pow(l.as_double(), r.as_double()));
      }
      throw Error(w + ": unknown operator " + op);
    }
  }
  return Value();
}

Flow Template::Impl::exec(Frame& f, const Body& nodes, std::string& out) const {
  for (const auto& np : nodes) {
    const Node& n = *np;
    switch (n.kind) {
      case Node::Text: out += n.text; break;
      case Node::Output: out += eval(f, *n.expr).to_string(); break;
      case Node::Call: eval(f, *n.expr); break;
      case Node::If:
        for (const auto& [cond, b] : n.branches) {
          if (!cond || eval(f, *cond).truthy()) {
            Flow fl = exec(f, b, out);
            if (fl != Flow::Normal) return fl;
            break;
          }
        }
        break;
      case Node::For: {
        std::vector<Value> all = iterate(eval(f, *n.expr), where(n.line));
        std::vector<Value> items;
        if (n.cond) {
          for (auto& x : all) {
            f.scopes.emplace_back();
            if (n.targets.size() == 1) {
              f.scopes.back()[n.targets[0]] = x;
            } else if (x.is_array()) {
              for (size_t k = 0; k < n.targets.size() && k < x.items().size(); ++k)
                f.scopes.back()[n.targets[k]] = x.items()[k];
            }
            bool keep = eval(f, *n.cond).truthy();
            f.scopes.pop_back();
            if (keep) items.push_back(x);
          }
        } else {
          items = std::move(all);
        }
        if (items.empty()) {
          Flow fl = exec(f, n.else_body, out);
          if (fl != Flow::Normal) return fl;
          break;
        }
        size_t len = items.size();
        for (size_t i = 0; i < len; ++i) {
          f.scopes.emplace_back();
          auto& sc = f.scopes.back();
          Value loop = Value::object();
          loop.set("index", Value(int64_t(i + 1)));
          loop.set("index0", Value(int64_t(i)));
          loop.set("revindex", Value(int64_t(len - i)));
          loop.set("revindex0", Value(int64_t(len - i - 1)));
          loop.set("first", Value(i == 0));
          loop.set("last", Value(i + 1 == len));
          loop.set("length", Value(int64_t(len)));
          loop.set("previtem", i > 0 ? items[i - 1] : Value());
          loop.set("nextitem", i + 1 < len ? items[i + 1] : Value());
          loop.set("cycle",
                   Value(Function([i](Args& a) { return a.pos.empty() ? Value() : a.pos[i % a.pos.size()]; })));
          sc["loop"] = loop;
          const Value& x = items[i];
          if (n.targets.size() == 1) {
            sc[n.targets[0]] = x;
          } else {
            if (!x.is_array() || x.items().size() != n.targets.size())
              throw Error(where(n.line) + ": cannot unpack " + x.repr() + " into " + std::to_string(n.targets.size()) +
                          " names");
            for (size_t k = 0; k < n.targets.size(); ++k) sc[n.targets[k]] = x.items()[k];
          }
          Flow fl = exec(f, n.body, out);
          f.scopes.pop_back();
          if (fl == Flow::Break) break;
        }
        break;
      }
      case Node::Set:
      case Node::SetBlock: {
        Value v;
        if (n.kind == Node::Set) {
          v = eval(f, *n.expr);
        } else {
          std::string s;
          exec(f, n.body, s);
          v = Value(s);
          if (n.filter_call) {
            Args args = eval_args(f, *n.filter_call);
            v = call_filter(f, n.filter_call->name, v, args, n.line);
          }
        }
        auto assign = [&](const std::string& target, Value val) {
          size_t dot = target.find('.');
          if (dot == std::string::npos) {
            f.scopes.back()[target] = std::move(val);
            return;
          }
          Value obj = lookup(f, target.substr(0, dot));
          if (!obj.is_object())
            throw Error(where(n.line) + ": cannot set '" + target + "': '" + target.substr(0, dot) +
                        "' is not a namespace");
          obj.set(target.substr(dot + 1), std::move(val));
        };
        if (n.targets.size() == 1) {
          assign(n.targets[0], v);
        } else {
          if (!v.is_array() || v.items().size() != n.targets.size())
            throw Error(where(n.line) + ": cannot unpack " + v.repr());
          for (size_t k = 0; k < n.targets.size(); ++k) assign(n.targets[k], v.items()[k]);
        }
        break;
      }
      case Node::Macro: f.scopes.back()[n.name] = make_macro(f, n); break;
      case Node::FilterBlock: {
        std::string s;
        Flow fl = exec(f, n.body, s);
        if (n.filter_call) {
          Args args = eval_args(f, *n.filter_call);
          s = call_filter(f, n.filter_call->name, Value(s), args, n.line).to_string();
        }
        out += s;
        if (fl != Flow::Normal) return fl;
        break;
      }
      case Node::Break: return Flow::Break;
      case Node::Continue: return Flow::Continue;
    }
  }
  return Flow::Normal;
}

Template::Template(std::string_view source, std::string name) : impl_(std::make_unique<Impl>()) {
  impl_->name = std::move(name);
  // keep_trailing_newline = False: one newline at the very end of the source goes.
  if (source.ends_with("\r\n"))
    source.remove_suffix(2);
  else if (source.ends_with('\n'))
    source.remove_suffix(1);
  Lexer lex(source, impl_->name);
  Parser p(lex.run(), impl_->name);
  impl_->body = p.parse();
}

Template::~Template() = default;
Template::Template(Template&&) noexcept = default;
Template& Template::operator=(Template&&) noexcept = default;

std::string Template::render(const Value& context) const {
  Impl::Frame f;
  f.scopes.emplace_back();
  auto& g = f.scopes.back();
  const std::string name = impl_->name;
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
    Array r;
    for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) r.emplace_back(i);
    return Value(std::move(r));
  }));
  if (context.is_object())
    for (auto& [k, v] : context.members()) g[k] = v;
  std::string out;
  impl_->exec(f, impl_->body, out);
  return out;
}

}  // namespace wgc::llm::jinja
