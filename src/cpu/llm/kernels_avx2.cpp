// The avx2 kernel level: AVX2 + FMA + F16C (this file is compiled with -mavx2 -mfma -mf16c on
// x86; elsewhere it defines no table). See kernels.h for what every level computes: the quantized
// types give the same bits as the avx512 level (exact integer block sums, the same float steps).
//
// Quantized weights, 8 rows at a time, one row per 32-bit lane (llama.cpp's idea of 8 rows
// interleaved, its repacked Q4_0x8 of ggml-cpu/repack.cpp, here in groups of 4 quants made on the
// fly from the file's rows by a transpose of 32-bit groups), so a group of 4 quants of the 8 rows times 4 activation
// bytes broadcast to every lane is one maddubs (unsigned weights, signed activations) and the lanes end up holding the
// 8 rows' block sums with no reduction across lanes. Decode (one token) goes from memory to registers to the dot
// product; prefill unpacks chunks of blocks into scratch once and runs 4 tokens per pass over them (see "quantized
// weights" below). Float weights: tiles of rows x tokens, 8 lanes along k per output, summed at the end.
#include "cpu/llm/kernels.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)

#include "cpu/llm/kernels_avx2_simd.h"
#include "cpu/llm/kernels_avx2_tiles.h"
#include "cpu/llm/kernels_blocks.h"

#include <immintrin.h>

