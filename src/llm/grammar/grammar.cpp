#include "llm/grammar/grammar.h"

#include "util/error.h"

#include <algorithm>
#include <functional>
#include <map>

namespace wgc::llm {

bool GrammarElement::matches(uint32_t cp) const {
  bool in = false;
  for (auto [lo, hi] : ranges)
    if (cp >= lo && cp <= hi) {
      in = true;
      break;
    }
  return in != negated;
}

namespace {

constexpr uint32_t kMaxCodePoint = 0x10FFFF;
constexpr size_t kMaxElements = 1 << 20;  // every alternative of every rule, after expansion

using Seq = std::vector<GrammarElement>;

class Parser {
 public:
  Parser(std::string_view text, const GrammarLimits& lim) : s_(text), lim_(lim) {}

  Grammar parse() {
    if (s_.size() > lim_.max_bytes)
      fail("the grammar has " + std::to_string(s_.size()) + " bytes, more than the limit of " +
           std::to_string(lim_.max_bytes));
    space(true);
    while (i_ < s_.size()) {
      const size_t name_at = i_;
      const std::string name = ident();
      if (name.empty()) fail("expected a rule name");
      space(false);
      if (s_.substr(i_, 3) != "::=") fail("expected '::=' after the rule name '" + name + "'");
      i_ += 3;
      space(true);
      const uint32_t id = rule_id(name);
      if (defined_[id]) at(name_at, "the rule '" + name + "' is defined twice");
      defined_[id] = true;
      g_.rules[id].alternatives = alternatives(false, 0);
      if (i_ < s_.size() && s_[i_] != '\n' && s_[i_] != '\r') fail("unexpected character");
      space(true);
    }
    for (size_t r = 0; r < g_.rules.size(); ++r)
      if (!defined_[r]) at(used_at_[r], "the rule '" + g_.rules[r].name + "' is used but never defined");
    auto root = names_.find("root");
    if (root == names_.end()) fail("no rule named 'root' (where matching starts)");
    g_.root = root->second;
    check_left_recursion();
    return std::move(g_);
  }

 private:
  std::string_view s_;
  const GrammarLimits& lim_;
  size_t i_ = 0;
  Grammar g_;
  std::map<std::string, uint32_t, std::less<>> names_;
  std::vector<bool> defined_;
  std::vector<size_t> used_at_;
  size_t elements_ = 0;

  [[noreturn]] void at(size_t pos, const std::string& what) const {
    size_t line = 1, col = 1;
    for (size_t k = 0; k < pos && k < s_.size(); ++k) {
      if (s_[k] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    throw Error("grammar: line " + std::to_string(line) + ", column " + std::to_string(col) + ": " + what);
  }
  [[noreturn]] void fail(const std::string& what) const { at(i_, what); }

  uint32_t new_rule(std::string name) {
    if (g_.rules.size() >= lim_.max_rules)
      fail("more than " + std::to_string(lim_.max_rules) + " rules (with the repetitions expanded)");
    g_.rules.push_back({std::move(name), {}});
    defined_.push_back(false);
    used_at_.push_back(i_);
    return uint32_t(g_.rules.size() - 1);
  }
  uint32_t rule_id(const std::string& name) {
    auto it = names_.find(name);
    if (it != names_.end()) return it->second;
    const uint32_t id = new_rule(name);
    names_.emplace(name, id);
    return id;
  }
  // "_N": the parser's own rules (user rule names may not start with '_' in llama.cpp's GBNF).
  std::string helper_name() const {
    std::string n(1, '_');
    n += std::to_string(g_.rules.size());
    return n;
  }
  // A rule of the parser's own (a group or a repetition), defined at once.
  uint32_t helper(std::vector<Seq> alts) {
    const uint32_t id = new_rule(helper_name());
    count(alts);
    g_.rules[id].alternatives = std::move(alts);
    defined_[id] = true;
    return id;
  }
  void count(const std::vector<Seq>& alts) {
    for (const auto& a : alts) elements_ += a.size() + 1;
    if (elements_ > kMaxElements)
      fail("the grammar expands to more than " + std::to_string(kMaxElements) + " elements");
  }

  // Spaces and tabs, comments, and newlines where allowed.
  void space(bool newlines) {
    while (i_ < s_.size()) {
      const char c = s_[i_];
      if (c == ' ' || c == '\t' || ((c == '\n' || c == '\r') && newlines)) {
        ++i_;
      } else if (c == '#') {
        while (i_ < s_.size() && s_[i_] != '\n') ++i_;
      } else {
        break;
      }
    }
  }
  std::string ident() {
    const size_t b = i_;
    while (i_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[i_])) || s_[i_] == '-' || s_[i_] == '_')) ++i_;
    return std::string(s_.substr(b, i_ - b));
  }

