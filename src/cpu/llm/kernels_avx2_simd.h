// The avx2 kernel level's vector helpers and its row kernels (activations quantized per block,
// attention over one head, SwiGLU), shared by kernels_avx2.cpp (the linear kernels and the level's
// table) and kernels_avx2_rows.cpp. Only for files compiled with -mavx2 -mfma -mf16c.
#pragma once

#include "cpu/llm/kernels.h"

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

namespace wgc::llm::cpu::avx2 {

// ---- helpers ---------------------------------------------------------------------------------

// ((a0 + a4) + (a2 + a6)) + ((a1 + a5) + (a3 + a7)): the portable level's tree.
inline float hsum(__m256 v) {
  const __m128 b = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 c = _mm_add_ps(b, _mm_movehl_ps(b, b));
  return _mm_cvtss_f32(_mm_add_ss(c, _mm_movehdup_ps(c)));
}

inline float hmax(__m256 v) {
  __m128 b = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  b = _mm_max_ps(b, _mm_movehl_ps(b, b));
  return _mm_cvtss_f32(_mm_max_ss(b, _mm_movehdup_ps(b)));
}

// exp(x) to about 2 ulp for x in [-87.3, 88.3] (clamped there: exp(-87.3) ~ 1e-38, as good as 0
// beside 1), Cephes' polynomial.
inline __m256 exp8(__m256 x) {
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.3f)), _mm256_set1_ps(88.3f));
  const __m256 fx = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  x = _mm256_fnmadd_ps(fx, _mm256_set1_ps(0.693359375f), x);
  x = _mm256_fnmadd_ps(fx, _mm256_set1_ps(-2.12194440e-4f), x);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, x, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, x, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, x, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, x, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, x, _mm256_set1_ps(5.0000001201e-1f));
  const __m256 y = _mm256_add_ps(_mm256_fmadd_ps(p, _mm256_mul_ps(x, x), x), _mm256_set1_ps(1.f));
  const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(fx), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(y, _mm256_castsi256_ps(e));
}

inline int64_t imin(int64_t a, int64_t b) { return a < b ? a : b; }

// 8 weights of a float type as f32.
template <TensorType T>
inline __m256 load8(const std::byte* p) {
  if constexpr (T == TensorType::F32) return _mm256_loadu_ps(reinterpret_cast<const float*>(p));
  if constexpr (T == TensorType::F16) return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  if constexpr (T == TensorType::BF16)
    return _mm256_castsi256_ps(
        _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))), 16));
}

template <TensorType T>
constexpr int64_t elem_bytes() {
  return T == TensorType::F32 ? 4 : 2;
}

// ---- row kernels (kernels_avx2_rows.cpp) -------------------------------------------------------
void quantize(const float* x, int64_t x_stride, int64_t t0, int64_t t1, const Q8Rows& out);
void attend(const AttendArgs& a);
void swiglu(const float* g, const float* u, float* out, int64_t n);

}  // namespace wgc::llm::cpu::avx2
