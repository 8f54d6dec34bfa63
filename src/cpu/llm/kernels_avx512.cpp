// The avx512 kernel level: AVX-512 F/BW/VL with VNNI, plus AVX2/FMA/F16C (this file is compiled
// with -mavx512f -mavx512bw -mavx512vl -mavx512vnni -mavx2 -mfma -mf16c on x86; elsewhere it
// defines no table). See kernels.h for what every level computes: the quantized types give the
// same bits as the avx2 level (exact integer block sums, the same float steps); float weights
// accumulate in 16 lanes.
//
// Quantized weights, 16 rows at a time (one row per lane of a vector). A tile's blocks are first
// unpacked into scratch in vpdpbusd's layout: per block of 32 and group g of 4 quants, one vector
// whose lane r holds quants 4g..4g+3 of row r, unsigned (Q4_0/Q4_K nibbles, Q6_K's 6 bits, Q8_0's
// bytes + 128), with the block's 16 scales beside them. A token then costs per block 8 vpdpbusd,
// each against 4 activation bytes broadcast from memory, and the lanes hold the 16 rows' exact
// block sums with no reduction across lanes; the quants' offset (8, 32, 128 times the activation
// sums, precomputed per token) is the accumulators' starting value. Tokens go 4 at a time, so each
// weight vector loaded from scratch feeds 4 tokens (llama.cpp's gemm idea: weights read once per
// tile of tokens, the accumulators in registers). Blocks go in chunks that fit L1 with a
// per-token accumulator buffer between chunks, tokens in blocks of 64 per unpacking.
// Float weights: tiles of rows x tokens, 16 lanes along k per output, summed at the end.
#if defined(__GNUC__) && !defined(__clang__)
// GCC 12's AVX-512 headers trip its own uninitialized-use warnings (their _mm512_undefined_*
// self-initialize), reported at every inlined intrinsic.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "cpu/llm/kernels.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512VNNI__) && \
    defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)

#include "cpu/llm/kernels_blocks.h"

#include <immintrin.h>

namespace wgc::llm::cpu {

const Kernels* avx2_kernels();

namespace {

inline int64_t imin(int64_t a, int64_t b) { return a < b ? a : b; }

// ((a0 + a4) + (a2 + a6)) + ((a1 + a5) + (a3 + a7)) of the 8 sums a_i = v_i + v_{i+8}: the
// portable level's 8-lane tree after folding the upper half.
inline float hsum16(__m512 v) {
  const __m256 a =
      _mm256_add_ps(_mm512_castps512_ps256(v), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
  const __m128 b = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
  const __m128 c = _mm_add_ps(b, _mm_movehl_ps(b, b));
  return _mm_cvtss_f32(_mm_add_ss(c, _mm_movehdup_ps(c)));
}

// The bytes of the next tile of rows, fetched into L2 a few lines per block while this tile
// unpacks: its rows are one contiguous range, a single stream for the memory system, where the
// unpacking's 16 interleaved row streams are more than the hardware prefetchers follow (decode is
// bound by how fast the weights arrive; the float weights' 8-row tiles gained nothing from it).
struct Prefetch {
  const char* p = nullptr;
  const char* end = nullptr;
  int64_t per_block = 0;  // bytes per step

  // The rows [r, r1) of w (none when empty), over `steps` steps.
  Prefetch(const Weight& w, int64_t r, int64_t r1, int64_t steps) {
    if (r >= r1) return;
    p = reinterpret_cast<const char*>(w.data + r * w.row_bytes);
    end = p + (r1 - r) * w.row_bytes;
    per_block = ((end - p) / steps + 63) / 64 * 64;
  }

  void step() {
    const char* stop = end - p > per_block ? p + per_block : end;
    for (; p < stop; p += 64) _mm_prefetch(p, _MM_HINT_T1);
  }
};

// ---- float weights: R rows x C tokens per tile, 16 lanes along k ---------------------------------

template <TensorType T>
inline __m512 load16(const std::byte* p) {
  if constexpr (T == TensorType::F32) return _mm512_loadu_ps(reinterpret_cast<const float*>(p));
  if constexpr (T == TensorType::F16) return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  if constexpr (T == TensorType::BF16)
    return _mm512_castsi512_ps(
        _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))), 16));
}

