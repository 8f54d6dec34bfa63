// The wasm build's floating-point std::to_chars / std::from_chars (wasm/libcxx_shims.cpp: emscripten
// 3.1.6's libc++ lacks them, and json/jinja use them) against this compiler's standard library:
// the same characters and the same parse, on random bit patterns (subnormals, huge and tiny
// exponents, every sign) and on strings at the edges of the general format's grammar.
#include "../wasm/libcxx_shims.cpp"  // NOLINT: the implementation, compiled natively here

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <string>

namespace {

template <class T>
std::string std_chars(T v, std::chars_format f, bool plain) {
  char buf[512];
  auto r = plain ? std::to_chars(buf, buf + sizeof buf, v) : std::to_chars(buf, buf + sizeof buf, v, f);
  EXPECT_EQ(r.ec, std::errc());
  return std::string(buf, r.ptr);
}
template <class T>
std::string shim_chars(T v, std::chars_format f, bool plain) {
  char buf[512];
  auto r = plain ? wgc::shims::to_chars(buf, buf + sizeof buf, v) : wgc::shims::to_chars(buf, buf + sizeof buf, v, f);
  EXPECT_EQ(r.ec, std::errc());
  return std::string(buf, r.ptr);
}

template <class T, class Bits>
void compare_random(int count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  int bad = 0;
  for (int i = 0; i < count && bad < 10; ++i) {
    T v = std::bit_cast<T>(Bits(rng()));
    if (i % 4 == 1) v = T(double(int64_t(rng() % 2000001) - 1000000) / double(1 + rng() % 1000));  // short decimals
    if (std::isnan(v)) continue;
    for (auto [f, plain] : {std::pair{std::chars_format::general, true},
                            {std::chars_format::scientific, false},
                            {std::chars_format::fixed, false}}) {
      std::string want = std_chars(v, f, plain), got = shim_chars(v, f, plain);
      if (want != got && bad++ < 10) ADD_FAILURE() << "to_chars(" << want << ") gave " << got;
    }
    // Reads back what it wrote, exactly.
    std::string s = shim_chars(v, std::chars_format::general, true);
    T back{};
    auto r = wgc::shims::from_chars(s.data(), s.data() + s.size(), back);
    EXPECT_EQ(r.ec, std::errc()) << s;
    EXPECT_EQ(r.ptr, s.data() + s.size()) << s;
    EXPECT_EQ(std::bit_cast<Bits>(back), std::bit_cast<Bits>(v)) << s;
  }
  EXPECT_EQ(bad, 0);
}

TEST(WasmShims, ToCharsDoubleMatchesTheStandardLibrary) { compare_random<double, uint64_t>(20000, 1); }
TEST(WasmShims, ToCharsFloatMatchesTheStandardLibrary) { compare_random<float, uint32_t>(20000, 2); }

TEST(WasmShims, ToCharsSpecialValues) {
  for (double v : {0.0, -0.0, 1.0, -1.0, 100.0, 1e21, 1e22, 0.0001, 0.001, 123456789.0, 5e-324, 1.7976931348623157e308,
                   0.1, 1.0 / 3.0, double(INFINITY), -double(INFINITY)}) {
    EXPECT_EQ(shim_chars(v, std::chars_format::general, true), std_chars(v, std::chars_format::general, true)) << v;
    EXPECT_EQ(shim_chars(v, std::chars_format::scientific, false), std_chars(v, std::chars_format::scientific, false))
        << v;
  }
  char small[3];
  EXPECT_EQ(wgc::shims::to_chars(small, small + sizeof small, 123456.0).ec, std::errc::value_too_large);
}

TEST(WasmShims, FromCharsMatchesTheStandardLibrary) {
  for (const char* s : {"0",
                        "-0",
                        "1",
                        "1.5",
                        "-2.25e-3",
                        ".5",
                        "5.",
                        "1e",
                        "1e+",
                        "1e-x",
                        "1e400",
                        "-1e400",
                        "1e-400",
                        "inf",
                        "-INF",
                        "infinity",
                        "Infinityx",
                        "nan",
                        "NaN(abc)",
                        "nan(",
                        "0x10",
                        "+1",
                        " 1",
                        "",
                        "-",
                        ".",
                        "e5",
                        "12abc",
                        "3.14159265358979323846264338327950288",
                        "4.9406564584124654e-324",
                        "2.2250738585072011e-308",
                        "1.7976931348623158e308"}) {
    const size_t n = std::strlen(s);
    double want = 42, got = 42;
    auto a = std::from_chars(s, s + n, want);
    auto b = wgc::shims::from_chars(s, s + n, got);
    EXPECT_EQ(int(a.ec), int(b.ec)) << '"' << s << '"';
    EXPECT_EQ(a.ptr - s, b.ptr - s) << '"' << s << '"';
    if (a.ec != std::errc()) continue;
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << s;
    } else {
      EXPECT_EQ(std::bit_cast<uint64_t>(want), std::bit_cast<uint64_t>(got)) << '"' << s << '"';
    }
  }
}

}  // namespace