  // One UTF-8 code point of the grammar's text.
  uint32_t utf8() {
    const auto b0 = static_cast<unsigned char>(s_[i_]);
    const int n = b0 < 0x80 ? 1 : (b0 >> 5) == 6 ? 2 : (b0 >> 4) == 14 ? 3 : (b0 >> 3) == 30 ? 4 : 0;
    if (n == 0 || i_ + size_t(n) > s_.size()) fail("invalid UTF-8");
    uint32_t cp = n == 1 ? b0 : b0 & (0x7F >> n);
    for (int k = 1; k < n; ++k) {
      const auto b = static_cast<unsigned char>(s_[i_ + size_t(k)]);
      if ((b & 0xC0) != 0x80) fail("invalid UTF-8");
      cp = (cp << 6) | (b & 0x3F);
    }
    i_ += size_t(n);
    return cp;
  }
  uint32_t hex(int digits) {
    uint32_t v = 0;
    for (int k = 0; k < digits; ++k) {
      if (i_ >= s_.size() || !std::isxdigit(static_cast<unsigned char>(s_[i_])))
        fail("expected " + std::to_string(digits) + " hex digits");
      const char c = s_[i_++];
      v = v * 16 + uint32_t(std::isdigit(static_cast<unsigned char>(c)) ? c - '0' : (std::tolower(c) - 'a' + 10));
    }
    if (v > kMaxCodePoint) fail("code point past U+10FFFF");
    return v;
  }
  // A character of a literal or a class, escapes decoded.
  uint32_t character() {
    if (i_ >= s_.size()) fail("unexpected end of the grammar");
    if (s_[i_] != '\\') return utf8();
    if (++i_ >= s_.size()) fail("unexpected end after '\\'");
    const char e = s_[i_++];
    switch (e) {
      case 'n': return '\n';
      case 'r': return '\r';
      case 't': return '\t';
      case '\\':
      case '"':
      case '[':
      case ']':
      case '-':
      case '^': return uint32_t(e);
      case 'x': return hex(2);
      case 'u': return hex(4);
      case 'U': return hex(8);
      default: --i_; fail(std::string("unknown escape '\\") + e + "'");
    }
  }

  std::vector<Seq> alternatives(bool nested, size_t depth) {
    if (depth > lim_.max_depth) fail("parentheses nested deeper than " + std::to_string(lim_.max_depth));
    std::vector<Seq> alts;
    alts.push_back(sequence(nested, depth));
    for (;;) {
      // An alternative may also start a line of its own ("  | ...").
      const size_t end = i_;
      space(true);
      if (i_ >= s_.size() || s_[i_] != '|') {
        i_ = end;
        break;
      }
      ++i_;
      space(true);
      alts.push_back(sequence(nested, depth));
    }
    count(alts);
    return alts;
  }