// The same for the k < 16 elements left at the end of a row (zeros after them).
template <TensorType T>
inline __m512 load16_tail(const std::byte* p, int64_t k) {
  const __mmask16 m = __mmask16((1u << k) - 1);
  if constexpr (T == TensorType::F32) return _mm512_maskz_loadu_ps(m, p);
  if constexpr (T == TensorType::F16) return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
  if constexpr (T == TensorType::BF16)
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, p)), 16));
}

template <TensorType T>
constexpr int64_t elem_bytes() {
  return T == TensorType::F32 ? 4 : 2;
}

template <TensorType T, int R, int C>
void float_tile(const Weight& w, const LinearIo& io, int64_t r, int64_t t) {
  constexpr int64_t E = elem_bytes<T>();
  const int64_t K = w.cols;
  const std::byte* wr[R];
  const float* xt[C];
  for (int i = 0; i < R; ++i) wr[i] = w.data + (r + i) * w.row_bytes;
  for (int j = 0; j < C; ++j) xt[j] = io.x + (t + j) * io.x_stride;
  __m512 acc[R][C];
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < C; ++j) acc[i][j] = _mm512_setzero_ps();
  int64_t k = 0;
  for (; k + 16 <= K; k += 16) {
    __m512 wv[R];
    for (int i = 0; i < R; ++i) wv[i] = load16<T>(wr[i] + k * E);
    for (int j = 0; j < C; ++j) {
      const __m512 xv = _mm512_loadu_ps(xt[j] + k);
      for (int i = 0; i < R; ++i) acc[i][j] = _mm512_fmadd_ps(wv[i], xv, acc[i][j]);
    }
  }
  if (k < K) {  // the tail, zero padded
    const int64_t rem = K - k;
    __m512 wv[R];
    for (int i = 0; i < R; ++i) wv[i] = load16_tail<T>(wr[i] + k * E, rem);
    for (int j = 0; j < C; ++j) {
      const __m512 xv = _mm512_maskz_loadu_ps(__mmask16((1u << rem) - 1), xt[j] + k);
      for (int i = 0; i < R; ++i) acc[i][j] = _mm512_fmadd_ps(wv[i], xv, acc[i][j]);
    }
  }
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < C; ++j) {
      float& y = io.y[(t + j) * io.y_stride + r + i];
      const float v = hsum16(acc[i][j]);
      y = io.accumulate ? y + v : v;
    }
}

// Tokens are taken in blocks that stay in cache while the chunk's rows pass over them.
constexpr int64_t kFloatTokenBlock = 32;

template <TensorType T>
void linear_float(const Weight& w, const LinearIo& io, int64_t r0, int64_t r1) {
  if (io.n == 1) {
    int64_t r = r0;
    for (; r + 8 <= r1; r += 8) float_tile<T, 8, 1>(w, io, r, 0);
    for (; r < r1; ++r) float_tile<T, 1, 1>(w, io, r, 0);
    return;
  }
  for (int64_t tb = 0; tb < io.n; tb += kFloatTokenBlock) {
    const int64_t te = imin(io.n, tb + kFloatTokenBlock);
    int64_t r = r0;
    for (; r + 4 <= r1; r += 4) {
      int64_t t = tb;
      for (; t + 6 <= te; t += 6) float_tile<T, 4, 6>(w, io, r, t);
      for (; t < te; ++t) float_tile<T, 4, 1>(w, io, r, t);
    }
    for (; r < r1; ++r) {
      int64_t t = tb;
      for (; t + 6 <= te; t += 6) float_tile<T, 1, 6>(w, io, r, t);
      for (; t < te; ++t) float_tile<T, 1, 1>(w, io, r, t);
    }
  }
}

// ---- quantized weights: 16 rows in the lanes --------------------------------------------------

constexpr int64_t kRows = 16;        // rows per tile
constexpr int64_t kChunk = 32;       // blocks of 32 unpacked at a time (16 KiB of quants)
constexpr int64_t kTokenBlock = 64;  // tokens per unpacking of a chunk
constexpr int kTokens = 4;           // tokens per pass over a chunk (registers)

