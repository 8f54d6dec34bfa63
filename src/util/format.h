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

// Bytes in decimal units for people: "512 B", "1.2 KB", "3.4 MB", "8.5 GB", "1.0 TB".
inline std::string human_bytes(unsigned long long b) {
  if (b < 1000) return std::to_string(b) + " B";
  const char* units[] = {"KB", "MB", "GB", "TB"};
  double x = double(b) / 1000;
  int u = 0;
  while (x >= 999.95 && u < 3) {
    x /= 1000;
    ++u;
  }
  return format_number("%.1f ", x) + units[u];
}

}  // namespace wgc
