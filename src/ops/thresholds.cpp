#include "ops/thresholds.h"

#include "util/error.h"

#include <cstdlib>
#include <string>

namespace wgc {

uint64_t cpu_below(const Context& ctx, const thresholds::Threshold& t, const Policy& policy) {
  if (policy.cpu_below >= 0) return static_cast<uint64_t>(policy.cpu_below);
  std::string var = "WGC_CPU_BELOW_" + std::string(t.op);
  if (const char* v = std::getenv(var.c_str()); v && *v) {
    char* end = nullptr;
    unsigned long long x = std::strtoull(v, &end, 10);
    if (*end != '\0' || *v == '-')
      throw Error("wgc: " + var + "='" + v + "' is not an element count (a non-negative integer)");
    return x;
  }
  return ctx.adapter().is_cpu() ? t.cpu_adapter : t.gpu_adapter;
}

}  // namespace wgc
