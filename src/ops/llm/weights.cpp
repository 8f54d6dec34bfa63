#include "ops/llm/weights.h"

#include "cpu/llm/dequant.h"
#include "cpu/llm/kernels_blocks.h"
#include "util/error.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <string>

namespace wgc::llm {

bool is_gpu_weight_type(TensorType t) {
  for (TensorType g : kGpuTensorTypes)
    if (g == t) return true;
  return false;
}

uint64_t ggml_bytes(TensorType t, int64_t rows, int64_t cols) {
  if (rows <= 0 || cols <= 0)
    throw Error("wgc: weight of " + std::to_string(rows) + " x " + std::to_string(cols) + " elements");
  const int64_t block = block_size(t);
  if (cols % block)
    throw Error("wgc: a " + std::string(to_string(t)) + " weight needs rows of a multiple of " + std::to_string(block) +
                " elements, not " + std::to_string(cols));
  return uint64_t(rows) * uint64_t(cols / block) * uint64_t(block_bytes(t));
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

uint64_t packed_data_bytes(TensorType t, int64_t rows, int64_t cols) {
  const uint64_t R = uint64_t(rows), C = uint64_t(cols);
  switch (t) {
    case TensorType::F32: return R * rup(C, 4) * 4;
    case TensorType::F16:
    case TensorType::BF16: return R * rup(C, 8) * 2;
    case TensorType::Q8_0: return R * (C / 32) * 32;
    case TensorType::Q4_0: return R * (C / 32) * 16;
    case TensorType::Q4_K: return R * (C / 32) * 16;
    case TensorType::Q6_K: return R * (C / 256) * 192;
    default: break;
  }
  throw Error("wgc: the GPU kernels do not read " + std::string(to_string(t)) + " weights (convert them first)");
}

PackedWeight pack_weight(TensorType type, std::span<const std::byte> bytes, int64_t rows, int64_t cols) {
  uint64_t want = ggml_bytes(type, rows, cols);
  if (bytes.size() != want)
    throw Error("wgc: a " + std::string(to_string(type)) + " weight of " + std::to_string(rows) + " x " +
                std::to_string(cols) + " takes " + std::to_string(want) + " bytes, got " +
                std::to_string(bytes.size()));
  if (!is_gpu_weight_type(type))
    throw Error("wgc: the GPU kernels do not read " + std::string(to_string(type)) + " weights (convert them first)");
  PackedWeight p;
  const uint64_t R = uint64_t(rows), C = uint64_t(cols);
  const std::byte* src = bytes.data();
  switch (type) {
    case TensorType::F32: {
      uint64_t rs = rup(C, 4);
      p.data.assign(packed_data_bytes(type, rows, cols) / 4, 0);
      for (uint64_t r = 0; r < R; ++r) put_bytes(p.data, r * rs * 4, src + r * C * 4, C * 4);
      break;
    }
    case TensorType::F16:
    case TensorType::BF16: {
      uint64_t rs = rup(C, 8);  // halves
      p.data.assign(packed_data_bytes(type, rows, cols) / 4, 0);
      for (uint64_t r = 0; r < R; ++r) put_bytes(p.data, r * rs * 2, src + r * C * 2, C * 2);
      break;
    }
    case TensorType::Q8_0:
    case TensorType::Q4_0: {
      const uint64_t nb = R * (C / 32), qbytes = type == TensorType::Q8_0 ? 32 : 16, bb = qbytes + 2;
      p.data.assign(packed_data_bytes(type, rows, cols) / 4, 0);
      p.scales.assign((nb + 1) / 2, 0);
      auto* sc = reinterpret_cast<uint16_t*>(p.scales.data());
      for (uint64_t b = 0; b < nb; ++b) {
        std::memcpy(&sc[b], src + b * bb, 2);
        put_bytes(p.data, b * qbytes, src + b * bb + 2, qbytes);
      }
      break;
    }
    case TensorType::Q4_K: {
      // Lossless: the same nibbles, d, dmin and 6-bit scales and mins, only moved (weights.h).
      const uint64_t nb = R * (C / 256);
      p.data.assign(packed_data_bytes(type, rows, cols) / 4, 0);
      p.scales.assign(nb * kKquantScaleWords, 0);
      auto* qs_out = reinterpret_cast<uint8_t*>(p.data.data());
      for (uint64_t b = 0; b < nb; ++b) {
        const std::byte* blk = src + b * 144;
        uint32_t* hdr = &p.scales[b * kKquantScaleWords];
        std::memcpy(&hdr[0], blk, 4);  // d | dmin << 16
        for (int j = 0; j < 8; ++j) {
          int sc = 0, mn = 0;
          cpu::q4k_scale_min(j, blk + 4, sc, mn);
          hdr[1 + j / 2] |= (uint32_t(sc) | uint32_t(mn) << 8) << (16 * (j & 1));
          // sub-block j: qs[32 (j / 2) + l], its low nibbles (j even) or high ones (j odd)
          const std::byte* qs = blk + 16 + 32 * (j / 2);
          uint8_t* out = qs_out + (b * 8 + uint64_t(j)) * 16;
          for (int i = 0; i < 16; ++i) {
            const int lo = (cpu::byte_at(qs, i) >> (4 * (j & 1))) & 15,
                      hi = (cpu::byte_at(qs, i + 16) >> (4 * (j & 1))) & 15;
            out[i] = uint8_t(lo | hi << 4);
          }
        }
      }
      break;
    }
    case TensorType::Q6_K: {
      // Lossless: the same 6-bit quants, scales and d, only moved (weights.h).
      const uint64_t nbr = C / 256, lo4 = C / 32, rs = C / 32 * 4 + C / 64 * 4;  // row stride in words
      p.data.assign(packed_data_bytes(type, rows, cols) / 4, 0);
      p.scales.assign(R * nbr * kKquantScaleWords, 0);
      uint8_t q[256];
      for (uint64_t b = 0; b < R * nbr; ++b) {
        const std::byte* blk = src + b * 210;
        cpu::q6k_quants(blk, q);
        uint32_t* hdr = &p.scales[b * kKquantScaleWords];
        uint16_t d;
        std::memcpy(&d, blk + 208, 2);
        hdr[0] = std::bit_cast<uint32_t>(f16_to_f32(d));  // exact
        std::memcpy(&hdr[1], blk + 192, 16);
        const uint64_t row = b / nbr, s0 = (b % nbr) * 8;
        auto* lo = reinterpret_cast<uint8_t*>(&p.data[row * rs]);
        uint32_t* hi = &p.data[row * rs + lo4 * 4];
        for (uint64_t s = 0; s < 8; ++s) {
          const uint8_t* qs = q + 32 * s;
          for (int i = 0; i < 16; ++i) lo[(s0 + s) * 16 + uint64_t(i)] = uint8_t((qs[i] & 15) | (qs[i + 16] & 15) << 4);
          for (int half = 0; half < 2; ++half)
            for (int i = 0; i < 4; ++i)
              for (int k = 0; k < 4; ++k)
                hi[(s0 + s) * 2 + uint64_t(half)] |= uint32_t(qs[16 * half + 4 * i + k] >> 4) << (8 * k + 2 * i);
        }
      }
      break;
    }
    default: break;  // refused above
  }
  return p;
}

GpuWeight upload_weight(const Context& ctx, TensorType type, std::span<const std::byte> bytes, int64_t rows,
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
