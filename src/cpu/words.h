// Operands of the CPU references of ops that take integer and boolean tensors as well as float
// ones: a buffer of float32, int32 (the device's integers: ONNX int64 narrowed, bool as 0 / 1) or
// int64 (the host's constants) elements. Elements are read and written through memcpy, so one
// buffer may hold either type over a plan's life (activation slots are reused by values of any
// type) without type-punned pointers.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace wgc::cpu {

enum class WordType : uint8_t { F32, I32, I64 };

inline size_t word_size(WordType t) { return t == WordType::I64 ? 8 : 4; }

// float -> integer as ONNX Cast does (toward zero), saturating, NaN to 0.
inline int64_t float_to_int(double v) {
  if (std::isnan(v)) return 0;
  if (v >= 9.2233720368547758e18) return std::numeric_limits<int64_t>::max();
  if (v <= -9.2233720368547758e18) return std::numeric_limits<int64_t>::min();
  return int64_t(v);
}

// int64 -> the device's int32: wraps as a two's complement narrowing does (the kernels' i32
// arithmetic wraps the same way).
inline int32_t narrow_int(int64_t v) { return int32_t(uint32_t(uint64_t(v))); }

struct ConstWords {
  const void* p = nullptr;
  WordType type = WordType::F32;
  uint64_t n = 0;

  bool is_float() const { return type == WordType::F32; }
  float f(uint64_t k) const {
    if (type == WordType::F32) return load<float>(k);
    return float(i(k));
  }
  int64_t i(uint64_t k) const {
    switch (type) {
      case WordType::F32: return float_to_int(double(load<float>(k)));
      case WordType::I32: return load<int32_t>(k);
      case WordType::I64: return load<int64_t>(k);
    }
    return 0;
  }
  // The element as a double (floats as they are, integers converted): comparisons across types.
  double d(uint64_t k) const { return type == WordType::F32 ? double(load<float>(k)) : double(i(k)); }

 private:
  template <class T>
  T load(uint64_t k) const {
    T v;
    std::memcpy(&v, static_cast<const char*>(p) + k * sizeof(T), sizeof(T));
    return v;
  }
};

struct Words {
  void* p = nullptr;
  WordType type = WordType::F32;
  uint64_t n = 0;

  bool is_float() const { return type == WordType::F32; }
  ConstWords in() const { return {p, type, n}; }
  void set_f(uint64_t k, float v) const {
    if (type == WordType::F32)
      store(k, v);
    else
      set_i(k, float_to_int(double(v)));
  }
  void set_i(uint64_t k, int64_t v) const {
    switch (type) {
      case WordType::F32: store(k, float(v)); break;
      case WordType::I32: store(k, narrow_int(v)); break;
      case WordType::I64: store(k, v); break;
    }
  }
  // Element j of this buffer from element k of src, keeping the value (floats stay floats,
  // integers integers; the planner never copies between a float and an integer buffer).
  void copy(uint64_t j, const ConstWords& src, uint64_t k) const {
    if (type == WordType::F32)
      set_f(j, src.f(k));
    else
      set_i(j, src.i(k));
  }

 private:
  template <class T>
  void store(uint64_t k, T v) const {
    std::memcpy(static_cast<char*>(p) + k * sizeof(T), &v, sizeof(T));
  }
};

}  // namespace wgc::cpu