// Scratch of one tile: the chunk's quants and scales, and per token of the token block the
// accumulators between chunks and the activations' offsets.
struct Tile {
  __m512i* q;      // [kChunk][8]
  float* scale;    // [kChunk][16]
  float* min;      // [kChunk][16] (Q4_K)
  __m512i* sc_lo;  // [kChunk] (Q6_K) int32 x 16: the scale of each row's first half-block
  __m512i* sc_hi;  // [kChunk]
  float* acc;      // [kTokenBlock][16]
  int32_t* off;    // [kTokenBlock][2 nb]: the accumulators' start (Q6_K: per half-block)
  float* negsum;   // [kTokenBlock][nb] (Q4_K): -(sum of the block's activation quants)
};

int64_t tile_bytes(int64_t nb) {
  return kChunk * (8 * 64 + 64 + 64 + 64 + 64) + kTokenBlock * 64 + kTokenBlock * nb * (8 + 4);
}

Tile tile_in(void* scratch, int64_t nb) {
  auto* p = static_cast<unsigned char*>(scratch);
  Tile t;
  t.q = reinterpret_cast<__m512i*>(p);
  p += kChunk * 8 * 64;
  t.sc_lo = reinterpret_cast<__m512i*>(p);
  p += kChunk * 64;
  t.sc_hi = reinterpret_cast<__m512i*>(p);
  p += kChunk * 64;
  t.scale = reinterpret_cast<float*>(p);
  p += kChunk * 64;
  t.min = reinterpret_cast<float*>(p);
  p += kChunk * 64;
  t.acc = reinterpret_cast<float*>(p);
  p += kTokenBlock * 64;
  t.off = reinterpret_cast<int32_t*>(p);
  p += kTokenBlock * nb * 8;
  t.negsum = reinterpret_cast<float*>(p);
  return t;
}

// The 16 rows' 16 bytes at row[r] + at as 4 vectors: out[j] lane r = bytes 4j..4j+3 of row r.
inline void transpose16x4(const std::byte* const* row, int64_t at, __m512i out[4]) {
  // a[k] holds rows k, 4 + k, 8 + k, 12 + k in its 128-bit lanes; the two unpack stages then
  // transpose within each lane, leaving lane l, position p = row 4l + p.
  __m512i a[4];
  for (int k = 0; k < 4; ++k) {
    __m512i v = _mm512_castsi128_si512(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row[k] + at)));
    v = _mm512_inserti32x4(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(row[4 + k] + at)), 1);
    v = _mm512_inserti32x4(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(row[8 + k] + at)), 2);
    a[k] = _mm512_inserti32x4(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(row[12 + k] + at)), 3);
  }
  const __m512i t0 = _mm512_unpacklo_epi32(a[0], a[1]), t1 = _mm512_unpackhi_epi32(a[0], a[1]);
  const __m512i t2 = _mm512_unpacklo_epi32(a[2], a[3]), t3 = _mm512_unpackhi_epi32(a[2], a[3]);
  out[0] = _mm512_unpacklo_epi64(t0, t2);
  out[1] = _mm512_unpackhi_epi64(t0, t2);
  out[2] = _mm512_unpacklo_epi64(t1, t3);
  out[3] = _mm512_unpackhi_epi64(t1, t3);
}

// Byte k (0..3) of each 32-bit lane, as an int32.
inline __m512i byte_of(__m512i v, int k) {
  return _mm512_and_si512(_mm512_srli_epi32(v, unsigned(8 * k)), _mm512_set1_epi32(0xff));
}

// The 16 rows' halves at row[r] + at as floats.
inline __m512 halves16(const std::byte* const* row, int64_t at) {
  // Gathered through memory: _mm_insert_epi16 needs a constant lane, which clang checks before
  // unrolling the loop.
  alignas(32) uint16_t h[16];
  for (int r = 0; r < 16; ++r) h[r] = u16_at(row[r] + at);
  return _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(h)));
}

