#include "cpu/map.h"

#include "util/error.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <vector>

namespace wgc::cpu {

void add(std::span<const float> a, std::span<const float> b, std::span<float> out) {
  if (a.size() != b.size() || a.size() != out.size())
    throw Error("wgc::cpu::add: lengths differ (" + std::to_string(a.size()) + ", " + std::to_string(b.size()) +
                " -> " + std::to_string(out.size()) + ")");
  for (size_t i = 0; i < a.size(); ++i) out[i] = a[i] + b[i];
}

namespace {

// clang-format off
enum class Op : uint8_t {
  Const, Neg, Not, Add, Sub, Mul, Div, Mod, Lt, Le, Gt, Ge, Eq, Ne, And, Or,
  // functions
  Abs, Acos, Acosh, Asin, Asinh, Atan, Atanh, Ceil, Cos, Cosh, Degrees, Exp, Exp2, Floor, Fract,
  InverseSqrt, Log, Log2, Radians, Round, Saturate, Sign, Sin, Sinh, Sqrt, Tan, Tanh, Trunc, Identity,
  Atan2, Max, Min, Pow, Step, Clamp, Fma, Mix, Select, Smoothstep,
};
// clang-format on

enum class Type : uint8_t { F32, Bool, IntLiteral };

struct Fn {
  std::string_view name;
  int args;
  Op op;
};

// WGSL built-ins of the subset; select is special (its third argument is a bool).
constexpr Fn kFunctions[] = {
    {"abs", 1, Op::Abs},
    {"acos", 1, Op::Acos},
    {"acosh", 1, Op::Acosh},
    {"asin", 1, Op::Asin},
    {"asinh", 1, Op::Asinh},
    {"atan", 1, Op::Atan},
    {"atanh", 1, Op::Atanh},
    {"ceil", 1, Op::Ceil},
    {"cos", 1, Op::Cos},
    {"cosh", 1, Op::Cosh},
    {"degrees", 1, Op::Degrees},
    {"exp", 1, Op::Exp},
    {"exp2", 1, Op::Exp2},
    {"floor", 1, Op::Floor},
    {"fract", 1, Op::Fract},
    {"inverseSqrt", 1, Op::InverseSqrt},
    {"log", 1, Op::Log},
    {"log2", 1, Op::Log2},
    {"radians", 1, Op::Radians},
    {"round", 1, Op::Round},
    {"saturate", 1, Op::Saturate},
    {"sign", 1, Op::Sign},
    {"sin", 1, Op::Sin},
    {"sinh", 1, Op::Sinh},
    {"sqrt", 1, Op::Sqrt},
    {"tan", 1, Op::Tan},
    {"tanh", 1, Op::Tanh},
    {"trunc", 1, Op::Trunc},
    {"f32", 1, Op::Identity},
    {"atan2", 2, Op::Atan2},
    {"max", 2, Op::Max},
    {"min", 2, Op::Min},
    {"pow", 2, Op::Pow},
    {"step", 2, Op::Step},
    {"clamp", 3, Op::Clamp},
    {"fma", 3, Op::Fma},
    {"mix", 3, Op::Mix},
    {"select", 3, Op::Select},
    {"smoothstep", 3, Op::Smoothstep},
};

struct Instr {
  Op op;
  int a = -1, b = -1, c = -1;  // argument registers
  float imm = 0;               // Const
};

}  // namespace

struct Expr::Program {
  std::string text;
  int arity = 1;
  std::vector<Instr> code;  // register r >= 2 is written by code[r - 2]; 0 is x, 1 is y
  int result = 0;
};

namespace {

struct Value {
  int reg;
  Type type;
  float literal = 0;  // for IntLiteral and Const float literals
  bool is_const = false;
};

class Parser {
 public:
  Parser(std::string_view s, int arity, Expr::Program& p) : s_(s), arity_(arity), p_(p) {}

