// The C++17/20 library pieces the library uses that emscripten 3.1.6's libc++ (13) lacks, for the
// wasm build only (force-included by wasm/CMakeLists.txt): std::bit_cast, std::make_unique_for_overwrite, and
// floating-point std::to_chars (shortest round-trip form, plain, fixed and scientific) and std::from_chars (general
// format), which libc++ 13 does not declare. Newer libc++ has them all, and then only wgc::shims is added.
#pragma once

#ifdef __cplusplus
#include <bit>
#include <charconv>
#include <memory>
#include <type_traits>
#include <version>

#if !defined(__cpp_lib_bit_cast)
namespace std {
template <class To, class From>
constexpr To bit_cast(const From& from) noexcept {
  static_assert(sizeof(To) == sizeof(From), "bit_cast between types of different sizes");
  return __builtin_bit_cast(To, from);
}
}  // namespace std
#endif

#if !defined(__cpp_lib_smart_ptr_for_overwrite)
namespace std {
template <class T>
requires(!is_array_v<T>) unique_ptr<T> make_unique_for_overwrite() { return unique_ptr<T>(new T); }
template <class T>
requires is_unbounded_array_v<T> unique_ptr<T> make_unique_for_overwrite(size_t n) {
  return unique_ptr<T>(new remove_extent_t<T>[n]);
}
}  // namespace std
#endif

// The floating-point conversions (libcxx_shims.cpp), under their own names too: a native test
// (tests/test_wasm_shims.cpp) compares them with the standard library's.
namespace wgc::shims {
std::to_chars_result to_chars(char* first, char* last, double value);
std::to_chars_result to_chars(char* first, char* last, double value, std::chars_format fmt);
std::to_chars_result to_chars(char* first, char* last, float value);
std::to_chars_result to_chars(char* first, char* last, float value, std::chars_format fmt);
std::from_chars_result from_chars(const char* first, const char* last, double& value);  // general format
std::from_chars_result from_chars(const char* first, const char* last, float& value);
}  // namespace wgc::shims

#if defined(_LIBCPP_VERSION) && _LIBCPP_VERSION < 14000
namespace std {
// As the standard's: the shortest digits that read back to the same value; the plain form picks
// fixed or scientific notation, whichever is shorter (fixed on a tie). Defined in libcxx_shims.cpp.
to_chars_result to_chars(char* first, char* last, double value);
to_chars_result to_chars(char* first, char* last, double value, chars_format fmt);
to_chars_result to_chars(char* first, char* last, float value);
to_chars_result to_chars(char* first, char* last, float value, chars_format fmt);
from_chars_result from_chars(const char* first, const char* last, double& value,
                             chars_format fmt = chars_format::general);
from_chars_result from_chars(const char* first, const char* last, float& value,
                             chars_format fmt = chars_format::general);
}  // namespace std
#endif
#endif
