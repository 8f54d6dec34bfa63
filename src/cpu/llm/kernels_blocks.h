// Block decoding shared by the kernel levels: scalar helpers with internal linkage (each level's
// translation unit gets its own copy, compiled for its own target; see kernels.h).
#pragma once

#include "cpu/llm/kernels.h"

#include <cstdint>
#include <cstring>

namespace wgc::llm::cpu {
namespace {

inline uint8_t byte_at(const std::byte* p, int64_t i) { return uint8_t(p[i]); }

inline uint16_t u16_at(const std::byte* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return h;
}

inline float bits_to_f32(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// IEEE half to float, exactly (as F16C's conversion).
inline float half_to_f32(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  if (exp == 0) {
    const float v = float(mant) * 0x1p-24f;
    return sign ? -v : v;
  }
  if (exp == 31) return bits_to_f32(sign | 0x7f800000u | (mant << 13));
  return bits_to_f32(sign | ((exp + 112) << 23) | (mant << 13));
}

inline float half_at(const std::byte* p) { return half_to_f32(u16_at(p)); }
inline float bf16_at(const std::byte* p) { return bits_to_f32(uint32_t(u16_at(p)) << 16); }

// The 6-bit scale and min of sub-block j (0..7) of a Q4_K super-block (its 12 scale bytes).
inline void q4k_scale_min(int j, const std::byte* q, int& sc, int& m) {
  if (j < 4) {
    sc = byte_at(q, j) & 63;
    m = byte_at(q, j + 4) & 63;
  } else {
    sc = (byte_at(q, j + 4) & 0xf) | ((byte_at(q, j - 4) >> 6) << 4);
    m = (byte_at(q, j + 4) >> 4) | ((byte_at(q, j) >> 6) << 4);
  }
}

// A row of a quantized type in one form for the integer kernels, per block of 32 (b < cols/32):
// q: the quants less their offset (Q4_0: nibble - 8, Q6_K: q - 32; Q4_K: 0..15; Q8_0 as stored);
// scale[b]: the block's float scale (Q4_0/Q8_0: d; Q4_K: d * sc_j; Q6_K: the super-block's d);
// min[b]: Q4_K's dmin * m_j (others 0); sc16[2b], sc16[2b+1]: Q6_K's scales of the two halves
// (others 1).
struct UnpackedRow {
  int8_t* q;
  float* scale;
  float* min;
  int8_t* sc16;
};

// block_q6_K { u8 ql[128]; u8 qh[64]; i8 scales[16]; f16 d; }: its 256 6-bit quants (0..63, 32
// is zero) in ggml's element order, the 4 low bits from ql and the 2 high bits from qh.
inline void q6k_quants(const std::byte* blk, uint8_t* q) {
  const std::byte* ql = blk;
  const std::byte* qh = blk + 128;
  for (int h = 0; h < 2; ++h, q += 128, ql += 64, qh += 32)
    for (int l = 0; l < 32; ++l) {
      q[l] = uint8_t((byte_at(ql, l) & 0xf) | ((byte_at(qh, l) & 3) << 4));
      q[l + 32] = uint8_t((byte_at(ql, l + 32) & 0xf) | (((byte_at(qh, l) >> 2) & 3) << 4));
      q[l + 64] = uint8_t((byte_at(ql, l) >> 4) | (((byte_at(qh, l) >> 4) & 3) << 4));
      q[l + 96] = uint8_t((byte_at(ql, l + 32) >> 4) | (((byte_at(qh, l) >> 6) & 3) << 4));
    }
}

inline void unpack_row(TensorType t, const std::byte* row, int64_t cols, const UnpackedRow& u) {
  const int64_t nb = cols / 32;
  for (int64_t b = 0; b < nb; ++b) {
    u.min[b] = 0;
    u.sc16[2 * b] = u.sc16[2 * b + 1] = 1;
  }
  switch (t) {
    case TensorType::Q8_0:
      for (int64_t b = 0; b < nb; ++b) {
        const std::byte* blk = row + b * 34;
        u.scale[b] = half_at(blk);
        std::memcpy(u.q + b * 32, blk + 2, 32);
      }
      break;
    case TensorType::Q4_0:
      for (int64_t b = 0; b < nb; ++b) {
        const std::byte* blk = row + b * 18;
        u.scale[b] = half_at(blk);
        for (int j = 0; j < 16; ++j) {
          u.q[b * 32 + j] = int8_t((byte_at(blk, 2 + j) & 0xf) - 8);
          u.q[b * 32 + 16 + j] = int8_t((byte_at(blk, 2 + j) >> 4) - 8);
        }
      }
      break;
    case TensorType::Q4_K:
      for (int64_t s = 0; s < cols / 256; ++s) {
        const std::byte* blk = row + s * 144;
        const float d = half_at(blk), dmin = half_at(blk + 2);
        const std::byte* qs = blk + 16;
        for (int j = 0; j < 8; ++j) {
          int sc, m;
          q4k_scale_min(j, blk + 4, sc, m);
          const int64_t b = s * 8 + j;
          u.scale[b] = d * float(sc);
          u.min[b] = dmin * float(m);
          const std::byte* q = qs + 32 * (j / 2);
          for (int l = 0; l < 32; ++l) u.q[b * 32 + l] = int8_t(j % 2 ? byte_at(q, l) >> 4 : byte_at(q, l) & 0xf);
        }
      }
      break;
    case TensorType::Q6_K:
      for (int64_t s = 0; s < cols / 256; ++s) {
        const std::byte* blk = row + s * 210;
        const float d = half_at(blk + 208);
        uint8_t q6[256];
        q6k_quants(blk, q6);
        for (int e = 0; e < 256; ++e) u.q[s * 256 + e] = int8_t(q6[e] - 32);
        for (int i = 0; i < 16; ++i) u.sc16[s * 16 + i] = int8_t(byte_at(blk + 192, i));
        for (int j = 0; j < 8; ++j) u.scale[s * 8 + j] = d;
      }
      break;
    default: break;
  }
}

}  // namespace
}  // namespace wgc::llm::cpu
