// The avx2 level's quantized tiles: where the 8 rows of a tile come from (the file's rows, or the
// copy packed at load) and the packing itself. Only for kernels_avx2.cpp (compiled with -mavx2
// -mfma -mf16c); internal linkage, as kernels_blocks.h.
#pragma once

#include "cpu/llm/kernels.h"
#include "cpu/llm/kernels_blocks.h"

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace wgc::llm::cpu {
namespace {

constexpr int64_t kRows = 8;  // rows per tile: one per 32-bit lane

// The 8 rows' 16 bytes at row[r] + at as 4 vectors: out[g] lane r = bytes 4g..4g+3 of row r.
inline void transpose8x4(const std::byte* const* row, int64_t at, __m256i out[4]) {
  // a[k] holds rows k and 4 + k in its 128-bit lanes; the two unpack stages then transpose
  // within each lane, leaving lane l, position p = row 4l + p.
  __m256i a[4];
  for (int k = 0; k < 4; ++k)
    a[k] =
        _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row[k] + at))),
                                _mm_loadu_si128(reinterpret_cast<const __m128i*>(row[4 + k] + at)), 1);
  const __m256i t0 = _mm256_unpacklo_epi32(a[0], a[1]), t1 = _mm256_unpackhi_epi32(a[0], a[1]);
  const __m256i t2 = _mm256_unpacklo_epi32(a[2], a[3]), t3 = _mm256_unpackhi_epi32(a[2], a[3]);
  out[0] = _mm256_unpacklo_epi64(t0, t2);
  out[1] = _mm256_unpackhi_epi64(t0, t2);
  out[2] = _mm256_unpacklo_epi64(t1, t3);
  out[3] = _mm256_unpackhi_epi64(t1, t3);
}

// The 8 rows' halves at row[r] + at as floats.
inline __m256 halves8(const std::byte* const* row, int64_t at) {
  const __m128i h =
      _mm_setr_epi16(int16_t(u16_at(row[0] + at)), int16_t(u16_at(row[1] + at)), int16_t(u16_at(row[2] + at)),
                     int16_t(u16_at(row[3] + at)), int16_t(u16_at(row[4] + at)), int16_t(u16_at(row[5] + at)),
                     int16_t(u16_at(row[6] + at)), int16_t(u16_at(row[7] + at)));
  return _mm256_cvtph_ps(h);
}

// ---- where a tile's 8 rows come from ----------------------------------------------------------
//
// The kernels read a (super-)block's bytes as 32-bit groups of the 8 rows side by side (group(at):
// lane r = bytes at..at+3 of row r's block) and its f16 scales as 8-lane vectors. Rows<T> makes
// them from the file's rows (a transpose per 16 bytes); Packed<T> reads them from the copy
// pack() wrote at load (llama.cpp's repacking: Q4_0x8 and friends), where a block of the 8 rows
// is its halves (8 x f16 each, kHalves of them) followed by the groups of bytes kFirst..B-1 of
// the block in order, 32 bytes each (Q6_K: its scales' groups first, then its quants recombined,
// q6k_packed_part): the same bytes as the 8 rows' blocks, so no bigger.

template <TensorType T>
constexpr int64_t kBlockBytes = T == TensorType::Q4_0   ? 18
                                : T == TensorType::Q8_0 ? 34
                                : T == TensorType::Q4_K ? 144
                                                        : 210;
template <TensorType T>
constexpr int64_t kBlockValues = T == TensorType::Q4_0 || T == TensorType::Q8_0 ? 32 : 256;
// The first byte of the groups (the halves before it: d of Q4_0/Q8_0, d and dmin of Q4_K; Q6_K's d
// is its last 2 bytes), and the packed position of the half at byte `at` of a block.
template <TensorType T>
constexpr int64_t kFirst = T == TensorType::Q4_0 || T == TensorType::Q8_0 ? 2
                           : T == TensorType::Q4_K                        ? 4
                                                                          : 0;
template <TensorType T>
constexpr int64_t kHalves = T == TensorType::Q4_K ? 2 : 1;
template <TensorType T>
constexpr int64_t half_slot(int64_t at) {
  return T == TensorType::Q4_K ? at / 2 : 0;
}
static_assert((kBlockBytes<TensorType::Q4_K> - kFirst<TensorType::Q4_K>) % 4 == 0 &&
              (kBlockBytes<TensorType::Q6_K> - 2 - kFirst<TensorType::Q6_K>) % 4 == 0);