namespace wgc::llm::cpu {
namespace {

using namespace avx2;

// ---- float weights: R rows x C tokens per tile, 8 lanes along k ------------------------------------

// Output rows r .. r + R - 1 for tokens t .. t + C - 1, from the K weights of each of those rows
// at w0, row_bytes apart.
template <TensorType T, int R, int C>
void float_tile(const std::byte* w0, int64_t row_bytes, int64_t K, const LinearIo& io, int64_t r, int64_t t) {
  constexpr int64_t E = elem_bytes<T>();
  const std::byte* wr[R];
  const float* xt[C];
  for (int i = 0; i < R; ++i) wr[i] = w0 + i * row_bytes;
  for (int j = 0; j < C; ++j) xt[j] = io.x + (t + j) * io.x_stride;
  __m256 acc[R][C];
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < C; ++j) acc[i][j] = _mm256_setzero_ps();
  int64_t k = 0;
  if constexpr (T == TensorType::BF16 && C == 1) {
    // Decode: 16 BF16 weights per load, widened in order by one 64-bit permute and two unpacks
    // with zeros below (3 operations, where 2 x (zero-extend, shift) are 4); the same products in
    // the same order as 8 at a time.
    const __m256i zero = _mm256_setzero_si256();
    for (; k + 16 <= K; k += 16) {
      __m256 lo[R], hi[R];
      for (int i = 0; i < R; ++i) {
        const __m256i v =
            _mm256_permute4x64_epi64(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(wr[i] + k * E)), 0xd8);
        lo[i] = _mm256_castsi256_ps(_mm256_unpacklo_epi16(zero, v));
        hi[i] = _mm256_castsi256_ps(_mm256_unpackhi_epi16(zero, v));
      }
      const __m256 xl = _mm256_loadu_ps(xt[0] + k), xh = _mm256_loadu_ps(xt[0] + k + 8);
      for (int i = 0; i < R; ++i) acc[i][0] = _mm256_fmadd_ps(lo[i], xl, acc[i][0]);
      for (int i = 0; i < R; ++i) acc[i][0] = _mm256_fmadd_ps(hi[i], xh, acc[i][0]);
    }
  }
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
constexpr int64_t kFloatTokenBlock = 64;
// Rows x tokens per tile: 12 accumulators and 3 weight vectors (the activations come from memory)
// fill the 16 registers; 4 x 3 spills (a third slower here), 2 x 6 loads too much per multiply.
constexpr int kFR = 3, kFC = 4;

template <TensorType T>
void linear_float(const Weight& w, const LinearIo& io, int64_t r0, int64_t r1) {
  const int64_t K = w.cols;
  auto rows_at = [&](int64_t r) { return w.data + r * w.row_bytes; };
  if (io.n == 1) {
    int64_t r = r0;
    for (; r + 8 <= r1; r += 8) float_tile<T, 8, 1>(rows_at(r), w.row_bytes, K, io, r, 0);
    for (; r < r1; ++r) float_tile<T, 1, 1>(rows_at(r), w.row_bytes, K, io, r, 0);
    return;
  }
  // The weights are converted at every tile (once per 4 tokens): widening a panel of rows to f32
  // in scratch once per token block instead was 15% slower on Zen 4 (F16 64 x 2048 x 2048: 46 ->
  // 39 GMAC/s), whose 4 float pipes leave the conversions room beside the multiply-adds.
  for (int64_t tb = 0; tb < io.n; tb += kFloatTokenBlock) {
    const int64_t te = imin(io.n, tb + kFloatTokenBlock);
    int64_t r = r0;
    for (; r + kFR <= r1; r += kFR) {
      int64_t t = tb;
      for (; t + kFC <= te; t += kFC) float_tile<T, kFR, kFC>(rows_at(r), w.row_bytes, K, io, r, t);
      for (; t < te; ++t) float_tile<T, kFR, 1>(rows_at(r), w.row_bytes, K, io, r, t);
    }
    for (; r < r1; ++r) {
      int64_t t = tb;
      for (; t + kFC <= te; t += kFC) float_tile<T, 1, kFC>(rows_at(r), w.row_bytes, K, io, r, t);
      for (; t < te; ++t) float_tile<T, 1, 1>(rows_at(r), w.row_bytes, K, io, r, t);
    }
  }
}

// ---- quantized weights: 8 rows in the lanes ---------------------------------------------------
//
// A tile's blocks are unpacked into scratch, per block of 32 and group g (0..7) of 4 quants, as one
// vector whose lane r holds quants 4g..4g+3 of row r, unsigned (Q4_0/Q4_K nibbles, Q6_K's 6 bits;
// Q8_0's bytes + 128 split into a low-nibble and a high-nibble vector, so every product pair of
// maddubs stays far from int16 saturation), with the block's 8 scales beside them. A token then
// costs per block 8 maddubs against 4 activation bytes broadcast from memory, summed in int16 (8
// nibble products of at most 15 * 127 * 2 each fit), and one madd to int32: the lanes hold the 8
// rows' exact block sums with no reduction across lanes (the avx512 level's layout, which is
// llama.cpp's Q4_0x8 interleaving done on the fly). Tokens go 4 at a time, so each weight vector
// loaded from scratch feeds 4 tokens; blocks go in chunks that fit L1, with a per-token
// accumulator buffer between chunks, tokens in blocks of 64 per unpacking.

constexpr int64_t kChunk = 32;       // blocks unpacked at a time (8-16 KiB of quants)
constexpr int64_t kTokenBlock = 64;  // tokens per unpacking of a chunk
constexpr int kTokens = 4;           // tokens per pass over a chunk (registers)
constexpr int64_t kGroups = 16;      // vectors per block in scratch (Q8_0 uses 16, the others 8)

// Scratch of one tile: the chunk's quants and scales, and per token of the token block the
// accumulators between chunks and the activations' offsets.
struct Tile {
  __m256i* q;      // [kChunk][kGroups]
  float* scale;    // [kChunk][8]
  float* min;      // [kChunk][8] (Q4_K)
  __m256i* sc_lo;  // [kChunk] (Q6_K) int16 pairs: the scale of each row's first half-block, twice
  __m256i* sc_hi;  // [kChunk] the second half's
  __m256i* sc_lh;  // [kChunk] the pair (first, second), for the offsets
  float* acc;      // [kTokenBlock][8]
  int32_t* off;    // [kTokenBlock][nb]: the block sums' start (minus the quants' offset times the
                   // activation sums)
  float* negsum;   // [kTokenBlock][nb] (Q4_K): -(sum of the block's activation quants)
};

int64_t tile_bytes(int64_t nb) {
  return kChunk * (kGroups * 32 + 32 + 32 + 3 * 32) + kTokenBlock * 32 + kTokenBlock * nb * (4 + 4);
}

Tile tile_in(void* scratch, int64_t nb) {
  auto* p = static_cast<unsigned char*>(scratch);
  Tile t;
  t.q = reinterpret_cast<__m256i*>(p);
  p += kChunk * kGroups * 32;
  t.sc_lo = reinterpret_cast<__m256i*>(p);
  p += kChunk * 32;
  t.sc_hi = reinterpret_cast<__m256i*>(p);
  p += kChunk * 32;
  t.sc_lh = reinterpret_cast<__m256i*>(p);
  p += kChunk * 32;
  t.scale = reinterpret_cast<float*>(p);
  p += kChunk * 32;
  t.min = reinterpret_cast<float*>(p);
  p += kChunk * 32;
  t.acc = reinterpret_cast<float*>(p);
  p += kTokenBlock * 32;
  t.off = reinterpret_cast<int32_t*>(p);
  p += kTokenBlock * nb * 4;
  t.negsum = reinterpret_cast<float*>(p);
  return t;
}

// The bytes of the next tile of rows, fetched into L2 a few lines per block while this tile
// unpacks: its rows are one contiguous range, a single stream for the memory system, where the
// unpacking's 8 interleaved row streams are more than the hardware prefetchers follow well.
struct Prefetch {
  const char* p = nullptr;
  const char* end = nullptr;
  int64_t per_block = 0;  // bytes per step

  // The rows [r, r1) of a matrix at data, row_bytes apart (none when empty), over `steps` steps.
  Prefetch(const std::byte* data, int64_t row_bytes, int64_t r, int64_t r1, int64_t steps) {
    if (r >= r1) return;
    p = reinterpret_cast<const char*>(data + r * row_bytes);
    end = p + (r1 - r) * row_bytes;
    per_block = ((end - p) / steps + 63) / 64 * 64;
  }

