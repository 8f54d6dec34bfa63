#include "ops/thresholds.h"

#include "util/error.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <string>

namespace wgc {

std::optional<uint64_t> cpu_below_override(const thresholds::Threshold& t, const Policy& policy) {
  if (policy.cpu_below >= 0) return static_cast<uint64_t>(policy.cpu_below);
  std::string var = "WGC_CPU_BELOW_" + std::string(t.op);
  if (const char* v = std::getenv(var.c_str()); v && *v) {
    char* end = nullptr;
    errno = 0;
    unsigned long long x = std::strtoull(v, &end, 10);
    if (*end != '\0' || !std::isdigit(static_cast<unsigned char>(*v)) || errno == ERANGE)
      throw Error("wgc: " + var + "='" + v + "' is not a count of " + std::string(t.unit) +
                  " (a non-negative integer)");
    return x;
  }
  return std::nullopt;
}

uint64_t cpu_below(const Context& ctx, const thresholds::Threshold& t, const Policy& policy) {
  return cpu_below_override(t, policy).value_or(ctx.adapter().is_cpu() ? t.cpu_adapter : t.gpu_adapter);
}

}  // namespace wgc
