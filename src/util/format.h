// One number formatted printf-style into a std::string, for tables and reports
// (format_number("%.1f GB/s", x)). GCC 12 has no <format>.
#pragma once

#include <cstdio>
#include <string>

namespace wgc {

inline std::string format_number(const char* printf_format, double v) {
  char buf[128];
  std::snprintf(buf, sizeof buf, printf_format, v);
  return buf;
}

}  // namespace wgc
