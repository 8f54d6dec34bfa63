#include "ops/llm/weights.h"

#include "util/error.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <string>

namespace wgc::llm {

std::string_view to_string(WeightType t) {
  switch (t) {
    case WeightType::F32: return "f32";
    case WeightType::F16: return "f16";
    case WeightType::BF16: return "bf16";
    case WeightType::Q8_0: return "q8_0";
    case WeightType::Q4_0: return "q4_0";
    case WeightType::Q4_K: return "q4_k";
    case WeightType::Q6_K: return "q6_k";
  }
  return "?";
}

WeightType parse_weight_type(std::string_view name) {
  std::string s(name);
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (auto t : kAllWeightTypes)
    if (to_string(t) == s) return t;
  throw Error("wgc: unknown weight type '" + std::string(name) + "' (f32, f16, bf16, q8_0, q4_0, q4_k, q6_k)");
}

int64_t block_elems(WeightType t) {
  switch (t) {
    case WeightType::Q8_0:
    case WeightType::Q4_0: return 32;
    case WeightType::Q4_K:
    case WeightType::Q6_K: return 256;
    default: return 1;
  }
}

int64_t block_bytes(WeightType t) {
  switch (t) {
    case WeightType::F32: return 4;
    case WeightType::F16:
    case WeightType::BF16: return 2;
    case WeightType::Q8_0: return 34;
    case WeightType::Q4_0: return 18;
    case WeightType::Q4_K: return 144;
    case WeightType::Q6_K: return 210;
  }
  return 0;
}

uint64_t ggml_bytes(WeightType t, int64_t rows, int64_t cols) {
  if (rows <= 0 || cols <= 0)
    throw Error("wgc: weight of " + std::to_string(rows) + " x " + std::to_string(cols) + " elements");
  if (cols % block_elems(t))
    throw Error("wgc: a " + std::string(to_string(t)) + " weight needs rows of a multiple of " +
                std::to_string(block_elems(t)) + " elements, not " + std::to_string(cols));
  return uint64_t(rows) * uint64_t(cols / block_elems(t)) * uint64_t(block_bytes(t));
}

uint64_t GpuWeight::gpu_bytes() const {
  uint64_t b = data.bytes();
  if (scales && scales.buffer() != data.buffer()) b += scales.bytes();
  return b;
}

namespace {

uint64_t rup(uint64_t n, uint64_t a) { return (n + a - 1) / a * a; }

void put_bytes(std::vector<uint32_t>& words, uint64_t byte_at, const std::byte* src, size_t n) {
  std::memcpy(reinterpret_cast<std::byte*>(words.data()) + byte_at, src, n);
}

}  // namespace

PackedWeight pack_weight(WeightType type, std::span<const std::byte> bytes, int64_t rows, int64_t cols) {
  uint64_t want = ggml_bytes(type, rows, cols);
  if (bytes.size() != want)
    throw Error("wgc: a " + std::string(to_string(type)) + " weight of " + std::to_string(rows) + " x " +
                std::to_string(cols) + " takes " + std::to_string(want) + " bytes, got " +
                std::to_string(bytes.size()));
  PackedWeight p;
  const uint64_t R = uint64_t(rows), C = uint64_t(cols);
  const std::byte* src = bytes.data();
  switch (type) {
    case WeightType::F32: {
      uint64_t rs = rup(C, 4);
      p.data.assign(R * rs, 0);
      for (uint64_t r = 0; r < R; ++r) put_bytes(p.data, r * rs * 4, src + r * C * 4, C * 4);
      break;
    }
    case WeightType::F16:
    case WeightType::BF16: {
      uint64_t rs = rup(C, 8);  // halves
      p.data.assign(R * rs / 2, 0);
      for (uint64_t r = 0; r < R; ++r) put_bytes(p.data, r * rs * 2, src + r * C * 2, C * 2);
      break;
    }
    case WeightType::Q8_0:
    case WeightType::Q4_0: {
      const uint64_t nb = R * (C / 32), qbytes = type == WeightType::Q8_0 ? 32 : 16, bb = qbytes + 2;
      p.data.assign(nb * qbytes / 4, 0);
      p.scales.assign((nb + 1) / 2, 0);
      auto* sc = reinterpret_cast<uint16_t*>(p.scales.data());
      for (uint64_t b = 0; b < nb; ++b) {
        std::memcpy(&sc[b], src + b * bb, 2);
        put_bytes(p.data, b * qbytes, src + b * bb + 2, qbytes);
      }
      break;
    }
    case WeightType::Q4_K: {
      p.data.assign(want / 4, 0);
      put_bytes(p.data, 0, src, want);
      break;
    }
    case WeightType::Q6_K: {
      const uint64_t nb = R * (C / 256);
      p.data.assign(nb * 52, 0);
      p.scales.assign(nb, 0);
      for (uint64_t b = 0; b < nb; ++b) {
        const std::byte* blk = src + b * 210;
        put_bytes(p.data, b * 208, blk, 208);
        uint16_t h;
        std::memcpy(&h, blk + 208, 2);
        // f16 -> f32 bits, exactly
        uint32_t sign = uint32_t(h >> 15) << 31, e = (h >> 10) & 31, m = h & 1023, bits;
        if (e == 0) {
          if (m == 0) {
            bits = sign;
          } else {
            int ee = -1;
            do {
              ++ee;
              m <<= 1;
            } while (!(m & 1024));
            bits = sign | uint32_t(127 - 15 - ee) << 23 | (m & 1023) << 13;
          }
        } else if (e == 31) {
          bits = sign | 0x7f800000u | m << 13;
        } else {
          bits = sign | (e + 112) << 23 | m << 13;
        }
        p.scales[b] = bits;
      }
      break;
    }
  }
  return p;
}

GpuWeight upload_weight(const Context& ctx, WeightType type, std::span<const std::byte> bytes, int64_t rows,
                        int64_t cols) {
  PackedWeight p = pack_weight(type, bytes, rows, cols);
  GpuWeight w;
  w.type = type;
  w.rows = rows;
  w.cols = cols;
  w.data = make_tensor(ctx, {int64_t(p.data.size())}, DType::U32, std::as_bytes(std::span(p.data)));
  w.scales = p.scales.empty()
                 ? w.data
                 : make_tensor(ctx, {int64_t(p.scales.size())}, DType::U32, std::as_bytes(std::span(p.scales)));
  return w;
}

}  // namespace wgc::llm