  void step() {
    const char* stop = end - p > per_block ? p + per_block : end;
    for (; p < stop; p += 64) _mm_prefetch(p, _MM_HINT_T1);
  }
};

// Byte k (0..3) of each 32-bit lane as an int32 (one shuffle: the other 3 bytes zeroed).
inline __m256i lane_byte(__m256i v, int k) {
  const int32_t c = int32_t(0x80808000u) | k;  // byte 0 <- byte k of the lane, bytes 1..3 <- 0
  return _mm256_shuffle_epi8(v, _mm256_setr_epi32(c, c + 4, c + 8, c + 12, c, c + 4, c + 8, c + 12));
}

// Q4_K's 8 sub-block scales and minimums of super-block s of the 8 rows: d * sc_j, dmin * m_j
// (q4k_scale_min, in the lanes). The 6-bit values are decoded 4 to a vector as bytes (sc_0..3 and
// m_0..3 are the low 6 bits of bytes 0..7; sc_4..7 and m_4..7 the nibbles of bytes 8..11 with the
// top 2 bits of bytes 0..7 above them), then each byte taken to its lane by one shuffle.
template <class Src>
inline void q4k_scales(const Src& src, int64_t s, __m256 d, __m256 dmin, __m256 scale[8], __m256 mins[8]) {
  __m256i sb[4];
  src.groups(s, 4, sb);  // the 12 scale bytes: sb[0..2]
  const __m256i m6 = _mm256_set1_epi8(63), m4 = _mm256_set1_epi8(15), top = _mm256_set1_epi8(0x30);
  // (b >> 6) << 4 of each byte b: a 32-bit shift by 2, what crosses from the next byte masked off.
  const __m256i sc03 = _mm256_and_si256(sb[0], m6), m03 = _mm256_and_si256(sb[1], m6);
  const __m256i sc47 = _mm256_or_si256(_mm256_and_si256(sb[2], m4), _mm256_and_si256(_mm256_srli_epi32(sb[0], 2), top));
  const __m256i m47 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(sb[2], 4), m4),
                                      _mm256_and_si256(_mm256_srli_epi32(sb[1], 2), top));
  for (int j = 0; j < 4; ++j) {
    scale[j] = _mm256_mul_ps(d, _mm256_cvtepi32_ps(lane_byte(sc03, j)));
    mins[j] = _mm256_mul_ps(dmin, _mm256_cvtepi32_ps(lane_byte(m03, j)));
    scale[4 + j] = _mm256_mul_ps(d, _mm256_cvtepi32_ps(lane_byte(sc47, j)));
    mins[4 + j] = _mm256_mul_ps(dmin, _mm256_cvtepi32_ps(lane_byte(m47, j)));
  }
}

// f.template operator()<i>() for i = 0..3: the 4 blocks of a half super-block, each with its own
// shifts and masks as constants.
template <class F>
inline void for_blocks4(F&& f) {
  f.template operator()<0>();
  f.template operator()<1>();
  f.template operator()<2>();
  f.template operator()<3>();
}

// The scales of a Q6_K block's two halves (signed bytes i and i + 1 of the 16, from their groups
// sb) as madd operands: lo, hi: the half's scale in both int16 of each lane; lh: the pair.
struct Q6kScales {
  __m256i lo, hi, lh;
};
inline Q6kScales q6k_scales(const __m256i sb[4], int i) {
  // Each int16 from a signed byte put in its high half by a shuffle, then shifted down with its
  // sign: int32 c's bytes pick (nothing, byte a, nothing, byte b) of the lane.
  const __m256i v = sb[i / 4];
  const int k = i % 4;
  auto pair = [&](int a, int b) {
    const int32_t c = int32_t(0x00800080u) | (a << 8) | (b << 24);
    const __m256i ctl = _mm256_setr_epi32(c, c + 0x04000400, c + 0x08000800, c + 0x0c000c00, c, c + 0x04000400,
                                          c + 0x08000800, c + 0x0c000c00);
    return _mm256_srai_epi16(_mm256_shuffle_epi8(v, ctl), 8);
  };
  return {pair(k, k), pair(k + 1, k + 1), pair(k, k + 1)};
}

