// Floating-point std::to_chars and std::from_chars for emscripten 3.1.6's libc++ (libcxx_shims.h).
// to_chars: the digits come from printf's correctly rounded %.*e; the first precision whose result
// reads back (strtod/strtof) to the same value is the shortest, and that rounding is the nearest
// such decimal. from_chars: the longest prefix that the general format's grammar accepts (no
// leading space or '+', no hex), converted by strtod/strtof (correctly rounded).
#include "libcxx_shims.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

// The implementations, in namespace wgc::shims so that a native test (tests/test_wasm_shims.cpp)
// can set them beside the standard library's.
namespace wgc::shims {
namespace {

// The shortest round-trip digits of |v| (finite, non-zero) and the decimal exponent of the first.
template <class T>
void shortest_digits(T v, std::string& digits, int& exp10) {
  char buf[64];
  const int max_digits = sizeof(T) == 4 ? 9 : 17;
  for (int p = 1; p <= max_digits; ++p) {
    std::snprintf(buf, sizeof buf, "%.*e", p - 1, double(v));
    T back;
    if constexpr (sizeof(T) == 4)
      back = std::strtof(buf, nullptr);
    else
      back = std::strtod(buf, nullptr);
    if (back == v || p == max_digits) break;
  }
  // buf: d[.ddd]e[+-]xx
  const char* e = std::strchr(buf, 'e');
  digits.clear();
  for (const char* c = buf; c < e; ++c)
    if (*c != '.') digits += *c;
  exp10 = std::atoi(e + 1);
}

std::string scientific(const std::string& d, int exp10) {
  std::string s(1, d[0]);
  if (d.size() > 1) {  // appended in two steps: GCC 12's -Wrestrict misfires on "." + d.substr(1)
    s += '.';
    s.append(d, 1);
  }
  char e[16];
  std::snprintf(e, sizeof e, "e%c%02d", exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
  return s + e;
}

std::string fixed(const std::string& d, int exp10) {
  const int n = int(d.size());
  if (exp10 < 0) return "0." + std::string(size_t(-exp10 - 1), '0') + d;
  if (exp10 + 1 >= n) return d + std::string(size_t(exp10 + 1 - n), '0');
  return d.substr(0, size_t(exp10 + 1)) + "." + d.substr(size_t(exp10 + 1));
}

enum class Form { Plain, Fixed, Scientific };

template <class T>
std::to_chars_result format(char* first, char* last, T v, Form form) {
  const bool plain = form != Form::Scientific;
  std::string s;
  if (std::isnan(v)) {
    s = std::signbit(v) ? "-nan" : "nan";
  } else if (std::isinf(v)) {
    s = v < 0 ? "-inf" : "inf";
  } else if (v == 0) {
    s = std::signbit(v) ? "-0" : "0";
    if (!plain) s += "e+00";
  } else {
    std::string d;
    int e = 0;
    shortest_digits(std::fabs(v), d, e);
    std::string sci = scientific(d, e), fix = fixed(d, e);
    // An integer in fixed form: of the representations of that length that read back, the
    // standard picks the nearest, which is the exact value (its digits past the shortest's).
    if (e + 1 >= int(d.size())) {
      char exact[400];
      std::snprintf(exact, sizeof exact, "%.0f", std::fabs(double(v)));
      fix = exact;
    }
    s = form == Form::Fixed ? fix : form == Form::Scientific ? sci : fix.size() <= sci.size() ? fix : sci;
    if (std::signbit(v)) s.insert(s.begin(), '-');
  }
  if (s.size() > size_t(last - first)) return {last, std::errc::value_too_large};
  std::memcpy(first, s.data(), s.size());
  return {first + s.size(), std::errc()};
}

Form form_of(std::chars_format f) {
  return f == std::chars_format::scientific ? Form::Scientific
         : f == std::chars_format::fixed    ? Form::Fixed
                                            : Form::Plain;
}

bool starts_nocase(const char* p, const char* last, const char* word) {
  for (; *word; ++p, ++word)
    if (p == last || std::tolower(static_cast<unsigned char>(*p)) != *word) return false;
  return true;
}

// The length of the longest prefix of [first, last) in the general format's grammar, or 0.
size_t match_general(const char* first, const char* last) {
  const char* p = first;
  if (p != last && *p == '-') ++p;
  if (starts_nocase(p, last, "infinity")) return size_t(p + 8 - first);
  if (starts_nocase(p, last, "inf")) return size_t(p + 3 - first);
  if (starts_nocase(p, last, "nan")) {
    p += 3;
    const char* q = p;  // nan(n-char-sequence)
    if (q != last && *q == '(') {
      ++q;
      while (q != last && (std::isalnum(static_cast<unsigned char>(*q)) || *q == '_')) ++q;
      if (q != last && *q == ')') p = q + 1;
    }
    return size_t(p - first);
  }
  size_t digits = 0;
  while (p != last && std::isdigit(static_cast<unsigned char>(*p))) ++p, ++digits;
  if (p != last && *p == '.') {
    ++p;
    while (p != last && std::isdigit(static_cast<unsigned char>(*p))) ++p, ++digits;
  }
  if (!digits) return 0;
  if (p != last && (*p == 'e' || *p == 'E')) {
    const char* q = p + 1;
    if (q != last && (*q == '+' || *q == '-')) ++q;
    if (q != last && std::isdigit(static_cast<unsigned char>(*q))) {
      while (q != last && std::isdigit(static_cast<unsigned char>(*q))) ++q;
      p = q;
    }
  }
  return size_t(p - first);
}

template <class T>
std::from_chars_result parse(const char* first, const char* last, T& value) {
  const size_t n = match_general(first, last);
  if (!n) return {first, std::errc::invalid_argument};
  const std::string text(first, n);
  T v;
  if constexpr (sizeof(T) == 4)
    v = std::strtof(text.c_str(), nullptr);
  else
    v = std::strtod(text.c_str(), nullptr);
  // Out of range, judged by the result (strtod's ERANGE differs between C libraries on
  // subnormals): infinite from digits, or zero from digits that are not all zero.
  const bool digits =
      std::isdigit(static_cast<unsigned char>(text[text[0] == '-' ? 1 : 0])) || text[text[0] == '-' ? 1 : 0] == '.';
  if (digits) {
    const size_t e = text.find_first_of("eE");
    const bool nonzero = text.substr(0, e).find_first_of("123456789") != std::string::npos;
    if (std::isinf(v) || (v == 0 && nonzero)) return {first + n, std::errc::result_out_of_range};
  }
  value = v;
  return {first + n, std::errc()};
}

}  // namespace

std::to_chars_result to_chars(char* first, char* last, double value, std::chars_format fmt) {
  return format(first, last, value, form_of(fmt));
}
std::to_chars_result to_chars(char* first, char* last, float value, std::chars_format fmt) {
  return format(first, last, value, form_of(fmt));
}
std::to_chars_result to_chars(char* first, char* last, double value) { return format(first, last, value, Form::Plain); }
std::to_chars_result to_chars(char* first, char* last, float value) { return format(first, last, value, Form::Plain); }
std::from_chars_result from_chars(const char* first, const char* last, double& value) {
  return parse(first, last, value);
}
std::from_chars_result from_chars(const char* first, const char* last, float& value) {
  return parse(first, last, value);
}

}  // namespace wgc::shims

#if defined(_LIBCPP_VERSION) && _LIBCPP_VERSION < 14000
namespace std {
to_chars_result to_chars(char* first, char* last, double value) { return wgc::shims::to_chars(first, last, value); }
to_chars_result to_chars(char* first, char* last, double value, chars_format fmt) {
  return wgc::shims::to_chars(first, last, value, fmt);
}
to_chars_result to_chars(char* first, char* last, float value) { return wgc::shims::to_chars(first, last, value); }
to_chars_result to_chars(char* first, char* last, float value, chars_format fmt) {
  return wgc::shims::to_chars(first, last, value, fmt);
}
from_chars_result from_chars(const char* first, const char* last, double& value, chars_format) {
  return wgc::shims::from_chars(first, last, value);
}
from_chars_result from_chars(const char* first, const char* last, float& value, chars_format) {
  return wgc::shims::from_chars(first, last, value);
}
}  // namespace std
#endif
