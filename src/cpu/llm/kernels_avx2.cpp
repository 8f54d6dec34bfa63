// The avx2 kernel level: AVX2 + FMA + F16C (this file is compiled with -mavx2 -mfma -mf16c on
// x86; elsewhere it defines no table). See kernels.h for what every level computes.
//
// Quantized weights, 8 rows at a time (the rows in the 8 lanes of a vector): the rows' blocks are
// first unpacked into scratch (unsigned quants, so maddubs can multiply them with the signed
// activations; Q8_0 keeps its signed quants and uses the sign trick), then for each token and
// block the 8 rows' integer sums are reduced across lanes to one vector of 8 exact block sums,
// corrected for the quants' offset, and accumulated in f32 with the block scales.
// Float weights: tiles of rows x tokens, 8 lanes along k per output, summed at the end.
#include "cpu/llm/kernels.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)

#include "cpu/llm/kernels_blocks.h"

#include <immintrin.h>

namespace wgc::llm::cpu {
namespace {

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

// ---- float weights: R rows x C tokens per tile, 8 lanes along k ------------------------------------

template <TensorType T, int R, int C>
void float_tile(const Weight& w, const LinearIo& io, int64_t r, int64_t t) {
  constexpr int64_t E = elem_bytes<T>();
  const int64_t K = w.cols;
  const std::byte* wr[R];
  const float* xt[C];
  for (int i = 0; i < R; ++i) wr[i] = w.data + (r + i) * w.row_bytes;
  for (int j = 0; j < C; ++j) xt[j] = io.x + (t + j) * io.x_stride;
  __m256 acc[R][C];
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < C; ++j) acc[i][j] = _mm256_setzero_ps();
  int64_t k = 0;
  for (; k + 8 <= K; k += 8) {
    __m256 wv[R];
    for (int i = 0; i < R; ++i) wv[i] = load8<T>(wr[i] + k * E);
    for (int j = 0; j < C; ++j) {
      const __m256 xv = _mm256_loadu_ps(xt[j] + k);
      for (int i = 0; i < R; ++i) acc[i][j] = _mm256_fmadd_ps(wv[i], xv, acc[i][j]);
    }
  }
  if (k < K) {  // the tail, zero padded
    const int64_t rem = K - k;
    alignas(32) unsigned char wb[32];
    alignas(32) float xb[8];
    __m256 wv[R];
    for (int i = 0; i < R; ++i) {
      for (int b = 0; b < 32; ++b) wb[b] = 0;
      std::memcpy(wb, wr[i] + k * E, size_t(rem * E));
      wv[i] = load8<T>(reinterpret_cast<const std::byte*>(wb));
    }
    for (int j = 0; j < C; ++j) {
      for (int b = 0; b < 8; ++b) xb[b] = b < rem ? xt[j][k + b] : 0.f;
      const __m256 xv = _mm256_load_ps(xb);
      for (int i = 0; i < R; ++i) acc[i][j] = _mm256_fmadd_ps(wv[i], xv, acc[i][j]);
    }
  }
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < C; ++j) {
      float& y = io.y[(t + j) * io.y_stride + r + i];
      const float v = hsum(acc[i][j]);
      y = io.accumulate ? y + v : v;
    }
}

// Tokens are taken in blocks that stay in cache while the chunk's rows pass over them.
constexpr int64_t kTokenBlock = 64;

template <TensorType T>
void linear_float(const Weight& w, const LinearIo& io, int64_t r0, int64_t r1) {
  if (io.n == 1) {
    int64_t r = r0;
    for (; r + 8 <= r1; r += 8) float_tile<T, 8, 1>(w, io, r, 0);
    for (; r < r1; ++r) float_tile<T, 1, 1>(w, io, r, 0);
    return;
  }
  for (int64_t tb = 0; tb < io.n; tb += kTokenBlock) {
    const int64_t te = imin(io.n, tb + kTokenBlock);
    int64_t r = r0;
    for (; r + 4 <= r1; r += 4) {
      int64_t t = tb;
      for (; t + 3 <= te; t += 3) float_tile<T, 4, 3>(w, io, r, t);
      for (; t < te; ++t) float_tile<T, 4, 1>(w, io, r, t);
    }
    for (; r < r1; ++r) {
      int64_t t = tb;
      for (; t + 3 <= te; t += 3) float_tile<T, 1, 3>(w, io, r, t);
      for (; t < te; ++t) float_tile<T, 1, 1>(w, io, r, t);
    }
  }
}

