#include "cpu/matmul.h"

#include <algorithm>
#include <vector>

namespace wgc::cpu {

void matmul_reference(std::span<const float> a, std::span<const float> b, std::span<float> c, uint32_t m, uint32_t n,
                      uint32_t k, bool trans_b) {
  for (uint32_t i = 0; i < m; ++i)
    for (uint32_t j = 0; j < n; ++j) {
      double acc = 0;
      for (uint32_t l = 0; l < k; ++l)
        acc += double(a[size_t(i) * k + l]) * double(trans_b ? b[size_t(j) * k + l] : b[size_t(l) * n + j]);
      c[size_t(i) * n + j] = static_cast<float>(acc);
    }
}

void matmul(std::span<const float> a, std::span<const float> b, std::span<float> c, uint32_t m, uint32_t n, uint32_t k,
            bool trans_b) {
  // Row-times-row form so the inner loop runs over contiguous memory (vectorises).
  std::vector<float> bt;
  std::span<const float> brow = b;
  if (!trans_b) {
    bt.resize(size_t(n) * k);
    for (uint32_t l = 0; l < k; ++l)
      for (uint32_t j = 0; j < n; ++j) bt[size_t(j) * k + l] = b[size_t(l) * n + j];
    brow = bt;
  }
  constexpr uint32_t kBlock = 64;  // rows of B kept hot in cache while A's rows stream past
  for (uint32_t j0 = 0; j0 < n; j0 += kBlock)
    for (uint32_t i = 0; i < m; ++i)
      for (uint32_t j = j0; j < std::min(n, j0 + kBlock); ++j) {
        const float* ar = &a[size_t(i) * k];
        const float* br = &brow[size_t(j) * k];
        float acc = 0;
        for (uint32_t l = 0; l < k; ++l) acc += ar[l] * br[l];
        c[size_t(i) * n + j] = acc;
      }
}

}  // namespace wgc::cpu
