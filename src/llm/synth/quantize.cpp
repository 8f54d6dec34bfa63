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

bool can_quantize(TensorType t) {
  return t == TensorType::F32 || t == TensorType::F16 || t == TensorType::Q8_0 || t == TensorType::Q4_0;
}

void quantize(TensorType t, std::span<const float> x, std::span<std::byte> out) {
  switch (t) {
    case TensorType::F32:
      check("quantize F32", x, out, 1, 4);
      std::memcpy(out.data(), x.data(), out.size());
      return;
    case TensorType::F16: return convert_row_f16(x, out);
    case TensorType::Q8_0: return quantize_row_q8_0(x, out);
    case TensorType::Q4_0: return quantize_row_q4_0(x, out);
    default:
      throw Error("quantize: type " + std::string(to_string(t)) + " is not one wgc writes (F32, F16, Q8_0, Q4_0)");
  }
}

}  // namespace wgc::llm::synth