// Unpacks blocks [b0, b0 + nc) of the tile's rows into tl (block b0 + c at index c).
template <TensorType T>
void unpack(const Tile& tl, const std::byte* const* row, int64_t b0, int64_t nc, Prefetch& pf) {
  const __m512i low4 = _mm512_set1_epi8(0x0f);
  __m512i v[4];
  if constexpr (T == TensorType::Q4_0) {
    for (int64_t c = 0; c < nc; ++c) {
      pf.step();
      const int64_t at = (b0 + c) * 18;
      transpose16x4(row, at + 2, v);
      __m512i* q = tl.q + c * 8;
      for (int j = 0; j < 4; ++j) {
        q[j] = _mm512_and_si512(v[j], low4);
        q[4 + j] = _mm512_and_si512(_mm512_srli_epi16(v[j], 4), low4);
      }
      _mm512_store_ps(tl.scale + c * 16, halves16(row, at));
    }
  } else if constexpr (T == TensorType::Q8_0) {
    const __m512i bias = _mm512_set1_epi8(char(0x80));
    for (int64_t c = 0; c < nc; ++c) {
      pf.step();
      const int64_t at = (b0 + c) * 34;
      __m512i* q = tl.q + c * 8;
      for (int h = 0; h < 2; ++h) {
        transpose16x4(row, at + 2 + 16 * h, v);
        for (int j = 0; j < 4; ++j) q[4 * h + j] = _mm512_xor_si512(v[j], bias);
      }
      _mm512_store_ps(tl.scale + c * 16, halves16(row, at));
    }
  } else if constexpr (T == TensorType::Q4_K) {
    for (int64_t s = b0 / 8; s < (b0 + nc) / 8; ++s) {
      for (int j = 0; j < 8; ++j) pf.step();
      const int64_t at = s * 144;
      const __m512 d = halves16(row, at), dmin = halves16(row, at + 2);
      const int64_t c0 = s * 8 - b0;
      for (int pair = 0; pair < 4; ++pair) {  // 32 bytes: block 2 pair (low nibbles), 2 pair + 1 (high)
        __m512i* lo = tl.q + (c0 + 2 * pair) * 8;
        __m512i* hi = lo + 8;
        for (int h = 0; h < 2; ++h) {
          transpose16x4(row, at + 16 + 32 * pair + 16 * h, v);
          for (int j = 0; j < 4; ++j) {
            lo[4 * h + j] = _mm512_and_si512(v[j], low4);
            hi[4 * h + j] = _mm512_and_si512(_mm512_srli_epi16(v[j], 4), low4);
          }
        }
      }
      // The 12 scale bytes of the 16 rows (q4k_scale_min, in the lanes).
      __m512i sb[4];
      transpose16x4(row, at + 4, sb);
      const __m512i m6 = _mm512_set1_epi32(63), m4 = _mm512_set1_epi32(15);
      for (int j = 0; j < 8; ++j) {
        __m512i sc, m;
        if (j < 4) {
          sc = _mm512_and_si512(byte_of(sb[0], j), m6);
          m = _mm512_and_si512(byte_of(sb[1], j), m6);
        } else {
          const __m512i hi = byte_of(sb[2], j - 4);
          sc = _mm512_or_si512(_mm512_and_si512(hi, m4),
                               _mm512_slli_epi32(_mm512_srli_epi32(byte_of(sb[0], j - 4), 6), 4));
          m = _mm512_or_si512(_mm512_srli_epi32(hi, 4),
                              _mm512_slli_epi32(_mm512_srli_epi32(byte_of(sb[1], j - 4), 6), 4));
        }
        _mm512_store_ps(tl.scale + (c0 + j) * 16, _mm512_mul_ps(d, _mm512_cvtepi32_ps(sc)));
        _mm512_store_ps(tl.min + (c0 + j) * 16, _mm512_mul_ps(dmin, _mm512_cvtepi32_ps(m)));
      }
    }
  } else if constexpr (T == TensorType::Q6_K) {
    const __m512i m3 = _mm512_set1_epi8(3);
    for (int64_t s = b0 / 8; s < (b0 + nc) / 8; ++s) {
      for (int j = 0; j < 8; ++j) pf.step();
      const int64_t at = s * 210;
      const __m512 d = halves16(row, at + 208);
      for (int h = 0; h < 2; ++h) {
        const int64_t ql = at + 64 * h, qh = at + 128 + 32 * h;
        const int64_t c0 = s * 8 + 4 * h - b0;  // blocks c0 .. c0 + 3
        for (int part = 0; part < 2; ++part) {  // elements 16 part .. 16 part + 15 of each block
          __m512i l0[4], l1[4], hb[4];
          transpose16x4(row, ql + 16 * part, l0);
          transpose16x4(row, ql + 32 + 16 * part, l1);
          transpose16x4(row, qh + 16 * part, hb);
          for (int j = 0; j < 4; ++j) {
            const int g = 4 * part + j;
            tl.q[(c0 + 0) * 8 + g] =
                _mm512_or_si512(_mm512_and_si512(l0[j], low4), _mm512_slli_epi16(_mm512_and_si512(hb[j], m3), 4));
            tl.q[(c0 + 1) * 8 + g] = _mm512_or_si512(
                _mm512_and_si512(l1[j], low4), _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(hb[j], 2), m3), 4));
            tl.q[(c0 + 2) * 8 + g] =
                _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l0[j], 4), low4),
                                _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(hb[j], 4), m3), 4));
            tl.q[(c0 + 3) * 8 + g] =
                _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l1[j], 4), low4),
                                _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(hb[j], 6), m3), 4));
          }
        }
        __m512i sb[4];  // the 16 rows' 16 signed scales: 4 per vector
        transpose16x4(row, at + 192, sb);
        for (int bb = 0; bb < 4; ++bb) {
          const int i = 8 * h + 2 * bb;  // the scales of block 4 h + bb's halves: i, i + 1
          tl.sc_lo[c0 + bb] = _mm512_srai_epi32(_mm512_slli_epi32(sb[i / 4], 24 - 8 * (i % 4)), 24);
          tl.sc_hi[c0 + bb] = _mm512_srai_epi32(_mm512_slli_epi32(sb[i / 4], 24 - 8 * (i % 4 + 1)), 24);
          _mm512_store_ps(tl.scale + (c0 + bb) * 16, d);
        }
      }
    }
  }
}

