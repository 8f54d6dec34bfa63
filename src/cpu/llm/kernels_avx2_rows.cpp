// The avx2 level's row kernels: activations quantized to 8 bits per block of 32, attention over one
// head's cache, SwiGLU (kernels.h defines what each computes). Compiled with -mavx2 -mfma -mf16c.
#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)

#include "cpu/llm/kernels_avx2_simd.h"

namespace wgc::llm::cpu::avx2 {
namespace {

// ---- attention and SwiGLU -----------------------------------------------------------------------

float dot(const float* a, const float* b, int64_t n) {
  __m256 acc = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc);
  if (i < n) {
    alignas(32) float pa[8] = {}, pb[8] = {};
    for (int64_t j = i; j < n; ++j) pa[j - i] = a[j], pb[j - i] = b[j];
    acc = _mm256_fmadd_ps(_mm256_load_ps(pa), _mm256_load_ps(pb), acc);
  }
  return hsum(acc);
}

}  // namespace

// ---- activations ------------------------------------------------------------------------------

void quantize(const float* x, int64_t x_stride, int64_t t0, int64_t t1, const Q8Rows& out) {
  const int64_t k = out.k, nb = k / 32;
  const __m256 sign = _mm256_set1_ps(-0.f);
  for (int64_t t = t0; t < t1; ++t) {
    const float* xt = x + t * x_stride;
    for (int64_t b = 0; b < nb; ++b) {
      __m256 v[4];
      __m256 amax = _mm256_setzero_ps();
      for (int i = 0; i < 4; ++i) {
        v[i] = _mm256_loadu_ps(xt + b * 32 + 8 * i);
        amax = _mm256_max_ps(amax, _mm256_andnot_ps(sign, v[i]));
      }
      const float d = hmax(amax) / 127.f, id = d > 0 ? 1.f / d : 0.f;
      out.d[t * nb + b] = d;
      __m256i q[4];
      for (int i = 0; i < 4; ++i) {
        __m256 s =
            _mm256_round_ps(_mm256_mul_ps(v[i], _mm256_set1_ps(id)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        s = _mm256_min_ps(_mm256_max_ps(s, _mm256_set1_ps(-127.f)), _mm256_set1_ps(127.f));
        q[i] = _mm256_cvtps_epi32(s);
      }
      // Sums of 16: lanes of q[0] + q[1] and of q[2] + q[3].
      const __m256i s01 = _mm256_add_epi32(q[0], q[1]), s23 = _mm256_add_epi32(q[2], q[3]);
      const __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(s01, s23), _mm256_setzero_si256());
      // h lanes: [s01 0+1+2+3, s23 0+1+2+3, 0, 0 | s01 4+5+6+7, s23 4..7, 0, 0]
      const __m128i hs = _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
      out.s[t * 2 * nb + 2 * b] = int16_t(_mm_cvtsi128_si32(hs));
      out.s[t * 2 * nb + 2 * b + 1] = int16_t(_mm_extract_epi32(hs, 1));
      // int32 -> int8 in element order (packs interleave the 128-bit lanes; the permute undoes it).
      const __m256i p16a = _mm256_packs_epi32(q[0], q[1]), p16b = _mm256_packs_epi32(q[2], q[3]);
      const __m256i p8 = _mm256_packs_epi16(p16a, p16b);
      const __m256i ordered = _mm256_permutevar8x32_epi32(p8, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out.q + t * k + b * 32), ordered);
    }
  }
}

void attend(const AttendArgs& a) {
  const int64_t B = a.block;
  auto slot = [&](int64_t j) { return int64_t(a.blocks[j / B]) * B + j % B; };
  float m = -__builtin_inff();
  for (int64_t j = a.first; j < a.len; ++j) {
    float s = dot(a.q, a.k + slot(j) * a.kv_stride, a.head_dim) * a.scale;
    if (a.softcap > 0) s = a.softcap * __builtin_tanhf(s / a.softcap);  // (no inline std:: function here)
    a.scores[j] = s;
    m = s > m ? s : m;
  }
  // p_j = exp(s_j - m), their sum in 8 lanes (tail in order after the tree).
  __m256 lsum = _mm256_setzero_ps();
  const __m256 mv = _mm256_set1_ps(m);
  int64_t j = a.first;
  for (; j + 8 <= a.len; j += 8) {
    const __m256 p = exp8(_mm256_sub_ps(_mm256_loadu_ps(a.scores + j), mv));
    _mm256_storeu_ps(a.scores + j, p);
    lsum = _mm256_add_ps(lsum, p);
  }
  float l = hsum(lsum);
  if (j < a.len) {
    alignas(32) float t[8];
    for (int i = 0; i < 8; ++i) t[i] = j + i < a.len ? a.scores[j + i] - m : -100.f;
    _mm256_store_ps(t, exp8(_mm256_load_ps(t)));
    for (int i = 0; j + i < a.len; ++i) {
      a.scores[j + i] = t[i];
      l += t[i];
    }
  }
  const int hd = a.head_dim;
  int i = 0;
  for (; i + 8 <= hd; i += 8) {  // out[i..i+8) = sum_j p_j v_j[i..i+8), in order of j
    __m256 acc = _mm256_setzero_ps();
    for (int64_t jj = a.first; jj < a.len; ++jj)
      acc = _mm256_fmadd_ps(_mm256_set1_ps(a.scores[jj]), _mm256_loadu_ps(a.v + slot(jj) * a.kv_stride + i), acc);
    _mm256_storeu_ps(a.out + i, _mm256_mul_ps(acc, _mm256_set1_ps(1.f / l)));
  }
  for (; i < hd; ++i) {
    float acc = 0;
    for (int64_t jj = a.first; jj < a.len; ++jj)
      acc = __builtin_fmaf(a.scores[jj], a.v[slot(jj) * a.kv_stride + i], acc);
    a.out[i] = acc * (1.f / l);
  }
}

void swiglu(const float* g, const float* u, float* out, int64_t n) {
  int64_t i = 0;
  const __m256 one = _mm256_set1_ps(1.f), neg = _mm256_set1_ps(-0.f);
  for (; i + 8 <= n; i += 8) {
    const __m256 gv = _mm256_loadu_ps(g + i);
    const __m256 e = exp8(_mm256_xor_ps(gv, neg));
    _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_div_ps(gv, _mm256_add_ps(one, e)), _mm256_loadu_ps(u + i)));
  }
  if (i < n) {
    alignas(32) float gb[8] = {}, ub[8] = {}, ob[8];
    for (int64_t j = i; j < n; ++j) gb[j - i] = g[j], ub[j - i] = u[j];
    const __m256 gv = _mm256_load_ps(gb);
    const __m256 e = exp8(_mm256_xor_ps(gv, neg));
    _mm256_store_ps(ob, _mm256_mul_ps(_mm256_div_ps(gv, _mm256_add_ps(one, e)), _mm256_load_ps(ub)));
    for (int64_t j = i; j < n; ++j) out[j] = ob[j - i];
  }
}

}  // namespace wgc::llm::cpu::avx2

#endif
