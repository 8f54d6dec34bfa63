// Comparing a result with its reference: the one relative-error measure of the tests and the
// benchmark checks.
#pragma once

#include <algorithm>
#include <cmath>
#include <span>

namespace wgc::cpu {

// max |got[i] - want[i]| / max |want[i]| over i < want.size(). A non-finite got where want is
// finite (an unwritten, poisoned element) and a got shorter than want are infinite errors;
// equal non-finite values (an infinite maximum, say) count as exact.
template <class T>
double max_rel_error(std::span<const float> got, std::span<const T> want) {
  if (got.size() < want.size()) return INFINITY;
  double md = 0, mr = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double g = got[i], w = double(want[i]);
    if (!std::isfinite(w)) {
      if (!(g == w)) return INFINITY;
      continue;
    }
    md = std::max(md, std::isfinite(g) ? std::fabs(g - w) : INFINITY);
    mr = std::max(mr, std::fabs(w));
  }
  return md / std::max(mr, 1e-30);
}

}  // namespace wgc::cpu