// ---- quantized weights: 8 rows in the lanes ---------------------------------------------------

// Scratch of one 8-row tile, per block b of 32: the 8 rows' 32 quants (unsigned; Q8_0 signed),
// their scales and, by type, Q4_K's minimums or Q6_K's half-block scales (as int16 x 16 for
// madd, and as int32 per row for the offset).
struct Tile {
  __m256i* q;      // [nb][8]
  float* scale;    // [nb][8]
  float* min;      // [nb][8] (Q4_K)
  __m256i* sc;     // [nb][8] (Q6_K) int16: the first half's scale x 8, the second's x 8
  int32_t* sc_lo;  // [nb][8] (Q6_K)
  int32_t* sc_hi;  // [nb][8]
};

int64_t tile_bytes(int64_t nb) { return nb * 8 * (32 + 4 + 4 + 32 + 4 + 4); }

Tile tile_in(void* scratch, int64_t nb) {
  auto* p = static_cast<unsigned char*>(scratch);
  Tile t;
  t.q = reinterpret_cast<__m256i*>(p);
  t.sc = reinterpret_cast<__m256i*>(p + nb * 8 * 32);
  t.scale = reinterpret_cast<float*>(p + nb * 8 * 64);
  t.min = t.scale + nb * 8;
  t.sc_lo = reinterpret_cast<int32_t*>(t.min + nb * 8);
  t.sc_hi = t.sc_lo + nb * 8;
  return t;
}

inline float half_f16c(const std::byte* p) { return _cvtsh_ss(u16_at(p)); }

// Unpacks row i (0..7) of the tile from its file bytes.
template <TensorType T>
void unpack(const Tile& tl, int i, const std::byte* row, int64_t nb) {
  const __m256i low4 = _mm256_set1_epi8(0x0f);
  if constexpr (T == TensorType::Q4_0) {
    const __m128i low4x = _mm_set1_epi8(0x0f);
    for (int64_t b = 0; b < nb; ++b) {
      const std::byte* blk = row + b * 18;
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 2));
      tl.q[b * 8 + i] = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(v, 4), low4x), _mm_and_si128(v, low4x));
      tl.scale[b * 8 + i] = half_f16c(blk);
    }
  } else if constexpr (T == TensorType::Q8_0) {
    for (int64_t b = 0; b < nb; ++b) {
      const std::byte* blk = row + b * 34;
      tl.q[b * 8 + i] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 2));
      tl.scale[b * 8 + i] = half_f16c(blk);
    }
  } else if constexpr (T == TensorType::Q4_K) {
    for (int64_t s = 0; s < nb / 8; ++s) {
      const std::byte* blk = row + s * 144;
      const float d = half_f16c(blk), dmin = half_f16c(blk + 2);
      for (int c = 0; c < 4; ++c) {
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 16 + 32 * c));
        tl.q[(s * 8 + 2 * c) * 8 + i] = _mm256_and_si256(v, low4);
        tl.q[(s * 8 + 2 * c + 1) * 8 + i] = _mm256_and_si256(_mm256_srli_epi16(v, 4), low4);
      }
      for (int j = 0; j < 8; ++j) {
        int sc, m;
        q4k_scale_min(j, blk + 4, sc, m);
        tl.scale[(s * 8 + j) * 8 + i] = d * float(sc);
        tl.min[(s * 8 + j) * 8 + i] = dmin * float(m);
      }
    }
  } else if constexpr (T == TensorType::Q6_K) {
    const __m256i m30 = _mm256_set1_epi8(0x30);
    for (int64_t s = 0; s < nb / 8; ++s) {
      const std::byte* blk = row + s * 210;
      const float d = half_f16c(blk + 208);
      for (int h = 0; h < 2; ++h) {
        const std::byte* ql = blk + 64 * h;
        const std::byte* qh = blk + 128 + 32 * h;
        const std::byte* sc = blk + 192 + 8 * h;
        const __m256i l0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql));
        const __m256i l1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql + 32));
        const __m256i hb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qh));
        const int64_t b0 = s * 8 + h * 4;
        tl.q[(b0 + 0) * 8 + i] =
            _mm256_or_si256(_mm256_and_si256(l0, low4), _mm256_and_si256(_mm256_slli_epi16(hb, 4), m30));
        tl.q[(b0 + 1) * 8 + i] =
            _mm256_or_si256(_mm256_and_si256(l1, low4), _mm256_and_si256(_mm256_slli_epi16(hb, 2), m30));
        tl.q[(b0 + 2) * 8 + i] =
            _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), low4), _mm256_and_si256(hb, m30));
        tl.q[(b0 + 3) * 8 + i] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), low4),
                                                 _mm256_and_si256(_mm256_srli_epi16(hb, 2), m30));
        for (int bb = 0; bb < 4; ++bb) {
          const int lo = int8_t(byte_at(sc, 2 * bb)), hi = int8_t(byte_at(sc, 2 * bb + 1));
          const int64_t b = b0 + bb;
          tl.sc[b * 8 + i] = _mm256_set_m128i(_mm_set1_epi16(int16_t(hi)), _mm_set1_epi16(int16_t(lo)));
          tl.sc_lo[b * 8 + i] = lo;
          tl.sc_hi[b * 8 + i] = hi;
          tl.scale[b * 8 + i] = d;
        }
      }
    }
  }
}