// Unpacks blocks [b0, b0 + nc) of the tile's rows into tl (block b0 + c at index c).
template <TensorType T, class Src>
void unpack(const Tile& tl, const Src& src, int64_t b0, int64_t nc, Prefetch& pf) {
  const __m256i low4 = _mm256_set1_epi8(0x0f);
  __m256i v[4];
  if constexpr (T == TensorType::Q4_0) {
    for (int64_t c = 0; c < nc; ++c) {
      pf.step();
      src.groups(b0 + c, 2, v);
      __m256i* q = tl.q + c * kGroups;
      for (int g = 0; g < 4; ++g) {
        q[g] = _mm256_and_si256(v[g], low4);
        q[4 + g] = _mm256_and_si256(_mm256_srli_epi16(v[g], 4), low4);
      }
      _mm256_store_ps(tl.scale + c * 8, src.halves(b0 + c, 0));
    }
  } else if constexpr (T == TensorType::Q8_0) {
    const __m256i bias = _mm256_set1_epi8(char(0x80));
    for (int64_t c = 0; c < nc; ++c) {
      pf.step();
      __m256i* q = tl.q + c * kGroups;
      for (int h = 0; h < 2; ++h) {
        src.groups(b0 + c, 2 + 16 * h, v);
        for (int g = 0; g < 4; ++g) {
          const __m256i u = _mm256_xor_si256(v[g], bias);
          q[4 * h + g] = _mm256_and_si256(u, low4);
          q[8 + 4 * h + g] = _mm256_and_si256(_mm256_srli_epi16(u, 4), low4);
        }
      }
      _mm256_store_ps(tl.scale + c * 8, src.halves(b0 + c, 0));
    }
  } else if constexpr (T == TensorType::Q4_K) {
    for (int64_t s = b0 / 8; s < (b0 + nc) / 8; ++s) {
      for (int j = 0; j < 8; ++j) pf.step();
      const __m256 d = src.halves(s, 0), dmin = src.halves(s, 2);
      const int64_t c0 = s * 8 - b0;
      for (int pair = 0; pair < 4; ++pair) {  // 32 bytes: block 2 pair (low nibbles), 2 pair + 1 (high)
        __m256i* lo = tl.q + (c0 + 2 * pair) * kGroups;
        __m256i* hi = lo + kGroups;
        for (int h = 0; h < 2; ++h) {
          src.groups(s, 16 + 32 * pair + 16 * h, v);
          for (int g = 0; g < 4; ++g) {
            lo[4 * h + g] = _mm256_and_si256(v[g], low4);
            hi[4 * h + g] = _mm256_and_si256(_mm256_srli_epi16(v[g], 4), low4);
          }
        }
      }
      __m256 scale[8], mins[8];
      q4k_scales(src, s, d, dmin, scale, mins);
      for (int j = 0; j < 8; ++j) {
        _mm256_store_ps(tl.scale + (c0 + j) * 8, scale[j]);
        _mm256_store_ps(tl.min + (c0 + j) * 8, mins[j]);
      }
    }
  } else if constexpr (T == TensorType::Q6_K) {
    for (int64_t s = b0 / 8; s < (b0 + nc) / 8; ++s) {
      for (int j = 0; j < 8; ++j) pf.step();
      const __m256 d = src.halves(s, 208);
      __m256i sb[4];  // the 8 rows' 16 signed scales: 4 per vector
      src.groups(s, 192, sb);
      for (int h = 0; h < 2; ++h) {
        const int64_t c0 = s * 8 + 4 * h - b0;  // blocks c0 .. c0 + 3
        for (int part = 0; part < 2; ++part) {  // elements 16 part .. 16 part + 15 of each block
          const auto qv = src.q6k_part(s, h, part);
          for_blocks4([&]<int bb>() {
            for (int j = 0; j < 4; ++j) tl.q[(c0 + bb) * kGroups + 4 * part + j] = qv.template get<bb>(j);
          });
        }
        for (int bb = 0; bb < 4; ++bb) {
          const Q6kScales sc = q6k_scales(sb, 8 * h + 2 * bb);
          tl.sc_lo[c0 + bb] = sc.lo;
          tl.sc_hi[c0 + bb] = sc.hi;
          tl.sc_lh[c0 + bb] = sc.lh;
          _mm256_store_ps(tl.scale + (c0 + bb) * 8, d);
        }
      }
    }
  }
}

// The activations' offsets of tokens [t0, t1): the integer each block sum starts from (minus the
// quants' offset times the activation sums) and, for Q4_K, the negated sums for its minimums.
// (Q6_K's offset depends on the row's scales: chunk_tokens computes it.)
template <TensorType T>
void offsets(const Tile& tl, const Q8Rows& xq, int64_t nb, int64_t t0, int64_t t1) {
  if constexpr (T == TensorType::Q6_K) return;
  for (int64_t t = t0; t < t1; ++t) {
    const int16_t* s = xq.s + t * 2 * nb;
    int32_t* off = tl.off + (t - t0) * nb;
    float* neg = tl.negsum + (t - t0) * nb;
    for (int64_t b = 0; b < nb; ++b) {
      const int32_t sum = int32_t(s[2 * b]) + s[2 * b + 1];
      if constexpr (T == TensorType::Q4_0) off[b] = -8 * sum;
      if constexpr (T == TensorType::Q8_0) off[b] = -128 * sum;
      if constexpr (T == TensorType::Q4_K) {
        off[b] = 0;
        neg[b] = float(-sum);
      }
    }
  }
}