  Value parse() {
    Value v = logical_or();
    skip();
    if (pos_ != s_.size()) fail("unexpected '" + std::string(1, s_[pos_]) + "'");
    if (v.type == Type::Bool) fail("the expression is a bool, an f32 is needed");
    if (v.type == Type::IntLiteral) v = to_f32(v);
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw Error("wgc: map expression '" + std::string(s_) + "' at column " + std::to_string(pos_ + 1) + ": " + why +
                " (the CPU evaluator's subset is listed in cpu/map.h)");
  }
  void skip() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool eat(std::string_view tok) {
    skip();
    if (s_.substr(pos_, tok.size()) != tok) return false;
    // do not take "<" from "<=" and so on
    if (tok.size() == 1 && pos_ + 1 < s_.size() && std::string_view("<>=!").find(tok[0]) != std::string_view::npos &&
        s_[pos_ + 1] == '=')
      return false;
    pos_ += tok.size();
    return true;
  }

  int emit(Instr in) {
    p_.code.push_back(in);
    return static_cast<int>(p_.code.size()) + 1;
  }
  Value constant(float v) {
    Value r{emit({Op::Const, -1, -1, -1, v}), Type::F32, v, true};
    return r;
  }
  Value to_f32(const Value& v) { return v.type == Type::IntLiteral ? constant(v.literal) : v; }

  // An operand of an f32 operation: f32 or an integer literal (converted, as WGSL does).
  Value need_f32(const Value& v, std::string_view what) {
    if (v.type == Type::Bool) fail(std::string(what) + " needs an f32, not a bool");
    return to_f32(v);
  }
  Value need_bool(const Value& v, std::string_view what) {
    if (v.type != Type::Bool) fail(std::string(what) + " needs a bool");
    return v;
  }
  Value binary(Op op, const Value& a, const Value& b, std::string_view what, Type out = Type::F32) {
    if (a.type == Type::IntLiteral && b.type == Type::IntLiteral) return fold_int(op, a.literal, b.literal, what);
    Value x = need_f32(a, what), y = need_f32(b, what);
    return {emit({op, x.reg, y.reg}), out};
  }

  // Integer literals combine as WGSL's abstract integers (exactly; division truncates).
  Value fold_int(Op op, float a, float b, std::string_view what) {
    double x = a, y = b, r = 0;
    switch (op) {
      case Op::Add: r = x + y; break;
      case Op::Sub: r = x - y; break;
      case Op::Mul: r = x * y; break;
      case Op::Div:
      case Op::Mod:
        if (y == 0) fail("integer division by zero");
        r = op == Op::Div ? std::trunc(x / y) : std::fmod(x, y);
        break;
      default: fail(std::string(what) + " of two integer literals is not in the subset");
    }
    if (std::fabs(r) > 16777216.0) fail("integer arithmetic past 2^24 is not in the subset");
    return {-1, Type::IntLiteral, static_cast<float>(r)};
  }