// Lane sums of 8 vectors of 8 int32: result lane i = sum of p[i]'s lanes.
inline __m256i transpose_sum(const __m256i* p) {
  const __m256i a = _mm256_hadd_epi32(p[0], p[1]), b = _mm256_hadd_epi32(p[2], p[3]);
  const __m256i c = _mm256_hadd_epi32(p[4], p[5]), d = _mm256_hadd_epi32(p[6], p[7]);
  const __m256i e = _mm256_hadd_epi32(a, b), f = _mm256_hadd_epi32(c, d);
  return _mm256_add_epi32(_mm256_permute2x128_si256(e, f, 0x20), _mm256_permute2x128_si256(e, f, 0x31));
}

// acc (8 rows) of one token over every block of the tile.
template <TensorType T>
__m256 tile_token(const Tile& tl, int64_t nb, const int8_t* xq, const float* dx, const int16_t* sx) {
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq + b * 32));
    const __m256i* q = tl.q + b * 8;
    __m256i p[8];
    for (int i = 0; i < 8; ++i) {
      if constexpr (T == TensorType::Q8_0)
        p[i] = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_sign_epi8(q[i], q[i]), _mm256_sign_epi8(xv, q[i])), ones);
      else if constexpr (T == TensorType::Q6_K)
        p[i] = _mm256_madd_epi16(_mm256_maddubs_epi16(q[i], xv), tl.sc[b * 8 + i]);
      else
        p[i] = _mm256_madd_epi16(_mm256_maddubs_epi16(q[i], xv), ones);
    }
    __m256i isum = transpose_sum(p);
    const int32_t s_lo = sx[2 * b], s_hi = sx[2 * b + 1];
    if constexpr (T == TensorType::Q4_0) isum = _mm256_sub_epi32(isum, _mm256_set1_epi32(8 * (s_lo + s_hi)));
    if constexpr (T == TensorType::Q6_K) {
      const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(tl.sc_lo + b * 8));
      const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(tl.sc_hi + b * 8));
      const __m256i off = _mm256_add_epi32(_mm256_mullo_epi32(lo, _mm256_set1_epi32(32 * s_lo)),
                                           _mm256_mullo_epi32(hi, _mm256_set1_epi32(32 * s_hi)));
      isum = _mm256_sub_epi32(isum, off);
    }
    const __m256 d = _mm256_set1_ps(dx[b]);
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_mul_ps(_mm256_loadu_ps(tl.scale + b * 8), d), acc);
    if constexpr (T == TensorType::Q4_K)
      acc = _mm256_fmadd_ps(_mm256_set1_ps(float(-(s_lo + s_hi))), _mm256_mul_ps(_mm256_loadu_ps(tl.min + b * 8), d),
                            acc);
  }
  return acc;
}