inline __m256i bcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

// C tokens (t0 ..) over the chunk's blocks [b0, b0 + nc): acc[c] (8 rows) updated in place.
template <TensorType T, int C>
inline void chunk_tokens(const Tile& tl, const Q8Rows& xq, int64_t nb, int64_t b0, int64_t nc, int64_t t0, int64_t tb,
                         __m256* acc) {
  const int8_t* xs[C];
  const float* dx[C];
  const int32_t* off[C];
  const float* neg[C];
  const int16_t* sx[C];
  for (int c = 0; c < C; ++c) {
    xs[c] = xq.q + (t0 + c) * xq.k + b0 * 32;
    dx[c] = xq.d + (t0 + c) * nb + b0;
    off[c] = tl.off + (t0 + c - tb) * nb + b0;
    neg[c] = tl.negsum + (t0 + c - tb) * nb + b0;
    sx[c] = xq.s + (t0 + c) * 2 * nb + 2 * b0;
  }
  const __m256i ones = _mm256_set1_epi16(1);
  for (int64_t b = 0; b < nc; ++b) {
    const __m256i* q = tl.q + b * kGroups;
    const int8_t* xb[C];
    for (int c = 0; c < C; ++c) xb[c] = xs[c] + b * 32;
    __m256i isum[C];
    if constexpr (T == TensorType::Q4_0 || T == TensorType::Q4_K) {
      __m256i s16[C];
      for (int c = 0; c < C; ++c) s16[c] = _mm256_setzero_si256();
      for (int g = 0; g < 8; ++g) {
        const __m256i w = _mm256_load_si256(q + g);
        for (int c = 0; c < C; ++c) s16[c] = _mm256_add_epi16(s16[c], _mm256_maddubs_epi16(w, bcast4(xb[c] + 4 * g)));
      }
      for (int c = 0; c < C; ++c) {
        isum[c] = _mm256_madd_epi16(s16[c], ones);
        if constexpr (T == TensorType::Q4_0) isum[c] = _mm256_add_epi32(isum[c], _mm256_set1_epi32(off[c][b]));
      }
    } else if constexpr (T == TensorType::Q8_0) {
      __m256i lo[C], hi[C];
      for (int c = 0; c < C; ++c) lo[c] = hi[c] = _mm256_setzero_si256();
      for (int g = 0; g < 8; ++g) {
        const __m256i wl = _mm256_load_si256(q + g), wh = _mm256_load_si256(q + 8 + g);
        for (int c = 0; c < C; ++c) {
          const __m256i x4 = bcast4(xb[c] + 4 * g);
          lo[c] = _mm256_add_epi16(lo[c], _mm256_maddubs_epi16(wl, x4));
          hi[c] = _mm256_add_epi16(hi[c], _mm256_maddubs_epi16(wh, x4));
        }
      }
      const __m256i sixteen = _mm256_set1_epi16(16);
      for (int c = 0; c < C; ++c)
        isum[c] = _mm256_add_epi32(_mm256_add_epi32(_mm256_madd_epi16(lo[c], ones), _mm256_madd_epi16(hi[c], sixteen)),
                                   _mm256_set1_epi32(off[c][b]));
    } else if constexpr (T == TensorType::Q6_K) {
      // Pairs of groups in int16 (6-bit products: 2 * 63 * 127 each), then times the half's scale.
      for (int c = 0; c < C; ++c) isum[c] = _mm256_setzero_si256();
      for (int g = 0; g < 8; g += 2) {
        const __m256i w0 = _mm256_load_si256(q + g), w1 = _mm256_load_si256(q + g + 1);
        const __m256i sc = g < 4 ? tl.sc_lo[b] : tl.sc_hi[b];
        for (int c = 0; c < C; ++c) {
          const __m256i s16 = _mm256_add_epi16(_mm256_maddubs_epi16(w0, bcast4(xb[c] + 4 * g)),
                                               _mm256_maddubs_epi16(w1, bcast4(xb[c] + 4 * g + 4)));
          isum[c] = _mm256_add_epi32(isum[c], _mm256_madd_epi16(s16, sc));
        }
      }
      // Minus 32 times (scale_lo * sum_lo + scale_hi * sum_hi) of the activations.
      for (int c = 0; c < C; ++c) {
        int32_t s2;
        std::memcpy(&s2, sx[c] + 2 * b, 4);
        const __m256i o = _mm256_madd_epi16(tl.sc_lh[b], _mm256_set1_epi32(s2));
        isum[c] = _mm256_sub_epi32(isum[c], _mm256_slli_epi32(o, 5));
      }
    }
    const __m256 scale = _mm256_load_ps(tl.scale + b * 8);
    for (int c = 0; c < C; ++c) {
      const __m256 d = _mm256_set1_ps(dx[c][b]);
      acc[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[c]), _mm256_mul_ps(scale, d), acc[c]);
      if constexpr (T == TensorType::Q4_K)
        acc[c] = _mm256_fmadd_ps(_mm256_set1_ps(neg[c][b]), _mm256_mul_ps(_mm256_load_ps(tl.min + b * 8), d), acc[c]);
    }
  }
}