  Value logical_or() {
    Value v = logical_and();
    while (eat("||")) {
      Value r = logical_and();
      v = {emit({Op::Or, need_bool(v, "||").reg, need_bool(r, "||").reg}), Type::Bool};
    }
    return v;
  }
  Value logical_and() {
    Value v = comparison();
    while (eat("&&")) {
      Value r = comparison();
      v = {emit({Op::And, need_bool(v, "&&").reg, need_bool(r, "&&").reg}), Type::Bool};
    }
    return v;
  }
  Value comparison() {
    Value v = additive();
    static constexpr std::pair<std::string_view, Op> kOps[] = {{"<=", Op::Le}, {">=", Op::Ge}, {"==", Op::Eq},
                                                               {"!=", Op::Ne}, {"<", Op::Lt},  {">", Op::Gt}};
    for (auto& [tok, op] : kOps)
      if (eat(tok)) return binary(op, v, additive(), tok, Type::Bool);
    return v;
  }
  Value additive() {
    Value v = multiplicative();
    for (;;) {
      if (eat("+"))
        v = binary(Op::Add, v, multiplicative(), "+");
      else if (eat("-"))
        v = binary(Op::Sub, v, multiplicative(), "-");
      else
        return v;
    }
  }
  Value multiplicative() {
    Value v = unary();
    for (;;) {
      if (eat("*"))
        v = binary(Op::Mul, v, unary(), "*");
      else if (eat("/"))
        v = binary(Op::Div, v, unary(), "/");
      else if (eat("%"))
        v = binary(Op::Mod, v, unary(), "%");
      else
        return v;
    }
  }
  Value unary() {
    if (eat("-")) {
      Value v = unary();
      if (v.type == Type::IntLiteral) return {-1, Type::IntLiteral, -v.literal};
      return {emit({Op::Neg, need_f32(v, "unary -").reg}), Type::F32};
    }
    if (eat("!")) {
      Value v = unary();
      return {emit({Op::Not, need_bool(v, "!").reg}), Type::Bool};
    }
    return primary();
  }
  Value number() {
    size_t start = pos_;
    bool is_float = false;
    while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
    if (pos_ < s_.size() && s_[pos_] == '.') {
      is_float = true;
      ++pos_;
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
    }
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      is_float = true;
      ++pos_;
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
      if (pos_ >= s_.size() || !std::isdigit(static_cast<unsigned char>(s_[pos_]))) fail("malformed exponent");
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
    }
    std::string digits(s_.substr(start, pos_ - start));
    if (digits == ".") fail("malformed number");
    if (pos_ < s_.size() && s_[pos_] == 'f') {
      is_float = true;
      ++pos_;
    }
    if (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_'))
      fail("number suffix or form not in the subset (only f32 and plain integer literals)");
    if (digits.size() > 1 && digits[0] == '0' && !is_float) fail("integer literals with a leading 0");
    float v = std::strtof(digits.c_str(), nullptr);
    if (!std::isfinite(v)) fail("the literal does not fit an f32");
    if (!is_float) return {-1, Type::IntLiteral, v};
    return constant(v);
  }
  Value primary() {
    skip();
    if (pos_ >= s_.size()) fail("the expression ends early");
    char c = s_[pos_];
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') return number();
    if (eat("(")) {
      Value v = logical_or();
      if (!eat(")")) fail("')' expected");
      return v;
    }
    if (!std::isalpha(static_cast<unsigned char>(c)) && c != '_') fail("unexpected '" + std::string(1, c) + "'");
    size_t start = pos_;
    while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_')) ++pos_;
    std::string_view name = s_.substr(start, pos_ - start);
    skip();
    bool call = pos_ < s_.size() && s_[pos_] == '(';
    if (!call) {
      if (name == "x") return {0, Type::F32};
      if (name == "y" && arity_ == 2) return {1, Type::F32};
      if (name == "true" || name == "false") {
        Value v = constant(name == "true" ? 1.f : 0.f);
        v.type = Type::Bool;
        return v;
      }
      pos_ = start;
      fail("unknown identifier '" + std::string(name) + "'");
    }
    const Fn* fn = nullptr;
    for (auto& f : kFunctions)
      if (f.name == name) fn = &f;
    if (!fn) {
      pos_ = start;
      fail("function '" + std::string(name) + "' is not in the subset");
    }
    eat("(");
    std::vector<Value> args;
    if (!eat(")")) {
      for (;;) {
        args.push_back(logical_or());
        if (eat(")")) break;
        if (!eat(",")) fail("',' or ')' expected in the arguments of " + std::string(name));
      }
    }
    if (static_cast<int>(args.size()) != fn->args)
      fail(std::string(name) + " takes " + std::to_string(fn->args) + " argument(s), not " +
           std::to_string(args.size()));
    bool all_int = std::all_of(args.begin(), args.end(), [](const Value& v) { return v.type == Type::IntLiteral; });
    if (fn->op == Op::Select) {
      need_bool(args[2], "select's condition");
      if (args[0].type == Type::IntLiteral && args[1].type == Type::IntLiteral)
        fail("select of two integer literals is an integer in WGSL; write them as floats");
      Value f = need_f32(args[0], "select"), t = need_f32(args[1], "select");
      return {emit({Op::Select, f.reg, t.reg, args[2].reg}), Type::F32};
    }
    if (all_int && fn->op != Op::Identity)
      fail(std::string(name) + " of integer literals is an integer in WGSL; write them as floats");
    int regs[3] = {-1, -1, -1};
    for (size_t i = 0; i < args.size(); ++i) regs[i] = need_f32(args[i], name).reg;
    return {emit({fn->op, regs[0], regs[1], regs[2]}), Type::F32};
  }