template <TensorType T>
void linear_quant(const Weight& w, const LinearIo& io, int64_t r0, int64_t r1, void* scratch) {
  const int64_t nb = w.cols / 32;
  const Tile tl = tile_in(scratch, nb);
  for (int64_t r = r0; r < r1; r += 8) {
    const int rows = int(imin(8, r1 - r));
    for (int i = 0; i < 8; ++i) unpack<T>(tl, i, w.data + (r + (i < rows ? i : rows - 1)) * w.row_bytes, nb);
    for (int64_t t = 0; t < io.n; ++t) {
      const __m256 acc = tile_token<T>(tl, nb, io.xq.q + t * w.cols, io.xq.d + t * nb, io.xq.s + t * 2 * nb);
      alignas(32) float v[8];
      _mm256_store_ps(v, acc);
      float* y = io.y + t * io.y_stride + r;
      for (int i = 0; i < rows; ++i) y[i] = io.accumulate ? y[i] + v[i] : v[i];
    }
  }
}

void linear(const Weight& w, const LinearIo& io, int64_t r0, int64_t r1, void* scratch) {
  switch (w.type) {
    case TensorType::F32: return linear_float<TensorType::F32>(w, io, r0, r1);
    case TensorType::F16: return linear_float<TensorType::F16>(w, io, r0, r1);
    case TensorType::BF16: return linear_float<TensorType::BF16>(w, io, r0, r1);
    case TensorType::Q8_0: return linear_quant<TensorType::Q8_0>(w, io, r0, r1, scratch);
    case TensorType::Q4_0: return linear_quant<TensorType::Q4_0>(w, io, r0, r1, scratch);
    case TensorType::Q4_K: return linear_quant<TensorType::Q4_K>(w, io, r0, r1, scratch);
    case TensorType::Q6_K: return linear_quant<TensorType::Q6_K>(w, io, r0, r1, scratch);
    default: break;  // not in kCpuKernelTypes: the engine converts such weights to F16
  }
}

int64_t linear_scratch(int64_t cols) { return tile_bytes(cols / 32); }

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

void attend(const AttendArgs& a) {
  const int64_t B = a.block;
  auto slot = [&](int64_t j) { return int64_t(a.blocks[j / B]) * B + j % B; };
  float m = -__builtin_inff();
  for (int64_t j = 0; j < a.len; ++j) {
    const float s = dot(a.q, a.k + slot(j) * a.kv_stride, a.head_dim) * a.scale;
    a.scores[j] = s;
    m = s > m ? s : m;
  }
  // p_j = exp(s_j - m), their sum in 8 lanes (tail in order after the tree).
  __m256 lsum = _mm256_setzero_ps();
  const __m256 mv = _mm256_set1_ps(m);
  int64_t j = 0;
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
    for (int64_t jj = 0; jj < a.len; ++jj)
      acc = _mm256_fmadd_ps(_mm256_set1_ps(a.scores[jj]), _mm256_loadu_ps(a.v + slot(jj) * a.kv_stride + i), acc);
    _mm256_storeu_ps(a.out + i, _mm256_mul_ps(acc, _mm256_set1_ps(1.f / l)));
  }
  for (; i < hd; ++i) {
    float acc = 0;
    for (int64_t jj = 0; jj < a.len; ++jj) acc = __builtin_fmaf(a.scores[jj], a.v[slot(jj) * a.kv_stride + i], acc);
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

const Kernels table{Isa::Avx2, 8, 8, linear, linear_scratch, quantize, attend, swiglu};

}  // namespace

const Kernels* avx2_kernels() { return &table; }

}  // namespace wgc::llm::cpu

#else

namespace wgc::llm::cpu {
const Kernels* avx2_kernels() { return nullptr; }
}  // namespace wgc::llm::cpu

#endif