// Tokens [t0, t0 + C) of the token block tb over one chunk: first (the accumulators start at 0),
// last (the results go to y, the tile's `rows` rows from r).
template <TensorType T, int C>
void run_tokens(const Tile& tl, const LinearIo& io, int64_t nb, int64_t b0, int64_t nc, int64_t t0, int64_t tb,
                bool first, bool last, int64_t r, int rows) {
  __m256 acc[C];
  for (int c = 0; c < C; ++c) acc[c] = first ? _mm256_setzero_ps() : _mm256_load_ps(tl.acc + (t0 + c - tb) * 8);
  chunk_tokens<T, C>(tl, io.xq, nb, b0, nc, t0, tb, acc);
  for (int c = 0; c < C; ++c) {
    if (!last) {
      _mm256_store_ps(tl.acc + (t0 + c - tb) * 8, acc[c]);
      continue;
    }
    float* y = io.y + (t0 + c) * io.y_stride + r;
    if (rows == kRows) {
      __m256 v = acc[c];
      if (io.accumulate) v = _mm256_add_ps(_mm256_loadu_ps(y), v);
      _mm256_storeu_ps(y, v);
    } else {
      alignas(32) float v[8];
      _mm256_store_ps(v, acc[c]);
      for (int i = 0; i < rows; ++i) y[i] = io.accumulate ? y[i] + v[i] : v[i];
    }
  }
}

// One token (decode): each block's 8 rows go from memory to registers and straight into the dot
// product (nothing to share with other tokens, so no trip through scratch); the K-quants a
// super-block at a time, their scales decoded once per super-block. Q8_0 takes its signed quants
// with the sign trick here (|w| times x with w's sign), 5 operations per group where splitting the
// biased bytes into nibbles costs 8. off / neg: the token's offsets (offsets()).
struct DecodeIn {
  const int8_t* xq;
  const float* dx;
  const int16_t* sx;
  const int32_t* off;
  const float* neg;
};

inline __m256 fma_block(__m256i isum, __m256 scale, float dx, __m256 acc) {
  return _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_mul_ps(scale, _mm256_set1_ps(dx)), acc);
}

template <class Src>
inline __m256 decode_q4_0(const Src& src, const DecodeIn& in, int64_t b, __m256 acc) {
  const __m256i ones = _mm256_set1_epi16(1), low4 = _mm256_set1_epi8(0x0f);
  const int8_t* xb = in.xq + b * 32;
  __m256i v[4];
  src.groups(b, 2, v);
  __m256i s16 = _mm256_setzero_si256();
  for (int g = 0; g < 4; ++g) {
    s16 = _mm256_add_epi16(s16, _mm256_maddubs_epi16(_mm256_and_si256(v[g], low4), bcast4(xb + 4 * g)));
    s16 = _mm256_add_epi16(
        s16, _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(v[g], 4), low4), bcast4(xb + 16 + 4 * g)));
  }
  const __m256i isum = _mm256_add_epi32(_mm256_madd_epi16(s16, ones), _mm256_set1_epi32(in.off[b]));
  return fma_block(isum, src.halves(b, 0), in.dx[b], acc);
}

template <class Src>
inline __m256 decode_q8_0(const Src& src, const DecodeIn& in, int64_t b, __m256 acc) {
  const __m256i ones = _mm256_set1_epi16(1);
  const int8_t* xb = in.xq + b * 32;
  __m256i v[4];
  __m256i isum = _mm256_setzero_si256();
  for (int h = 0; h < 2; ++h) {
    src.groups(b, 2 + 16 * h, v);
    for (int g = 0; g < 4; ++g) {
      const __m256i p =
          _mm256_maddubs_epi16(_mm256_sign_epi8(v[g], v[g]), _mm256_sign_epi8(bcast4(xb + 16 * h + 4 * g), v[g]));
      isum = _mm256_add_epi32(isum, _mm256_madd_epi16(p, ones));
    }
  }
  return fma_block(isum, src.halves(b, 0), in.dx[b], acc);
}

