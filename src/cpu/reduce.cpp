#include "cpu/reduce.h"

#include "util/error.h"

#include <cmath>
#include <string>

namespace wgc::cpu {

namespace {
void need_data(std::span<const float> x, const char* what) {
  if (x.empty()) throw Error(std::string("wgc: ") + what + " of an empty array (length 0) has no value");
}
}  // namespace

double sum_f64(std::span<const float> x) {
  // Four accumulators: independent chains, and a little less rounding than one long chain.
  double s[4] = {0, 0, 0, 0};
  size_t i = 0;
  for (; i + 4 <= x.size(); i += 4)
    for (size_t k = 0; k < 4; ++k) s[k] += double(x[i + k]);
  for (; i < x.size(); ++i) s[0] += double(x[i]);
  return (s[0] + s[1]) + (s[2] + s[3]);
}

double sum_abs_f64(std::span<const float> x) {
  double s = 0;
  for (float v : x) s += std::fabs(double(v));
  return s;
}

float sum(std::span<const float> x) { return static_cast<float>(sum_f64(x)); }

float mean(std::span<const float> x) {
  need_data(x, "mean");
  return static_cast<float>(sum_f64(x) / static_cast<double>(x.size()));
}

float max(std::span<const float> x) {
  need_data(x, "max");
  float m[4] = {x[0], x[0], x[0], x[0]};
  size_t i = 0;
  for (; i + 4 <= x.size(); i += 4)
    for (size_t k = 0; k < 4; ++k) m[k] = x[i + k] > m[k] ? x[i + k] : m[k];
  for (; i < x.size(); ++i) m[0] = x[i] > m[0] ? x[i] : m[0];
  return std::fmax(std::fmax(m[0], m[1]), std::fmax(m[2], m[3]));
}

float min(std::span<const float> x) {
  need_data(x, "min");
  float m[4] = {x[0], x[0], x[0], x[0]};
  size_t i = 0;
  for (; i + 4 <= x.size(); i += 4)
    for (size_t k = 0; k < 4; ++k) m[k] = x[i + k] < m[k] ? x[i + k] : m[k];
  for (; i < x.size(); ++i) m[0] = x[i] < m[0] ? x[i] : m[0];
  return std::fmin(std::fmin(m[0], m[1]), std::fmin(m[2], m[3]));
}

}  // namespace wgc::cpu
