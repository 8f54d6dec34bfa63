// Counter-based random numbers for synthetic weights: value i of stream `key` is a pure function
// of (key, i), so any chunk of any tensor can be generated on any thread in any order and the file
// is the same byte for byte. Normal-like values come from the sum of four 16-bit uniforms (an
// Irwin-Hall(4) variable, scaled to unit variance): bounded (|z| <= 2*sqrt(3)), so never inf/NaN.
#pragma once

#include <cmath>
#include <cstdint>
#include <span>

namespace wgc::llm::synth {

// SplitMix64's finaliser: a bijective 64-bit mix (passes BigCrush as a counter-based generator).
inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// The stream key of a seed and a stream number (e.g. the tensor's index in the file).
inline uint64_t stream_key(uint64_t seed, uint64_t stream) {
  return mix64(mix64(seed) ^ (stream * 0x9E3779B97F4A7C15ull));
}

// Uniform 64 random bits for counter i of stream `key`.
inline uint64_t random_bits(uint64_t key, uint64_t i) { return mix64(key + i * 0x9E3779B97F4A7C15ull); }

// An approximately N(mean, sigma^2) value for counter i (bounded within mean +- 3.47 sigma).
inline float random_normal(uint64_t key, uint64_t i, float mean, float sigma) {
  uint64_t r = random_bits(key, i);
  uint32_t s = uint32_t(r & 0xFFFF) + uint32_t((r >> 16) & 0xFFFF) + uint32_t((r >> 32) & 0xFFFF) + uint32_t(r >> 48);
  // s / 65536 has mean 2 (minus a half step) and variance 4/12; centre and scale to unit variance.
  constexpr float kScale = 1.7320508f / 65536.f;  // sqrt(3) / 2^16
  float z = (float(s) - 131070.f) * kScale;
  return mean + sigma * z;
}

// out[j] = random_normal(key, first + j, mean, sigma).
inline void fill_normal(std::span<float> out, uint64_t key, uint64_t first, float mean, float sigma) {
  for (size_t j = 0; j < out.size(); ++j) out[j] = random_normal(key, first + j, mean, sigma);
}

}  // namespace wgc::llm::synth