// The activations' offsets of tokens [t0, t1): the integer each block sum starts from (minus the
// quants' offset times the activation sums) and, for Q4_K, the negated sums for its minimums.
template <TensorType T>
void offsets(const Tile& tl, const Q8Rows& xq, int64_t nb, int64_t t0, int64_t t1) {
  for (int64_t t = t0; t < t1; ++t) {
    const int16_t* s = xq.s + t * 2 * nb;
    int32_t* off = tl.off + (t - t0) * 2 * nb;
    float* neg = tl.negsum + (t - t0) * nb;
    for (int64_t b = 0; b < nb; ++b) {
      const int32_t lo = s[2 * b], hi = s[2 * b + 1];
      if constexpr (T == TensorType::Q4_0) off[2 * b] = -8 * (lo + hi);
      if constexpr (T == TensorType::Q8_0) off[2 * b] = -128 * (lo + hi);
      if constexpr (T == TensorType::Q4_K) {
        off[2 * b] = 0;
        neg[b] = float(-(lo + hi));
      }
      if constexpr (T == TensorType::Q6_K) {
        off[2 * b] = -32 * lo;
        off[2 * b + 1] = -32 * hi;
      }
    }
  }
}

// C tokens (t0 ..) over the chunk's blocks [b0, b0 + nc): acc[c] (16 rows) updated in place.
template <TensorType T, int C>
inline void chunk_tokens(const Tile& tl, const Q8Rows& xq, int64_t nb, int64_t b0, int64_t nc, int64_t t0, int64_t tb,
                         __m512* acc) {
  const int8_t* xs[C];
  const float* dx[C];
  const int32_t* off[C];
  const float* neg[C];
  for (int c = 0; c < C; ++c) {
    xs[c] = xq.q + (t0 + c) * xq.k + b0 * 32;
    dx[c] = xq.d + (t0 + c) * nb + b0;
    off[c] = tl.off + (t0 + c - tb) * 2 * nb + 2 * b0;
    neg[c] = tl.negsum + (t0 + c - tb) * nb + b0;
  }
  for (int64_t b = 0; b < nc; ++b) {
    const __m512i* q = tl.q + b * 8;
    __m512i lo[C], hi[C];
    for (int c = 0; c < C; ++c) {
      lo[c] = _mm512_set1_epi32(off[c][2 * b]);
      hi[c] = T == TensorType::Q6_K ? _mm512_set1_epi32(off[c][2 * b + 1]) : _mm512_setzero_si512();
    }
    for (int g = 0; g < 8; ++g) {  // quants 0..15 into lo, 16..31 into hi (Q6_K's two scales)
      const __m512i w = _mm512_load_si512(q + g);
      for (int c = 0; c < C; ++c) {
        int32_t x4;
        std::memcpy(&x4, xs[c] + b * 32 + 4 * g, 4);
        __m512i& a = g < 4 ? lo[c] : hi[c];
        a = _mm512_dpbusd_epi32(a, w, _mm512_set1_epi32(x4));
      }
    }
    const __m512 scale = _mm512_load_ps(tl.scale + b * 16);
    for (int c = 0; c < C; ++c) {
      __m512i isum;
      if constexpr (T == TensorType::Q6_K)
        isum = _mm512_add_epi32(_mm512_mullo_epi32(lo[c], tl.sc_lo[b]), _mm512_mullo_epi32(hi[c], tl.sc_hi[b]));
      else
        isum = _mm512_add_epi32(lo[c], hi[c]);
      const __m512 d = _mm512_set1_ps(dx[c][b]);
      acc[c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(scale, d), acc[c]);
      if constexpr (T == TensorType::Q4_K)
        acc[c] = _mm512_fmadd_ps(_mm512_set1_ps(neg[c][b]), _mm512_mul_ps(_mm512_load_ps(tl.min + b * 16), d), acc[c]);
    }
  }
}