template <TensorType T>
constexpr int64_t group_end() {  // one past the last grouped byte of a block
  return T == TensorType::Q6_K ? kBlockBytes<T> - 2 : kBlockBytes<T>;
}

// One group of Q6_K's 6-bit quants of block bb (0..3) of a half super-block, from the groups of
// its low bits (l0: ql bytes 0..31, l1: 32..63) and high bits (hb: qh, 2 bits per block) at the
// same position: the 2 high bits shifted straight to bits 4..5 of each byte (16-bit shifts: what
// crosses into the next byte is masked off).
template <int bb>
inline __m256i q6k_group(__m256i l0, __m256i l1, __m256i hb) {
  const __m256i low4 = _mm256_set1_epi8(0x0f), m30 = _mm256_set1_epi8(0x30);
  const __m256i l = bb % 2 ? l1 : l0;
  __m256i lq, h;
  if constexpr (bb < 2)
    lq = _mm256_and_si256(l, low4);
  else
    lq = _mm256_and_si256(_mm256_srli_epi16(l, 4), low4);
  if constexpr (bb == 0) h = _mm256_slli_epi16(hb, 4);
  if constexpr (bb == 1) h = _mm256_slli_epi16(hb, 2);
  if constexpr (bb == 2) h = hb;
  if constexpr (bb == 3) h = _mm256_srli_epi16(hb, 2);
  return _mm256_or_si256(lq, _mm256_and_si256(h, m30));
}

// The 6-bit quants of elements 16 part .. 16 part + 15 of the 4 blocks of half h of a Q6_K
// super-block: get<bb>(j) is group j (0..3) of block bb, lane r = 4 quants of row r, unsigned.
// From the file's rows: the groups of the low bits (ql bytes 64 h + 16 part .., and 32 further)
// and of the high bits (qh), combined by q6k_group (17 operations per 4 groups).
struct Q6kRowsPart {
  __m256i l0[4], l1[4], hb[4];
  template <int bb>
  __m256i get(int j) const {
    return q6k_group<bb>(l0[j], l1[j], hb[j]);
  }
};

// From the packed copy, where pack() stored per half, part and group j three vectors A, B, C:
// blocks 0, 1, 2's quants (6 bits) with block 3's quant split in their top 2 bits (bits 0-1 in A,
// 2-3 in B, 4-5 in C): the same bytes, 11 operations per 4 groups.
struct Q6kPackedPart {
  const std::byte* p;  // A, B, C of group 0, then of group 1, ...
  __m256i at(int i) const { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32 * i)); }
  template <int bb>
  __m256i get(int j) const {
    const __m256i m63 = _mm256_set1_epi8(63);
    if constexpr (bb < 3) {
      return _mm256_and_si256(at(3 * j + bb), m63);
    } else {  // 16-bit shifts: what crosses from the next byte is masked off
      const __m256i a = _mm256_and_si256(_mm256_srli_epi16(at(3 * j), 6), _mm256_set1_epi8(0x03));
      const __m256i b = _mm256_and_si256(_mm256_srli_epi16(at(3 * j + 1), 4), _mm256_set1_epi8(0x0c));
      const __m256i c = _mm256_and_si256(_mm256_srli_epi16(at(3 * j + 2), 2), _mm256_set1_epi8(0x30));
      return _mm256_or_si256(_mm256_or_si256(a, b), c);
    }
  }
};

// Packed Q6_K super-blocks of the 8 rows are laid out in the order decode reads them, so that a
// group of rows is one stream read front to back (the file's order, scales after the quants, had
// decode jump ahead to the scales and back at every super-block): d (8 halves), the 16 scale bytes
// as 4 groups (128 bytes), then the quants (Q6kPackedPart) per half and part.
constexpr int64_t kQ6kPackedScales = 16, kQ6kPackedQuants = 16 + 128;
// Where the packed Q6_K's A, B, C of half h and part `part` start in a super-block of the 8 rows.
constexpr int64_t q6k_packed_part(int h, int part) { return kQ6kPackedQuants + (2 * h + part) * 12 * 32; }

template <TensorType T>
struct Rows {
  const std::byte* row[kRows];
  // Rows r .. r + rows - 1 of w (the last one repeated to fill the tile).
  Rows(const Weight& w, int64_t r, int rows) {
    for (int i = 0; i < kRows; ++i) row[i] = w.data + (r + (i < rows ? i : rows - 1)) * w.row_bytes;
  }
  // 4 groups: bytes at .. at + 15 of block blk.
  void groups(int64_t blk, int64_t at, __m256i out[4]) const { transpose8x4(row, blk * kBlockBytes<T> + at, out); }
  __m256 halves(int64_t blk, int64_t at) const { return halves8(row, blk * kBlockBytes<T> + at); }
  Q6kRowsPart q6k_part(int64_t blk, int h, int part) const {
    Q6kRowsPart v;
    groups(blk, 64 * h + 16 * part, v.l0);
    groups(blk, 64 * h + 32 + 16 * part, v.l1);
    groups(blk, 128 + 32 * h + 16 * part, v.hb);
    return v;
  }
};