  std::string_view s_;
  int arity_;
  Expr::Program& p_;
  size_t pos_ = 0;
};

constexpr size_t kBlock = 256;

float smoothstep(float lo, float hi, float x) {
  float t = std::clamp((x - lo) / (hi - lo), 0.f, 1.f);
  return t * t * (3.f - 2.f * t);
}

// Runs the program over n <= kBlock elements; regs holds one block per register.
void run_block(const Expr::Program& p, float* regs, size_t n) {
  constexpr float kPi = 3.14159265358979323846f;
  for (size_t k = 0; k < p.code.size(); ++k) {
    const Instr& in = p.code[k];
    float* o = regs + (k + 2) * kBlock;
    const float* a = in.a >= 0 ? regs + size_t(in.a) * kBlock : nullptr;
    const float* b = in.b >= 0 ? regs + size_t(in.b) * kBlock : nullptr;
    const float* c = in.c >= 0 ? regs + size_t(in.c) * kBlock : nullptr;
#define WGC_EACH(expr)                          \
  for (size_t i = 0; i < n; ++i) o[i] = (expr); \
  break
    switch (in.op) {
      case Op::Const: WGC_EACH(in.imm);
      case Op::Neg: WGC_EACH(-a[i]);
      case Op::Not: WGC_EACH(a[i] != 0.f ? 0.f : 1.f);
      case Op::Add: WGC_EACH(a[i] + b[i]);
      case Op::Sub: WGC_EACH(a[i] - b[i]);
      case Op::Mul: WGC_EACH(a[i] * b[i]);
      case Op::Div: WGC_EACH(a[i] / b[i]);
      case Op::Mod: WGC_EACH(a[i] - b[i] * std::trunc(a[i] / b[i]));
      case Op::Lt: WGC_EACH(a[i] < b[i] ? 1.f : 0.f);
      case Op::Le: WGC_EACH(a[i] <= b[i] ? 1.f : 0.f);
      case Op::Gt: WGC_EACH(a[i] > b[i] ? 1.f : 0.f);
      case Op::Ge: WGC_EACH(a[i] >= b[i] ? 1.f : 0.f);
      case Op::Eq: WGC_EACH(a[i] == b[i] ? 1.f : 0.f);
      case Op::Ne: WGC_EACH(a[i] != b[i] ? 1.f : 0.f);
      case Op::And: WGC_EACH(a[i] != 0.f && b[i] != 0.f ? 1.f : 0.f);
      case Op::Or: WGC_EACH(a[i] != 0.f || b[i] != 0.f ? 1.f : 0.f);
      case Op::Abs: WGC_EACH(std::fabs(a[i]));
      case Op::Acos: WGC_EACH(std::acos(a[i]));
      case Op::Acosh: WGC_EACH(std::acosh(a[i]));
      case Op::Asin: WGC_EACH(std::asin(a[i]));
      case Op::Asinh: WGC_EACH(std::asinh(a[i]));
      case Op::Atan: WGC_EACH(std::atan(a[i]));
      case Op::Atanh: WGC_EACH(std::atanh(a[i]));
      case Op::Ceil: WGC_EACH(std::ceil(a[i]));
      case Op::Cos: WGC_EACH(std::cos(a[i]));
      case Op::Cosh: WGC_EACH(std::cosh(a[i]));
      case Op::Degrees: WGC_EACH(a[i] * (180.f / kPi));
      case Op::Exp: WGC_EACH(std::exp(a[i]));
      case Op::Exp2: WGC_EACH(std::exp2(a[i]));
      case Op::Floor: WGC_EACH(std::floor(a[i]));
      case Op::Fract: WGC_EACH(a[i] - std::floor(a[i]));
      case Op::InverseSqrt: WGC_EACH(1.f / std::sqrt(a[i]));
      case Op::Log: WGC_EACH(std::log(a[i]));
      case Op::Log2: WGC_EACH(std::log2(a[i]));
      case Op::Radians: WGC_EACH(a[i] * (kPi / 180.f));
      case Op::Round: WGC_EACH(std::nearbyint(a[i]));  // WGSL rounds halves to even
      case Op::Saturate: WGC_EACH(std::clamp(a[i], 0.f, 1.f));
      case Op::Sign: WGC_EACH(a[i] > 0.f ? 1.f : (a[i] < 0.f ? -1.f : 0.f));
      case Op::Sin: WGC_EACH(std::sin(a[i]));
      case Op::Sinh: WGC_EACH(std::sinh(a[i]));
      case Op::Sqrt: WGC_EACH(std::sqrt(a[i]));
      case Op::Tan: WGC_EACH(std::tan(a[i]));
      case Op::Tanh: WGC_EACH(std::tanh(a[i]));
      case Op::Trunc: WGC_EACH(std::trunc(a[i]));
      case Op::Identity: WGC_EACH(a[i]);
      case Op::Atan2: WGC_EACH(std::atan2(a[i], b[i]));
      case Op::Max: WGC_EACH(std::fmax(a[i], b[i]));
      case Op::Min: WGC_EACH(std::fmin(a[i], b[i]));
      case Op::Pow: WGC_EACH(std::pow(a[i], b[i]));
      case Op::Step: WGC_EACH(b[i] >= a[i] ? 1.f : 0.f);
      case Op::Clamp: WGC_EACH(std::fmin(std::fmax(a[i], b[i]), c[i]));
      case Op::Fma: WGC_EACH(std::fma(a[i], b[i], c[i]));
      case Op::Mix: WGC_EACH(a[i] * (1.f - c[i]) + b[i] * c[i]);
      case Op::Select: WGC_EACH(c[i] != 0.f ? b[i] : a[i]);
      case Op::Smoothstep: WGC_EACH(smoothstep(a[i], b[i], c[i]));
    }
#undef WGC_EACH
  }
}

}  // namespace

Expr::Expr(std::unique_ptr<Program> p) : p_(std::move(p)) {}
Expr::~Expr() = default;
Expr::Expr(Expr&&) noexcept = default;
Expr& Expr::operator=(Expr&&) noexcept = default;

Expr::Expr(std::string_view wgsl, int arity) : p_(std::make_unique<Program>()) {
  if (arity != 1 && arity != 2) throw Error("wgc: a map expression has 1 or 2 inputs, not " + std::to_string(arity));
  p_->text = std::string(wgsl);
  p_->arity = arity;
  p_->result = Parser(wgsl, arity, *p_).parse().reg;
}

std::optional<Expr> Expr::parse(std::string_view wgsl, int arity) {
  try {
    return Expr(wgsl, arity);
  } catch (const Error&) {
    return std::nullopt;
  }
}

const std::string& Expr::text() const { return p_->text; }
int Expr::arity() const { return p_->arity; }

float Expr::operator()(float x, float y) const {
  float out = 0;
  apply(std::span(&x, 1), p_->arity == 2 ? std::span<const float>(&y, 1) : std::span<const float>(),
        std::span(&out, 1));
  return out;
}

void Expr::apply(std::span<const float> x, std::span<const float> y, std::span<float> out) const {
  const Program& p = *p_;
  if (x.size() != out.size() || (p.arity == 2 && y.size() != x.size()))
    throw Error("wgc::cpu::map '" + p.text + "': lengths differ (" + std::to_string(x.size()) + ", " +
                std::to_string(y.size()) + " -> " + std::to_string(out.size()) + ")");
  std::vector<float> regs((p.code.size() + 2) * kBlock);
  for (size_t at = 0; at < x.size(); at += kBlock) {
    size_t n = std::min(kBlock, x.size() - at);
    std::copy_n(x.data() + at, n, regs.data());
    if (p.arity == 2) std::copy_n(y.data() + at, n, regs.data() + kBlock);
    run_block(p, regs.data(), n);
    std::copy_n(regs.data() + size_t(p.result) * kBlock, n, out.data() + at);
  }
}

void map(std::span<const float> x, std::span<float> out, const Expr& e) {
  if (e.arity() != 1) throw Error("wgc::cpu::map: '" + e.text() + "' takes two inputs");
  e.apply(x, {}, out);
}

void map(std::span<const float> x, std::span<const float> y, std::span<float> out, const Expr& e) {
  if (e.arity() != 2) throw Error("wgc::cpu::map: '" + e.text() + "' takes one input");
  e.apply(x, y, out);
}

}  // namespace wgc::cpu