// Tokens [t0, t0 + C) of the token block tb over one chunk: first (the accumulators start at 0),
// last (the results go to y, the tile's `rows` rows from r).
template <TensorType T, int C>
void run_tokens(const Tile& tl, const LinearIo& io, int64_t nb, int64_t b0, int64_t nc, int64_t t0, int64_t tb,
                bool first, bool last, int64_t r, __mmask16 rows) {
  __m512 acc[C];
  for (int c = 0; c < C; ++c) acc[c] = first ? _mm512_setzero_ps() : _mm512_load_ps(tl.acc + (t0 + c - tb) * 16);
  chunk_tokens<T, C>(tl, io.xq, nb, b0, nc, t0, tb, acc);
  for (int c = 0; c < C; ++c) {
    if (!last) {
      _mm512_store_ps(tl.acc + (t0 + c - tb) * 16, acc[c]);
      continue;
    }
    float* y = io.y + (t0 + c) * io.y_stride + r;
    __m512 v = acc[c];
    if (io.accumulate) v = _mm512_add_ps(_mm512_maskz_loadu_ps(rows, y), v);
    _mm512_mask_storeu_ps(y, rows, v);
  }
}

template <TensorType T>
void linear_quant(const Weight& w, const LinearIo& io, int64_t r0, int64_t r1, void* scratch) {
  const int64_t nb = w.cols / 32;
  const Tile tl = tile_in(scratch, nb);
  for (int64_t tb = 0; tb < io.n; tb += kTokenBlock) {
    const int64_t te = imin(io.n, tb + kTokenBlock);
    offsets<T>(tl, io.xq, nb, tb, te);
    for (int64_t r = r0; r < r1; r += kRows) {
      const int rows = int(imin(kRows, r1 - r));
      const std::byte* row[kRows];
      for (int i = 0; i < kRows; ++i) row[i] = w.data + (r + (i < rows ? i : rows - 1)) * w.row_bytes;
      const __mmask16 mask = __mmask16((1u << rows) - 1);
      Prefetch pf(w, r + kRows, imin(r + 2 * kRows, r1), nb);
      for (int64_t b0 = 0; b0 < nb; b0 += kChunk) {
        const int64_t nc = imin(kChunk, nb - b0);
        unpack<T>(tl, row, b0, nc, pf);
        const bool first = b0 == 0, last = b0 + nc == nb;
        int64_t t = tb;
        for (; t + kTokens <= te; t += kTokens) run_tokens<T, kTokens>(tl, io, nb, b0, nc, t, tb, first, last, r, mask);
        for (; t < te; ++t) run_tokens<T, 1>(tl, io, nb, b0, nc, t, tb, first, last, r, mask);
      }
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

Kernels make_table() {
  // Activation quantization, attention and SwiGLU are the avx2 level's (the same definitions).
  Kernels k = *avx2_kernels();
  k.isa = Isa::Avx512;
  k.lanes = 16;
  k.tile_rows = kRows;
  k.linear = linear;
  k.linear_scratch = linear_scratch;
  k.packed_bytes = nullptr;  // reads the rows as stored (the avx2 level's packed layout is not its own)
  k.pack = nullptr;
  return k;
}

}  // namespace

const Kernels* avx512_kernels() {
  static const Kernels table = make_table();
  return &table;
}

}  // namespace wgc::llm::cpu

#else

namespace wgc::llm::cpu {
const Kernels* avx512_kernels() { return nullptr; }
}  // namespace wgc::llm::cpu

#endif
