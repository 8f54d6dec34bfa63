#include "cpu/llm/rope_table.h"

#include <cmath>

namespace wgc::llm {

std::vector<float> rope_cos_sin(std::span<const double> inv, int max_pos, double factor) {
  const size_t half = inv.size();
  std::vector<float> cs(size_t(max_pos > 0 ? max_pos : 0) * half * 2);
  for (size_t p = 0; p < size_t(max_pos > 0 ? max_pos : 0); ++p)
    for (size_t i = 0; i < half; ++i) {
      const float ang = float(p) * float(inv[i]);
      cs[2 * (p * half + i)] = float(std::cos(double(ang)) * factor);
      cs[2 * (p * half + i) + 1] = float(std::sin(double(ang)) * factor);
    }
  return cs;
}

}  // namespace wgc::llm