  Seq sequence(bool nested, size_t depth) {
    Seq seq;
    while (i_ < s_.size()) {
      const char c = s_[i_];
      if (c == '|' || (c == ')' && nested) || ((c == '\n' || c == '\r') && !nested)) break;
      const size_t atom_at = seq.size();
      if (c == '"') {
        ++i_;
        while (i_ < s_.size() && s_[i_] != '"' && s_[i_] != '\n') seq.push_back(chars({{character(), 0}}, false, true));
        if (i_ >= s_.size() || s_[i_] != '"') fail("a literal without its closing '\"' on its line");
        ++i_;
        if (seq.size() == atom_at) seq.push_back(empty_rule());  // "" matches the empty string
      } else if (c == '[') {
        ++i_;
        bool neg = false;
        if (i_ < s_.size() && s_[i_] == '^') {
          neg = true;
          ++i_;
        }
        std::vector<std::pair<uint32_t, uint32_t>> ranges;
        while (i_ < s_.size() && s_[i_] != ']' && s_[i_] != '\n') {
          const uint32_t lo = character();
          uint32_t hi = lo;
          if (i_ + 1 < s_.size() && s_[i_] == '-' && s_[i_ + 1] != ']' && s_[i_ + 1] != '\n') {
            ++i_;
            hi = character();
            if (hi < lo) fail("a range whose end comes before its start");
          }
          ranges.push_back({lo, hi});
        }
        if (i_ >= s_.size() || s_[i_] != ']') fail("a character class without its closing ']' on its line");
        ++i_;
        GrammarElement e;
        e.ranges = std::move(ranges);
        e.negated = neg;
        seq.push_back(std::move(e));
      } else if (c == '.') {
        ++i_;
        GrammarElement e;
        e.ranges = {{0, kMaxCodePoint}};
        seq.push_back(std::move(e));
      } else if (c == '(') {
        ++i_;
        space(true);
        auto alts = alternatives(true, depth + 1);
        if (i_ >= s_.size() || s_[i_] != ')') fail("expected ')'");
        ++i_;
        seq.push_back(ref(helper(std::move(alts))));
      } else if (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-') {
        const size_t name_at = i_;
        const std::string name = ident();
        const uint32_t id = rule_id(name);
        if (!defined_[id] && used_at_[id] > name_at) used_at_[id] = name_at;
        seq.push_back(ref(id));
      } else {
        fail(std::string("unexpected character '") + c + "'");
      }
      space(nested);
      repetition(seq, atom_at);
      space(nested);
    }
    return seq;
  }

  GrammarElement chars(std::vector<std::pair<uint32_t, uint32_t>> r, bool neg, bool single) {
    GrammarElement e;
    if (single) r[0].second = r[0].first;
    e.ranges = std::move(r);
    e.negated = neg;
    return e;
  }
  static GrammarElement ref(uint32_t id) {
    GrammarElement e;
    e.kind = GrammarElement::Rule;
    e.rule = id;
    return e;
  }
  GrammarElement empty_rule() { return ref(helper({Seq{}})); }

  uint32_t number() {
    const size_t b = i_;
    uint64_t v = 0;
    while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) {
      v = v * 10 + uint64_t(s_[i_++] - '0');
      if (v > lim_.max_repeat) fail("a repetition count past the limit of " + std::to_string(lim_.max_repeat));
    }
    if (i_ == b) fail("expected a number");
    return uint32_t(v);
  }

