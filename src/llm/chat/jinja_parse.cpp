// Lexer (template text into text chunks and tag tokens) and parser (tokens into the syntax tree).
#include "llm/chat/jinja_parse.h"

#include "llm/tokenizer/unicode.h"

#include <algorithm>
#include <charconv>
#include <cstring>

namespace wgc::llm::jinja {

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
          if (c.tokens.size() != 1) fail(tag_line, "unexpected '" + c.tokens[1].text + "' in {% raw %}");
          size_t after = close + 2;
          size_t e = find_endraw(after);
          if (e == std::string::npos) fail(tag_line, "unclosed raw block: no {% endraw %}");
          push_text(out, std::string(s_.substr(after, e - after)), tag_line);
          // The endraw tag is lexed as any tag: its end may be missing too.
          size_t inner_end = e + 2;
          if (inner_end < s_.size() && (s_[inner_end] == '-' || s_[inner_end] == '+')) ++inner_end;
          int end_line = tag_line + int(std::count(s_.begin() + long(open), s_.begin() + long(e), '\n'));
          std::vector<Token> end_tokens;
          rflag = 0;
          close = lex_tag(inner_end, '%', end_tokens, end_line, rflag);
          if (end_tokens.size() != 1) fail(end_line, "unexpected '" + end_tokens[1].text + "' in {% endraw %}");
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
      if (s_.compare(q, 6, "endraw") == 0 && (q + 6 == s_.size() || !is_ident(s_[q + 6]))) return p;
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
          if (r.ec != std::errc() || r.ptr != s_.data() + i + n) fail(line, "bad escape in string");
          if (cp > 0x10FFFF) fail(line, "escape of a code point beyond U+10FFFF in string");
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
// Parser
// ================================================================================================

class Parser {
 public:
  Parser(std::vector<Chunk> chunks, const std::string& name, size_t max_depth)
      : chunks_(std::move(chunks)), name_(name), max_depth_(max_depth) {}

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
  size_t max_depth_;
  size_t depth_ = 0;  // nesting of the tree being built: bounds the parser's and the renderer's recursion

  // Deepens the tree by one level per deeper() until the guard goes out of scope. Every recursive
  // parse function and every loop that wraps a node in a new one holds one, so the tree's height
  // never exceeds max_depth_ (left-associative chains like 1+1+...+1 are as deep as nested ones).
  class Nest {
   public:
    explicit Nest(Parser& p) : p_(p) {}
    ~Nest() { p_.depth_ -= n_; }
    Nest(const Nest&) = delete;
    Nest& operator=(const Nest&) = delete;
    void deeper() {
      ++n_;
      if (++p_.depth_ > p_.max_depth_)
        p_.fail(p_.line(),
                "nesting deeper than " + std::to_string(p_.max_depth_) + " (the depth limit, jinja::kMaxDepth)");
    }

   private:
    Parser& p_;
    size_t n_ = 0;
  };

  [[noreturn]] void fail(int line, const std::string& what) const {
    throw Error(name_ + ":" + std::to_string(line) + ": " + what);
  }

  int line() const {
    if (toks_) return peek().line;
    return ci_ < chunks_.size() ? chunks_[ci_].line : 1;
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
    Nest nest(*this);
    nest.deeper();
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
    Nest nest(*this);
    nest.deeper();
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
    Nest nest(*this);
    ExprP e = parse_and();
    while (at_name("or")) {
      nest.deeper();
      auto n = make(Expr::Or, next().line);
      n->a = std::move(e);
      n->b = parse_and();
      e = std::move(n);
    }
    return e;
  }
  ExprP parse_and() {
    Nest nest(*this);
    ExprP e = parse_not();
    while (at_name("and")) {
      nest.deeper();
      auto n = make(Expr::And, next().line);
      n->a = std::move(e);
      n->b = parse_not();
      e = std::move(n);
    }
    return e;
  }
  ExprP parse_not() {
    if (at_name("not")) {
      Nest nest(*this);
      nest.deeper();
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
    Nest nest(*this);
    ExprP e = parse_concat();
    while (at_op("+") || at_op("-")) {
      nest.deeper();
      const Token& t = next();
      e = binary(t.text, std::move(e), parse_concat(), t.line);
    }
    return e;
  }
  ExprP parse_concat() {
    Nest nest(*this);
    ExprP e = parse_math2();
    while (at_op("~")) {
      nest.deeper();
      int line = next().line;
      e = binary("~", std::move(e), parse_math2(), line);
    }
    return e;
  }
  ExprP parse_math2() {
    Nest nest(*this);
    ExprP e = parse_pow();
    while (at_op("*") || at_op("/") || at_op("//") || at_op("%")) {
      nest.deeper();
      const Token& t = next();
      e = binary(t.text, std::move(e), parse_pow(), t.line);
    }
    return e;
  }
  ExprP parse_pow() {
    Nest nest(*this);
    ExprP e = parse_unary();
    while (at_op("**")) {
      nest.deeper();
      int line = next().line;
      e = binary("**", std::move(e), parse_unary(), line);
    }
    return e;
  }
  ExprP parse_unary(bool with_filter = true) {
    if (at_op("-") || at_op("+")) {
      Nest nest(*this);
      nest.deeper();
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
      case Tok::Int: return literal(Value(int_literal(t)), t.line);
      case Tok::Float: return literal(Value(float_literal(t)), t.line);
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
  int64_t int_literal(const Token& t) const {
    int64_t v = 0;
    auto r = std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
    if (r.ec != std::errc() || r.ptr != t.text.data() + t.text.size())
      fail(t.line, "integer literal " + t.text.substr(0, 40) + " is out of the 64-bit range");
    return v;
  }
  double float_literal(const Token& t) const {
    double v = 0;
    auto r = std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
    if (r.ec != std::errc() || r.ptr != t.text.data() + t.text.size())
      fail(t.line, "float literal " + t.text.substr(0, 40) + " is out of the double range");
    return v;
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
    Nest nest(*this);
    while (true) {
      if (at_op(".") || at_op("[") || at_op("(")) nest.deeper();
      if (at_op(".")) {
        int line = next().line;
        auto n = make(Expr::Attr, line);
        if (peek().type == Tok::Int) {  // x.0
          n->kind = Expr::Item;
          n->b = literal(Value(int_literal(next())), line);
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
    Nest nest(*this);
    while (true) {
      if (at_op("|") || at_name("is")) nest.deeper();
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

}  // namespace

Body parse(std::string_view source, const std::string& name, const Limits& limits) {
  Lexer lex(source, name);
  Parser p(lex.run(), name, limits.depth);
  return p.parse();
}

}  // namespace wgc::llm::jinja
