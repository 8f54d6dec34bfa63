// The portable kernel level: plain C++ (compiled for the baseline target, without contraction of
// multiplies and adds: see CMakeLists.txt), the definitions of kernels.h written out.
#include "cpu/llm/kernels.h"
#include "cpu/llm/kernels_blocks.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace wgc::llm::cpu {
namespace {

constexpr int L = 8;  // lanes of the float weights' dot products

// The fixed tree over 8 lanes: ((a0 + a4) + (a2 + a6)) + ((a1 + a5) + (a3 + a7)).
float lane_sum(const float* a) {
  const float b0 = a[0] + a[4], b1 = a[1] + a[5], b2 = a[2] + a[6], b3 = a[3] + a[7];
  return (b0 + b2) + (b1 + b3);
}

float dot_f32(const float* a, const float* b, int64_t n) {
  float acc[L] = {};
  int64_t k = 0;
  for (; k + L <= n; k += L)
    for (int l = 0; l < L; ++l) acc[l] += a[k + l] * b[k + l];
  for (int l = 0; k + l < n; ++l) acc[l] += a[k + l] * b[k + l];
  return lane_sum(acc);
}

void store(const LinearIo& io, int64_t t, int64_t r, float v) {
  float& y = io.y[t * io.y_stride + r];
  y = io.accumulate ? y + v : v;
}

void linear_float(const Weight& w, const LinearIo& io, int64_t r0, int64_t r1) {
  std::vector<float> row(static_cast<size_t>(w.cols));
  for (int64_t r = r0; r < r1; ++r) {
    const std::byte* p = w.data + r * w.row_bytes;
    for (int64_t k = 0; k < w.cols; ++k)
      if (w.type == TensorType::F32)
        std::memcpy(&row[size_t(k)], p + 4 * k, 4);
      else
        row[size_t(k)] = w.type == TensorType::F16 ? half_at(p + 2 * k) : bf16_at(p + 2 * k);
    for (int64_t t = 0; t < io.n; ++t) store(io, t, r, dot_f32(row.data(), io.x + t * io.x_stride, w.cols));
  }
}

void linear_quant(const Weight& w, const LinearIo& io, int64_t r0, int64_t r1) {
  const int64_t k = w.cols, nb = k / 32;
  std::vector<int8_t> q(static_cast<size_t>(k)), sc16(static_cast<size_t>(2 * nb));
  std::vector<float> scale(static_cast<size_t>(nb)), mins(static_cast<size_t>(nb));
  const UnpackedRow u{q.data(), scale.data(), mins.data(), sc16.data()};
  for (int64_t r = r0; r < r1; ++r) {
    unpack_row(w.type, w.data + r * w.row_bytes, k, u);
    for (int64_t t = 0; t < io.n; ++t) {
      const int8_t* xq = io.xq.q + t * k;
      const float* dx = io.xq.d + t * nb;
      const int16_t* sx = io.xq.s + t * 2 * nb;
      float acc = 0;
      for (int64_t b = 0; b < nb; ++b) {
        int32_t half[2] = {0, 0};
        for (int h = 0; h < 2; ++h)
          for (int i = 0; i < 16; ++i) half[h] += int32_t(q[size_t(b * 32 + h * 16 + i)]) * xq[b * 32 + h * 16 + i];
        const int32_t isum = int32_t(sc16[size_t(2 * b)]) * half[0] + int32_t(sc16[size_t(2 * b + 1)]) * half[1];
        acc = acc + float(isum) * (scale[size_t(b)] * dx[b]);
        if (w.type == TensorType::Q4_K) acc = acc + float(-(sx[2 * b] + sx[2 * b + 1])) * (mins[size_t(b)] * dx[b]);
      }
      store(io, t, r, acc);
    }
  }
}

void linear(const Weight& w, const LinearIo& io, int64_t r0, int64_t r1, void*) {
  if (takes_q8(w.type))
    linear_quant(w, io, r0, r1);
  else
    linear_float(w, io, r0, r1);
}

void quantize(const float* x, int64_t x_stride, int64_t t0, int64_t t1, const Q8Rows& out) {
  const int64_t k = out.k;
  for (int64_t t = t0; t < t1; ++t) {
    const float* xt = x + t * x_stride;
    for (int64_t b = 0; b < k / 32; ++b) {
      float amax = 0;
      for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(xt[b * 32 + i]));
      const float d = amax / 127.f, id = d > 0 ? 1.f / d : 0.f;
      out.d[t * (k / 32) + b] = d;
      for (int h = 0; h < 2; ++h) {
        int sum = 0;
        for (int i = 0; i < 16; ++i) {
          const float v = std::nearbyint(xt[b * 32 + h * 16 + i] * id);
          const int8_t qi = int8_t(std::clamp(v, -127.f, 127.f));
          out.q[t * k + b * 32 + h * 16 + i] = qi;
          sum += qi;
        }
        out.s[t * (k / 16) + 2 * b + h] = int16_t(sum);
      }
    }
  }
}

void attend(const AttendArgs& a) {
  float m = -std::numeric_limits<float>::infinity();
  for (int64_t j = a.first; j < a.len; ++j) {
    const int64_t slot = int64_t(a.blocks[j / a.block]) * a.block + j % a.block;
    a.scores[j] = dot_f32(a.q, a.k + slot * a.kv_stride, a.head_dim) * a.scale;
    if (a.softcap > 0) a.scores[j] = a.softcap * std::tanh(a.scores[j] / a.softcap);
    m = std::max(m, a.scores[j]);
  }
  float l = 0;
  for (int i = 0; i < a.head_dim; ++i) a.out[i] = 0;
  for (int64_t j = a.first; j < a.len; ++j) {
    const float p = std::exp(a.scores[j] - m);
    l += p;
    const int64_t slot = int64_t(a.blocks[j / a.block]) * a.block + j % a.block;
    const float* v = a.v + slot * a.kv_stride;
    for (int i = 0; i < a.head_dim; ++i) a.out[i] += p * v[i];
  }
  const float inv = 1.f / l;
  for (int i = 0; i < a.head_dim; ++i) a.out[i] *= inv;
}

void swiglu(const float* g, const float* u, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = g[i] / (1.f + std::exp(-g[i])) * u[i];
}

int64_t linear_scratch(int64_t) { return 0; }

const Kernels table{Isa::Portable, L, 8, linear, linear_scratch, quantize, attend, swiglu};

}  // namespace

const Kernels* portable_kernels() { return &table; }

}  // namespace wgc::llm::cpu