  // *, +, ?, {m}, {m,}, {m,n} after the atom that starts at seq[atom_at] (a literal's characters
  // repeat together).
  void repetition(Seq& seq, size_t atom_at) {
    if (i_ >= s_.size()) return;
    const char c = s_[i_];
    if (c != '*' && c != '+' && c != '?' && c != '{') return;
    ++i_;
    uint32_t lo = 0, hi = 0;
    bool unbounded = false;
    if (c == '*') {
      unbounded = true;
    } else if (c == '+') {
      lo = 1;
      unbounded = true;
    } else if (c == '?') {
      hi = 1;
    } else {
      space(false);
      lo = number();
      space(false);
      if (i_ < s_.size() && s_[i_] == ',') {
        ++i_;
        space(false);
        if (i_ < s_.size() && s_[i_] == '}')
          unbounded = true;
        else
          hi = number();
      } else {
        hi = lo;
      }
      space(false);
      if (i_ >= s_.size() || s_[i_] != '}') fail("expected '}'");
      ++i_;
      if (!unbounded && hi < lo) fail("a repetition {m,n} with n < m");
    }
    Seq atom(seq.begin() + std::ptrdiff_t(atom_at), seq.end());
    seq.resize(atom_at);
    const GrammarElement one = atom.size() == 1 ? atom[0] : ref(helper({atom}));
    for (uint32_t k = 0; k < lo; ++k) seq.push_back(one);
    elements_ += lo;
    if (unbounded) {
      // R ::= one R | ""  (right recursion: the matcher's stacks stay flat)
      const uint32_t r = new_rule(helper_name());
      g_.rules[r].alternatives = {Seq{one, ref(r)}, Seq{}};
      defined_[r] = true;
      count(g_.rules[r].alternatives);
      seq.push_back(ref(r));
    } else if (hi > lo) {
      // Up to hi - lo more: R_k ::= one R_{k+1} | "", nested from the last.
      uint32_t next = 0;
      bool have = false;
      for (uint32_t k = 0; k < hi - lo; ++k) {
        Seq more{one};
        if (have) more.push_back(ref(next));
        next = helper({more, Seq{}});
        have = true;
      }
      seq.push_back(ref(next));
    }
    if (elements_ > kMaxElements)
      fail("the grammar expands to more than " + std::to_string(kMaxElements) + " elements");
  }

  // A rule that can reach itself without consuming a character cannot be matched left to right.
  void check_left_recursion() {
    const size_t n = g_.rules.size();
    std::vector<bool> nullable(n, false);
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t r = 0; r < n; ++r) {
        if (nullable[r]) continue;
        for (const auto& alt : g_.rules[r].alternatives) {
          bool all = true;
          for (const auto& e : alt)
            if (e.kind == GrammarElement::Chars || !nullable[e.rule]) {
              all = false;
              break;
            }
          if (all) {
            nullable[r] = changed = true;
            break;
          }
        }
      }
    }
    // Edges r -> s where s can come first in r; a cycle is left recursion.
    std::vector<std::vector<uint32_t>> first(n);
    for (size_t r = 0; r < n; ++r)
      for (const auto& alt : g_.rules[r].alternatives)
        for (const auto& e : alt) {
          if (e.kind == GrammarElement::Chars) break;
          first[r].push_back(e.rule);
          if (!nullable[e.rule]) break;
        }
    std::vector<uint8_t> state(n, 0);  // 0 new, 1 on the path, 2 done
    std::vector<std::pair<uint32_t, size_t>> stack;
    for (uint32_t start = 0; start < n; ++start) {
      if (state[start]) continue;
      stack.push_back({start, 0});
      state[start] = 1;
      while (!stack.empty()) {
        auto& [r, k] = stack.back();
        if (k == first[r].size()) {
          state[r] = 2;
          stack.pop_back();
          continue;
        }
        const uint32_t s = first[r][k++];
        if (state[s] == 1)
          throw Error("grammar: the rule '" + g_.rules[s].name +
                      "' is left-recursive (it can reach itself before matching a character)");
        if (state[s] == 0) {
          state[s] = 1;
          stack.push_back({s, 0});
        }
      }
    }
  }
};

}  // namespace

Grammar parse_grammar(std::string_view text, const GrammarLimits& limits) { return Parser(text, limits).parse(); }

std::string gbnf_literal(std::string_view text) {
  static const char* hex = "0123456789abcdef";
  std::string r(1, '"');
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      r += '\\';
      r += char(c);
    } else if (c == '\n') {
      r += "\\n";
    } else if (c < 0x20 || c == 0x7F) {
      r += "\\x";
      r += hex[c >> 4];
      r += hex[c & 15];
    } else {
      r += char(c);
    }
  }
  r += '"';
  return r;
}

}  // namespace wgc::llm
