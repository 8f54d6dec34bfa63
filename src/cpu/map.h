// CPU elementwise maps: the references the GPU map kernels are checked against, and the fallback
// for host-memory maps too small to pay for a GPU round trip.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace wgc::cpu {

// out[i] = a[i] + b[i].
void add(std::span<const float> a, std::span<const float> b, std::span<float> out);

// A WGSL f32 expression in `x` (arity 1) or `x` and `y` (arity 2), compiled for the CPU: the same
// text the GPU map kernels take, for the subset below, evaluated in f32 in blocks of elements.
// Supported: float literals (1.5, .5, 2e-3, 1.0f) and integer literals used as f32 (2); x, y;
// + - * / % and unary -; < <= > >= == != && || ! (for select); parentheses; and the WGSL
// functions abs acos acosh asin asinh atan atan2 atanh ceil clamp cos cosh degrees exp exp2 floor
// fma fract inverseSqrt log log2 max min mix pow radians round saturate select sign sin sinh
// smoothstep sqrt step tan tanh trunc, and f32(...). Types are checked as WGSL does (f32 vs bool).
// Math functions use the C library, so results can differ from a GPU's in the last bits (more for
// approximated functions such as exp, sin on some devices).
class Expr {
 public:
  // Throws wgc::Error naming the expression and the position when it is outside the subset.
  Expr(std::string_view wgsl, int arity);
  // nullopt where Expr(wgsl, arity) would throw.
  static std::optional<Expr> parse(std::string_view wgsl, int arity);
  ~Expr();
  Expr(Expr&&) noexcept;
  Expr& operator=(Expr&&) noexcept;

  const std::string& text() const;
  int arity() const;
  float operator()(float x, float y = 0.f) const;

  // out[i] = f(x[i]) (arity 1) or f(x[i], y[i]) (arity 2; pass y empty for arity 1).
  void apply(std::span<const float> x, std::span<const float> y, std::span<float> out) const;

  struct Program;  // the compiled form (internal)

 private:
  explicit Expr(std::unique_ptr<Program> p);
  std::unique_ptr<Program> p_;
};

// out[i] = e(x[i]) / e(x[i], y[i]).
void map(std::span<const float> x, std::span<float> out, const Expr& e);
void map(std::span<const float> x, std::span<const float> y, std::span<float> out, const Expr& e);

}  // namespace wgc::cpu
