#include "llm/synth/quantize.h"

#include "cpu/llm/dequant.h"
#include "util/error.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <string>

namespace wgc::llm::synth {

namespace {

void check(const char* what, std::span<const float> x, std::span<std::byte> out, size_t block, size_t bytes) {
  if (x.size() % block || out.size() != x.size() / block * bytes)
    throw Error(std::string(what) + ": " + std::to_string(x.size()) + " values need a multiple of " +
                std::to_string(block) + " and " + std::to_string(x.size() / block * bytes) + " output bytes, got " +
                std::to_string(out.size()));
}

inline void put_f16(std::byte* p, float v) {
  uint16_t h = f32_to_f16(v);
  std::memcpy(p, &h, 2);
}

// roundf (halves away from zero) for |v| < 2^31, without a libm call: the conversion truncates
// and v - trunc(v) is exact.
inline int round_away(float v) {
  int i = static_cast<int>(v);
  float frac = v - static_cast<float>(i);
  return i + (frac >= 0.5f) - (frac <= -0.5f);
}

}  // namespace

void quantize_row_q8_0(std::span<const float> x, std::span<std::byte> out) {
  check("quantize_row_q8_0", x, out, 32, 34);
  for (size_t b = 0; b < x.size() / 32; ++b) {
    const float* v = x.data() + b * 32;
    std::byte* o = out.data() + b * 34;
    float amax = 0.0f;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(v[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    put_f16(o, d);
    for (int j = 0; j < 32; ++j) o[2 + j] = std::byte(static_cast<uint8_t>(static_cast<int8_t>(round_away(v[j] * id))));
  }
}

void quantize_row_q4_0(std::span<const float> x, std::span<std::byte> out) {
  check("quantize_row_q4_0", x, out, 32, 18);
  for (size_t b = 0; b < x.size() / 32; ++b) {
    const float* v = x.data() + b * 32;
    std::byte* o = out.data() + b * 18;
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < 32; ++j)
      if (amax < std::fabs(v[j])) {
        amax = std::fabs(v[j]);
        max = v[j];
      }
    const float d = max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    put_f16(o, d);
    for (int j = 0; j < 16; ++j) {
      const float x0 = v[j] * id, x1 = v[16 + j] * id;
      const uint8_t q0 = static_cast<uint8_t>(std::min<int>(15, static_cast<int8_t>(x0 + 8.5f)));
      const uint8_t q1 = static_cast<uint8_t>(std::min<int>(15, static_cast<int8_t>(x1 + 8.5f)));
      o[2 + j] = std::byte(static_cast<uint8_t>(q0 | (q1 << 4)));
    }
  }
}

namespace {
inline int nearest(float v) { return static_cast<int>(std::lrintf(v)); }
}  // namespace

void quantize_row_q4_k(std::span<const float> x, std::span<std::byte> out) {
  check("quantize_row_q4_k", x, out, 256, 144);
  for (size_t b = 0; b < x.size() / 256; ++b) {
    const float* v = x.data() + b * 256;
    std::byte* o = out.data() + b * 144;
    // Per 32: scale = (max - min) / 15 and the min below zero (stored negated), as 6-bit
    // fractions of the super-block's largest.
    float scales[8], mins[8], max_scale = 0, max_min = 0;
    for (int j = 0; j < 8; ++j) {
      float lo = 0, hi = 0;
      for (int l = 0; l < 32; ++l) {
        lo = std::min(lo, v[32 * j + l]);
        hi = std::max(hi, v[32 * j + l]);
      }
      scales[j] = (hi - lo) / 15.0f;
      mins[j] = -lo;
      max_scale = std::max(max_scale, scales[j]);
      max_min = std::max(max_min, mins[j]);
    }
    const float inv_scale = max_scale > 0 ? 63.0f / max_scale : 0.0f, inv_min = max_min > 0 ? 63.0f / max_min : 0.0f;
    uint8_t sc[12] = {};
    uint8_t ls[8], lm[8];
    for (int j = 0; j < 8; ++j) {
      ls[j] = uint8_t(std::min(63, nearest(inv_scale * scales[j])));
      lm[j] = uint8_t(std::min(63, nearest(inv_min * mins[j])));
      if (j < 4) {
        sc[j] = ls[j];
        sc[j + 4] = lm[j];
      } else {
        sc[j + 4] = uint8_t((ls[j] & 0xF) | ((lm[j] & 0xF) << 4));
        sc[j - 4] = uint8_t(sc[j - 4] | ((ls[j] >> 4) << 6));
        sc[j] = uint8_t(sc[j] | ((lm[j] >> 4) << 6));
      }
    }
    put_f16(o, max_scale / 63.0f);
    put_f16(o + 2, max_min / 63.0f);
    std::memcpy(o + 4, sc, 12);
    const float d = f16_to_f32(f32_to_f16(max_scale / 63.0f)), dmin = f16_to_f32(f32_to_f16(max_min / 63.0f));
    uint8_t L[256];
    for (int j = 0; j < 8; ++j) {
      const float dj = d * float(ls[j]), mj = dmin * float(lm[j]);
      for (int l = 0; l < 32; ++l)
        L[32 * j + l] = dj > 0 ? uint8_t(std::clamp(nearest((v[32 * j + l] + mj) / dj), 0, 15)) : 0;
    }
    for (int g = 0; g < 4; ++g)  // group g: bytes 32g.., low nibbles elements 64g + l, high 64g + 32 + l
      for (int l = 0; l < 32; ++l) o[16 + 32 * g + l] = std::byte(uint8_t(L[64 * g + l] | (L[64 * g + 32 + l] << 4)));
  }
}

void quantize_row_q6_k(std::span<const float> x, std::span<std::byte> out) {
  check("quantize_row_q6_k", x, out, 256, 210);
  for (size_t b = 0; b < x.size() / 256; ++b) {
    const float* v = x.data() + b * 256;
    std::byte* o = out.data() + b * 210;
    // Per 16: the value of largest magnitude maps to -32; the scales as int8 fractions of the
    // super-block's largest (as ggml's quantize_row_q6_K_ref).
    float scales[16], max_scale = 0, max_abs = 0;
    for (int j = 0; j < 16; ++j) {
      float amax = 0, m = 0;
      for (int l = 0; l < 16; ++l)
        if (std::fabs(v[16 * j + l]) > amax) {
          amax = std::fabs(v[16 * j + l]);
          m = v[16 * j + l];
        }
      scales[j] = m / -32.0f;
      if (std::fabs(scales[j]) > max_abs) {
        max_abs = std::fabs(scales[j]);
        max_scale = scales[j];
      }
    }
    std::memset(o, 0, 210);
    if (max_abs < 1e-15f) continue;
    const float iscale = -128.0f / max_scale;
    put_f16(o + 208, 1.0f / iscale);
    const float d = f16_to_f32(f32_to_f16(1.0f / iscale));
    uint8_t L[256];
    for (int j = 0; j < 16; ++j) {
      const int8_t s = int8_t(std::min(127, nearest(iscale * scales[j])));
      o[192 + j] = std::byte(uint8_t(s));
      const float dj = d * float(s);
      for (int l = 0; l < 16; ++l)
        L[16 * j + l] = uint8_t(dj != 0 ? std::clamp(nearest(v[16 * j + l] / dj), -32, 31) + 32 : 32);
    }
    for (int h = 0; h < 2; ++h)
      for (int l = 0; l < 32; ++l) {
        const uint8_t* q = L + 128 * h + l;
        o[64 * h + l] = std::byte(uint8_t((q[0] & 0xF) | ((q[64] & 0xF) << 4)));
        o[64 * h + 32 + l] = std::byte(uint8_t((q[32] & 0xF) | ((q[96] & 0xF) << 4)));
        o[128 + 32 * h + l] =
            std::byte(uint8_t((q[0] >> 4) | ((q[32] >> 4) << 2) | ((q[64] >> 4) << 4) | ((q[96] >> 4) << 6)));
      }
  }
}

void convert_row_f16(std::span<const float> x, std::span<std::byte> out) {
  check("convert_row_f16", x, out, 1, 2);
  constexpr size_t kTile = 256;
  uint16_t h[kTile];
  for (size_t i = 0; i < x.size(); i += kTile) {
    const size_t n = std::min(kTile, x.size() - i);
    for (size_t j = 0; j < n; ++j) h[j] = f32_to_f16(x[i + j]);
    std::memcpy(out.data() + 2 * i, h, 2 * n);
  }
}

void convert_row_bf16(std::span<const float> x, std::span<std::byte> out) {
  check("convert_row_bf16", x, out, 1, 2);
  for (size_t i = 0; i < x.size(); ++i) {
    const uint16_t h = f32_to_bf16(x[i]);
    std::memcpy(out.data() + 2 * i, &h, 2);
  }
}

bool can_quantize(TensorType t) {
  return t == TensorType::F32 || t == TensorType::F16 || t == TensorType::BF16 || t == TensorType::Q8_0 ||
         t == TensorType::Q4_0 || t == TensorType::Q4_K || t == TensorType::Q6_K;
}

void quantize(TensorType t, std::span<const float> x, std::span<std::byte> out) {
  switch (t) {
    case TensorType::F32:
      check("quantize F32", x, out, 1, 4);
      std::memcpy(out.data(), x.data(), out.size());
      return;
    case TensorType::F16: return convert_row_f16(x, out);
    case TensorType::BF16: return convert_row_bf16(x, out);
    case TensorType::Q8_0: return quantize_row_q8_0(x, out);
    case TensorType::Q4_0: return quantize_row_q4_0(x, out);
    case TensorType::Q4_K: return quantize_row_q4_k(x, out);
    case TensorType::Q6_K: return quantize_row_q6_k(x, out);
    default:
      throw Error("quantize: type " + std::string(to_string(t)) +
                  " is not one wgc writes (F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K)");
  }
}

}  // namespace wgc::llm::synth