template <TensorType T>
struct Packed {
  const std::byte* p;  // the tile's row group in the packed copy
  void groups(int64_t blk, int64_t at, __m256i out[4]) const {
    const int64_t first = T == TensorType::Q6_K ? kQ6kPackedScales + (at - 192) * 8  // its scales only
                                                : 16 * kHalves<T> + (at - kFirst<T>)*8;
    const std::byte* g = p + blk * 8 * kBlockBytes<T> + first;
    for (int k = 0; k < 4; ++k) out[k] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(g + 32 * k));
  }
  __m256 halves(int64_t blk, int64_t at) const {
    return _mm256_cvtph_ps(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + blk * 8 * kBlockBytes<T> + 16 * half_slot<T>(at))));
  }
  Q6kPackedPart q6k_part(int64_t blk, int h, int part) const {
    return {p + blk * 8 * kBlockBytes<T> + q6k_packed_part(h, part)};
  }
};

template <TensorType T>
int64_t packed_group_bytes(const Weight& w) {
  return w.cols / kBlockValues<T> * 8 * kBlockBytes<T>;
}

template <TensorType T>
void pack_groups(const Weight& w, std::byte* out, int64_t g0, int64_t g1) {
  const int64_t nblk = w.cols / kBlockValues<T>, B = kBlockBytes<T>;
  for (int64_t g = g0; g < g1; ++g) {
    std::byte* o = out + g * packed_group_bytes<T>(w);
    const Rows<T> src(w, g * kRows, int(kRows));
    for (int64_t blk = 0; blk < nblk; ++blk, o += 8 * B) {
      alignas(16) uint16_t hv[8];
      for (int i = 0; i < kHalves<T>; ++i) {
        const int64_t at = blk * B + (T == TensorType::Q6_K ? 208 : 2 * i);
        for (int r = 0; r < 8; ++r) hv[r] = u16_at(src.row[r] + at);
        std::memcpy(o + 16 * i, hv, 16);
      }
      std::byte* q = o + 16 * kHalves<T>;
      int64_t k = kFirst<T>;
      if constexpr (T == TensorType::Q6_K) {  // the scales, then the quants as Q6kPackedPart reads them
        __m256i sv[4];
        src.groups(blk, 192, sv);
        for (int j = 0; j < 4; ++j, q += 32) _mm256_storeu_si256(reinterpret_cast<__m256i*>(q), sv[j]);
        const __m256i m3 = _mm256_set1_epi8(0x03), mc = _mm256_set1_epi8(0x0c), m30 = _mm256_set1_epi8(0x30);
        for (int h = 0; h < 2; ++h)
          for (int part = 0; part < 2; ++part) {
            const Q6kRowsPart v = src.q6k_part(blk, h, part);
            for (int j = 0; j < 4; ++j, q += 96) {
              const __m256i v3 = v.get<3>(j);
              const __m256i abc[3] = {_mm256_or_si256(v.get<0>(j), _mm256_slli_epi16(_mm256_and_si256(v3, m3), 6)),
                                      _mm256_or_si256(v.get<1>(j), _mm256_slli_epi16(_mm256_and_si256(v3, mc), 4)),
                                      _mm256_or_si256(v.get<2>(j), _mm256_slli_epi16(_mm256_and_si256(v3, m30), 2))};
              for (int i = 0; i < 3; ++i) _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + 32 * i), abc[i]);
            }
          }
        k = group_end<T>();
      }
      for (; k + 16 <= group_end<T>(); k += 16, q += 128) {  // 16 bytes of the 8 rows: 4 groups
        __m256i v[4];
        src.groups(blk, k, v);
        for (int j = 0; j < 4; ++j) _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + 32 * j), v[j]);
      }
      for (; k < group_end<T>(); k += 4, q += 32)  // Q4_K's last 12 bytes
        for (int r = 0; r < 8; ++r) std::memcpy(q + 4 * r, src.row[r] + blk * B + k, 4);
    }
  }
}

}  // namespace
}  // namespace wgc::llm::cpu
