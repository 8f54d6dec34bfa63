#include "cpu/llm/dequant.h"

#include "cpu/llm/kernels_blocks.h"  // q4k_scale_min: the one unpacking of K-quant scales and mins
#include "util/error.h"

#include <bit>
#include <cmath>
#include <cstring>

namespace wgc::llm {

float f16_to_f32(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1F;
  uint32_t mant = h & 0x3FF;
  if (exp == 0) {
    float v = float(mant) * 0x1p-24f;  // zero or subnormal
    return sign ? -v : v;
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7F800000u | (mant << 13));
  return std::bit_cast<float>(sign | ((exp + 112) << 23) | (mant << 13));
}

float bf16_to_f32(uint16_t h) { return std::bit_cast<float>(uint32_t(h) << 16); }

uint16_t f32_to_bf16(float f) {
  uint32_t u = std::bit_cast<uint32_t>(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return uint16_t((u >> 16) | 64);  // quiet NaN
  return uint16_t((u + (0x7FFFu + ((u >> 16) & 1))) >> 16);
}

namespace {

inline uint8_t u8(const std::byte* p) { return std::to_integer<uint8_t>(*p); }
inline float half_at(const std::byte* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return f16_to_f32(h);
}

}  // namespace

// block_q4_0 { f16 d; u8 qs[16]; }: y[j] = (lo nibble - 8) d, y[j+16] = (hi nibble - 8) d
void dequantize_block_q4_0(const std::byte* x, float* y) {
  float d = half_at(x);
  const std::byte* qs = x + 2;
  for (int j = 0; j < 16; ++j) {
    y[j] = float((u8(qs + j) & 0xF) - 8) * d;
    y[j + 16] = float((u8(qs + j) >> 4) - 8) * d;
  }
}

// block_q4_1 { f16 d; f16 m; u8 qs[16]; }: y = q d + m
void dequantize_block_q4_1(const std::byte* x, float* y) {
  float d = half_at(x), m = half_at(x + 2);
  const std::byte* qs = x + 4;
  for (int j = 0; j < 16; ++j) {
    y[j] = float(u8(qs + j) & 0xF) * d + m;
    y[j + 16] = float(u8(qs + j) >> 4) * d + m;
  }
}

// block_q5_0 { f16 d; u8 qh[4]; u8 qs[16]; }: 5th bit of element j in bit j of qh.
void dequantize_block_q5_0(const std::byte* x, float* y) {
  float d = half_at(x);
  uint32_t qh;
  std::memcpy(&qh, x + 2, 4);
  const std::byte* qs = x + 6;
  for (int j = 0; j < 16; ++j) {
    int h0 = int((qh >> j) & 1) << 4;
    int h1 = int((qh >> (j + 16)) & 1) << 4;
    y[j] = float(((u8(qs + j) & 0xF) | h0) - 16) * d;
    y[j + 16] = float(((u8(qs + j) >> 4) | h1) - 16) * d;
  }
}

// block_q5_1 { f16 d; f16 m; u8 qh[4]; u8 qs[16]; }
void dequantize_block_q5_1(const std::byte* x, float* y) {
  float d = half_at(x), m = half_at(x + 2);
  uint32_t qh;
  std::memcpy(&qh, x + 4, 4);
  const std::byte* qs = x + 8;
  for (int j = 0; j < 16; ++j) {
    int h0 = int((qh >> j) & 1) << 4;
    int h1 = int((qh >> (j + 16)) & 1) << 4;
    y[j] = float((u8(qs + j) & 0xF) | h0) * d + m;
    y[j + 16] = float((u8(qs + j) >> 4) | h1) * d + m;
  }
}

// block_q8_0 { f16 d; i8 qs[32]; }
void dequantize_block_q8_0(const std::byte* x, float* y) {
  float d = half_at(x);
  for (int j = 0; j < 32; ++j) y[j] = float(int8_t(u8(x + 2 + j))) * d;
}

// block_q4_K { f16 d; f16 dmin; u8 scales[12]; u8 qs[128]; }: 8 sub-blocks of 32 with 6-bit
// scales/mins; sub-blocks 2i and 2i+1 share qs[32i..32i+31] (low and high nibbles).
void dequantize_block_q4_k(const std::byte* x, float* y) {
  float d = half_at(x), dmin = half_at(x + 2);
  const std::byte* scales = x + 4;
  const std::byte* q = x + 16;
  for (int j = 0; j < 256; j += 64) {
    int is = j / 32;
    int sc, m;
    cpu::q4k_scale_min(is, scales, sc, m);
    float d1 = d * float(sc), m1 = dmin * float(m);
    cpu::q4k_scale_min(is + 1, scales, sc, m);
    float d2 = d * float(sc), m2 = dmin * float(m);
    for (int l = 0; l < 32; ++l) *y++ = d1 * float(u8(q + l) & 0xF) - m1;
    for (int l = 0; l < 32; ++l) *y++ = d2 * float(u8(q + l) >> 4) - m2;
    q += 32;
  }
}

// block_q5_K { f16 d; f16 dmin; u8 scales[12]; u8 qh[32]; u8 qs[128]; }: as Q4_K plus a 5th bit,
// element l of sub-block s taking bit s of qh[l].
void dequantize_block_q5_k(const std::byte* x, float* y) {
  float d = half_at(x), dmin = half_at(x + 2);
  const std::byte* scales = x + 4;
  const std::byte* qh = x + 16;
  const std::byte* ql = x + 48;
  uint8_t u1 = 1, u2 = 2;
  for (int j = 0; j < 256; j += 64) {
    int is = j / 32;
    int sc, m;
    cpu::q4k_scale_min(is, scales, sc, m);
    float d1 = d * float(sc), m1 = dmin * float(m);
    cpu::q4k_scale_min(is + 1, scales, sc, m);
    float d2 = d * float(sc), m2 = dmin * float(m);
    for (int l = 0; l < 32; ++l) *y++ = d1 * float((u8(ql + l) & 0xF) + (u8(qh + l) & u1 ? 16 : 0)) - m1;
    for (int l = 0; l < 32; ++l) *y++ = d2 * float((u8(ql + l) >> 4) + (u8(qh + l) & u2 ? 16 : 0)) - m2;
    ql += 32;
    u1 = uint8_t(u1 << 2);
    u2 = uint8_t(u2 << 2);
  }
}

// block_q6_K { u8 ql[128]; u8 qh[64]; i8 scales[16]; f16 d; }: 6-bit quants (4 low bits in ql,
// 2 high bits in qh) minus 32, 16 sub-blocks of 16 with 8-bit signed scales.
void dequantize_block_q6_k(const std::byte* x, float* y) {
  const std::byte* ql = x;
  const std::byte* qh = x + 128;
  const std::byte* sc = x + 192;
  float d = half_at(x + 208);
  for (int n = 0; n < 256; n += 128) {
    for (int l = 0; l < 32; ++l) {
      int is = l / 16;
      int q1 = int((u8(ql + l) & 0xF) | (((u8(qh + l) >> 0) & 3) << 4)) - 32;
      int q2 = int((u8(ql + l + 32) & 0xF) | (((u8(qh + l) >> 2) & 3) << 4)) - 32;
      int q3 = int((u8(ql + l) >> 4) | (((u8(qh + l) >> 4) & 3) << 4)) - 32;
      int q4 = int((u8(ql + l + 32) >> 4) | (((u8(qh + l) >> 6) & 3) << 4)) - 32;
      y[l] = d * float(int8_t(u8(sc + is))) * float(q1);
      y[l + 32] = d * float(int8_t(u8(sc + is + 2))) * float(q2);
      y[l + 64] = d * float(int8_t(u8(sc + is + 4))) * float(q3);
      y[l + 96] = d * float(int8_t(u8(sc + is + 6))) * float(q4);
    }
    y += 128;
    ql += 64;
    qh += 32;
    sc += 8;
  }
}

// block_q8_K { f32 d; i8 qs[256]; i16 bsums[16]; } (bsums only speed up dot products)
void dequantize_block_q8_k(const std::byte* x, float* y) {
  float d;
  std::memcpy(&d, x, 4);
  for (int j = 0; j < 256; ++j) y[j] = d * float(int8_t(u8(x + 4 + j)));
}

namespace {
// n little-endian values of type T (numbers, or the bits of a 16-bit float), converted to float.
template <class T, class Convert>
void values_to_f32(const std::byte* x, float* y, size_t n, Convert to_f32) {
  for (size_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, x + sizeof(T) * i, sizeof(T));
    y[i] = to_f32(v);
  }
}
template <class T>
void values_to_f32(const std::byte* x, float* y, size_t n) {
  values_to_f32<T>(x, y, n, [](T v) { return float(v); });
}
}  // namespace

void dequantize(TensorType t, std::span<const std::byte> src, std::span<float> out) {
  const TypeTraits& tr = traits(t);
  size_t n = out.size();
  if (n % tr.block_size)
    throw Error("dequantize " + std::string(tr.name) + ": " + std::to_string(n) + " elements is not a multiple of " +
                std::to_string(tr.block_size));
  size_t blocks = n / tr.block_size;
  if (src.size() != blocks * tr.block_bytes)
    throw Error("dequantize " + std::string(tr.name) + ": " + std::to_string(n) + " elements need " +
                std::to_string(blocks * tr.block_bytes) + " bytes, got " + std::to_string(src.size()));
  const std::byte* x = src.data();
  float* y = out.data();
  auto each = [&](auto fn) {
    for (size_t b = 0; b < blocks; ++b) fn(x + b * tr.block_bytes, y + b * tr.block_size);
  };
  switch (t) {
    case TensorType::F32:
      if (n) std::memcpy(y, x, n * 4);
      return;
    case TensorType::F16: values_to_f32<uint16_t>(x, y, n, f16_to_f32); return;
    case TensorType::BF16: values_to_f32<uint16_t>(x, y, n, bf16_to_f32); return;
    case TensorType::F64: values_to_f32<double>(x, y, n); return;
    case TensorType::I8: values_to_f32<int8_t>(x, y, n); return;
    case TensorType::I16: values_to_f32<int16_t>(x, y, n); return;
    case TensorType::I32: values_to_f32<int32_t>(x, y, n); return;
    case TensorType::I64: values_to_f32<int64_t>(x, y, n); return;
    case TensorType::Q4_0: each(dequantize_block_q4_0); return;
    case TensorType::Q4_1: each(dequantize_block_q4_1); return;
    case TensorType::Q5_0: each(dequantize_block_q5_0); return;
    case TensorType::Q5_1: each(dequantize_block_q5_1); return;
    case TensorType::Q8_0: each(dequantize_block_q8_0); return;
    case TensorType::Q4_K: each(dequantize_block_q4_k); return;
    case TensorType::Q5_K: each(dequantize_block_q5_k); return;
    case TensorType::Q6_K: each(dequantize_block_q6_k); return;
    case TensorType::Q8_K: each(dequantize_block_q8_k); return;
  }
  throw Error("dequantize: unsupported type " + std::string(tr.name));
}

std::vector<float> dequantize(TensorType t, std::span<const std::byte> src, size_t n) {
  std::vector<float> out(n);
  dequantize(t, src, out);
  return out;
}

}  // namespace wgc::llm
