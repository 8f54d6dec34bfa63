#include "util/knobs.h"

#include "util/error.h"

#include <algorithm>
#include <cstdlib>

namespace wgc {

void parse_knobs(std::string_view spec, std::span<const Knob> knobs, char sep, std::string_view what) {
  constexpr unsigned long kMaxValue = 1ul << 20;
  while (!spec.empty()) {
    const size_t end = std::min(spec.find(sep), spec.size());
    const std::string item(spec.substr(0, end));
    spec = end == spec.size() ? std::string_view() : spec.substr(end + 1);
    const size_t eq = item.find('=');
    uint32_t* dst = nullptr;
    for (const auto& [name, field] : knobs)
      if (eq != std::string::npos && item.compare(0, eq, name) == 0) dst = field;
    char* e = nullptr;
    const char* value = eq == std::string::npos ? nullptr : item.c_str() + eq + 1;
    const unsigned long v = value ? std::strtoul(value, &e, 10) : 0;
    if (!dst || !e || e == value || *e || v > kMaxValue) {
      std::string names;
      for (const auto& k : knobs) names += std::string(names.empty() ? "" : ", ") + k.first;
      throw Error("wgc: " + std::string(what) + " tuning: '" + item + "' is not KEY=VALUE with a key of " + names +
                  " and a VALUE <= 2^20");
    }
    *dst = uint32_t(v);
  }
}

}  // namespace wgc