// Super-block s (blocks 8 s .. 8 s + 7).
template <class Src>
inline __m256 decode_q4_k(const Src& src, const DecodeIn& in, int64_t s, __m256 acc) {
  const __m256i ones = _mm256_set1_epi16(1), low4 = _mm256_set1_epi8(0x0f);
  __m256 scale[8], mins[8];
  q4k_scales(src, s, src.halves(s, 0), src.halves(s, 2), scale, mins);
  __m256i v[4];
  for (int pair = 0; pair < 4; ++pair) {  // 32 bytes: block 2 pair (low nibbles), 2 pair + 1 (high)
    const int64_t b = s * 8 + 2 * pair;
    const int8_t* xa = in.xq + b * 32;
    const int8_t* xc = xa + 32;
    __m256i sa = _mm256_setzero_si256(), sc = _mm256_setzero_si256();
    for (int h = 0; h < 2; ++h) {
      src.groups(s, 16 + 32 * pair + 16 * h, v);
      for (int g = 0; g < 4; ++g) {
        sa = _mm256_add_epi16(sa, _mm256_maddubs_epi16(_mm256_and_si256(v[g], low4), bcast4(xa + 16 * h + 4 * g)));
        sc = _mm256_add_epi16(
            sc, _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(v[g], 4), low4), bcast4(xc + 16 * h + 4 * g)));
      }
    }
    for (int k = 0; k < 2; ++k) {
      const int64_t bk = b + k;
      const __m256 dxv = _mm256_set1_ps(in.dx[bk]);
      acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_madd_epi16(k ? sc : sa, ones)),
                            _mm256_mul_ps(scale[2 * pair + k], dxv), acc);
      acc = _mm256_fmadd_ps(_mm256_set1_ps(in.neg[bk]), _mm256_mul_ps(mins[2 * pair + k], dxv), acc);
    }
  }
  return acc;
}

template <class Src>
inline __m256 decode_q6_k(const Src& src, const DecodeIn& in, int64_t s, __m256 acc) {
  const __m256 d = src.halves(s, 208);
  __m256i sb[4];  // the 8 rows' 16 signed scales: 4 per vector
  src.groups(s, 192, sb);
  for (int h = 0; h < 2; ++h) {
    const int64_t b0 = s * 8 + 4 * h;  // blocks b0 .. b0 + 3
    Q6kScales sc[4];
    __m256i isum[4];
    for (int bb = 0; bb < 4; ++bb) {
      sc[bb] = q6k_scales(sb, 8 * h + 2 * bb);
      isum[bb] = _mm256_setzero_si256();
    }
    for (int part = 0; part < 2; ++part) {  // elements 16 part .. 16 part + 15 of each block
      const auto qv = src.q6k_part(s, h, part);
      // Pairs of groups (j, j + 1) in int16 (2 * 63 * 127 each), all 4 blocks per pair.
      for (int j = 0; j < 4; j += 2)
        for_blocks4([&]<int bb>() {
          const int8_t* xb = in.xq + (b0 + bb) * 32 + 16 * part + 4 * j;
          const __m256i s16 = _mm256_add_epi16(_mm256_maddubs_epi16(qv.template get<bb>(j), bcast4(xb)),
                                               _mm256_maddubs_epi16(qv.template get<bb>(j + 1), bcast4(xb + 4)));
          isum[bb] = _mm256_add_epi32(isum[bb], _mm256_madd_epi16(s16, part ? sc[bb].hi : sc[bb].lo));
        });
    }
    for (int bb = 0; bb < 4; ++bb) {
      int32_t s2;
      std::memcpy(&s2, in.sx + 2 * (b0 + bb), 4);
      const __m256i o = _mm256_madd_epi16(sc[bb].lh, _mm256_set1_epi32(s2));
      acc = fma_block(_mm256_sub_epi32(isum[bb], _mm256_slli_epi32(o, 5)), d, in.dx[b0 + bb], acc);
    }
  }
  return acc;
}

// The tile's 8 rows (rows of them real) at r for one token.
template <TensorType T, class Src>
void decode_tile(const Src& src, const DecodeIn& in, const LinearIo& io, int64_t r, int rows, int64_t nb,
                 Prefetch& pf) {
  __m256 acc = _mm256_setzero_ps();
  if constexpr (T == TensorType::Q4_0 || T == TensorType::Q8_0) {
    for (int64_t b = 0; b < nb; ++b) {
      pf.step();
      acc = T == TensorType::Q4_0 ? decode_q4_0(src, in, b, acc) : decode_q8_0(src, in, b, acc);
    }
  } else {
    for (int64_t s = 0; s < nb / 8; ++s) {
      for (int j = 0; j < 8; ++j) pf.step();
      acc = T == TensorType::Q4_K ? decode_q4_k(src, in, s, acc) : decode_q6_k(src, in, s, acc);
    }
  }
  float* y = io.y + r;
  if (rows == kRows) {
    if (io.accumulate) acc = _mm256_add_ps(_mm256_loadu_ps(y), acc);
    _mm256_storeu_ps(y, acc);
  } else {
    alignas(32) float o[8];
    _mm256_store_ps(o, acc);
    for (int i = 0; i < rows; ++i) y[i] = io.accumulate ? y[i] + o[i] : o[i];
  }
}

