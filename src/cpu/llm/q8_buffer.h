// Storage for Q8Rows (kernels.h): n rows of k quantized activations.
#pragma once

#include "cpu/llm/kernels.h"

#include <cstdint>
#include <vector>

namespace wgc::llm::cpu {

struct Q8Buffer {
  std::vector<int8_t> q;
  std::vector<float> d;
  std::vector<int16_t> s;
  int64_t k = 0;

  void resize(int64_t n, int64_t row_length) {
    k = row_length;
    q.resize(size_t(n * k));
    d.resize(size_t(n * k / 32));
    s.resize(size_t(n * k / 16));
  }
  Q8Rows rows() { return {q.data(), d.data(), s.data(), k}; }
};

}  // namespace wgc::llm::cpu
