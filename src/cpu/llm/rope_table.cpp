#include "cpu/llm/rope_table.h"

#include <algorithm>
#include <cmath>

namespace wgc::llm {

std::vector<float> rope_cos_sin(std::span<const double> inv, int max_pos, double factor, size_t width) {
  const size_t half = std::max(width, inv.size());
  std::vector<float> cs(size_t(max_pos > 0 ? max_pos : 0) * half * 2);
  for (size_t p = 0; p < size_t(max_pos > 0 ? max_pos : 0); ++p)
    for (size_t i = 0; i < half; ++i) {
      if (i >= inv.size()) {
        cs[2 * (p * half + i)] = 1.0f;
        cs[2 * (p * half + i) + 1] = 0.0f;
        continue;
      }
      const float ang = float(p) * float(inv[i]);
      cs[2 * (p * half + i)] = float(std::cos(double(ang)) * factor);
      cs[2 * (p * half + i) + 1] = float(std::sin(double(ang)) * factor);
    }
  return cs;
}

}  // namespace wgc::llm