// The tile's chunks of blocks for the token block [tb, te) (offsets already in tl).
template <TensorType T, class Src>
void prefill_tile(const Tile& tl, const Src& src, const LinearIo& io, int64_t r, int rows, int64_t nb, int64_t tb,
                  int64_t te, Prefetch& pf) {
  for (int64_t b0 = 0; b0 < nb; b0 += kChunk) {
    const int64_t nc = imin(kChunk, nb - b0);
    unpack<T>(tl, src, b0, nc, pf);
    const bool first = b0 == 0, last = b0 + nc == nb;
    int64_t t = tb;
    for (; t + kTokens <= te; t += kTokens) run_tokens<T, kTokens>(tl, io, nb, b0, nc, t, tb, first, last, r, rows);
    for (; t < te; ++t) run_tokens<T, 1>(tl, io, nb, b0, nc, t, tb, first, last, r, rows);
  }
}

// The rows [r, r1) of w as the next tiles read them, for the prefetcher: the file's rows, or none
// where they are packed groups. A packed group is one sequential stream, which the hardware
// prefetchers follow by themselves: prefetching it in software as well made decode 25-40% slower
// on AMD Zen 4 (cpu_llm_kernels_bench 1 16384 2048: Q4_0 51 -> 69 GMAC/s, Q4_K 38 -> 54 without).
template <TensorType T>
Prefetch next_rows(const Weight& w, int64_t r, int64_t r1, int64_t steps, bool packed) {
  if (packed && r % kRows == 0 && r1 % kRows == 0) return Prefetch(w.data, w.row_bytes, r, r, steps);
  return Prefetch(w.data, w.row_bytes, r, r1, steps);
}

template <TensorType T>
void linear_quant(const Weight& w, const LinearIo& io, int64_t r0, int64_t r1, void* scratch) {
  const int64_t nb = w.cols / 32;
  const Tile tl = tile_in(scratch, nb);
  const bool packed = w.packed && w.packed_isa == Isa::Avx2;
  // Whether the tile at r is a whole packed row group.
  auto in_packed = [&](int64_t r) { return packed && r % kRows == 0 && r + kRows <= w.rows; };
  for (int64_t tb = 0; tb < io.n; tb += kTokenBlock) {
    const int64_t te = imin(io.n, tb + kTokenBlock);
    offsets<T>(tl, io.xq, nb, tb, te);
    const DecodeIn in{io.xq.q, io.xq.d, io.xq.s, tl.off, tl.negsum};
    for (int64_t r = r0; r < r1; r += kRows) {
      const int rows = int(imin(kRows, r1 - r));
      Prefetch pf = next_rows<T>(w, r + kRows, imin(r + 2 * kRows, r1), nb, in_packed(r + kRows));
      if (in_packed(r)) {
        const Packed<T> src{w.packed + r / kRows * packed_group_bytes<T>(w)};
        if (io.n == 1)
          decode_tile<T>(src, in, io, r, rows, nb, pf);
        else
          prefill_tile<T>(tl, src, io, r, rows, nb, tb, te, pf);
      } else {
        const Rows<T> src(w, r, rows);
        if (io.n == 1)
          decode_tile<T>(src, in, io, r, rows, nb, pf);
        else
          prefill_tile<T>(tl, src, io, r, rows, nb, tb, te, pf);
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

// Load-time repacking: every quantized type, whole groups of 8 rows (the rest read in place).
int64_t packed_bytes(const Weight& w) {
  const int64_t groups = w.rows / kRows;
  switch (w.type) {
    case TensorType::Q8_0: return groups * packed_group_bytes<TensorType::Q8_0>(w);
    case TensorType::Q4_0: return groups * packed_group_bytes<TensorType::Q4_0>(w);
    case TensorType::Q4_K: return groups * packed_group_bytes<TensorType::Q4_K>(w);
    case TensorType::Q6_K: return groups * packed_group_bytes<TensorType::Q6_K>(w);
    default: return 0;
  }
}

void pack(const Weight& w, std::byte* out, int64_t g0, int64_t g1) {
  switch (w.type) {
    case TensorType::Q8_0: return pack_groups<TensorType::Q8_0>(w, out, g0, g1);
    case TensorType::Q4_0: return pack_groups<TensorType::Q4_0>(w, out, g0, g1);
    case TensorType::Q4_K: return pack_groups<TensorType::Q4_K>(w, out, g0, g1);
    case TensorType::Q6_K: return pack_groups<TensorType::Q6_K>(w, out, g0, g1);
    default: break;
  }
}

const Kernels table{Isa::Avx2,    8,   8, linear, linear_scratch, avx2::quantize, avx2::attend, avx2::swiglu,
                    packed_bytes, pack};

}  // namespace

const Kernels* avx2_kernels() { return &table; }

}  // namespace wgc::llm::cpu

#else

namespace wgc::llm::cpu {
const Kernels* avx2_kernels() { return nullptr; }
}  // namespace wgc::llm::cpu

#endif
