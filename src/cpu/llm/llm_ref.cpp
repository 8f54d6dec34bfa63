#include "cpu/llm/llm_ref.h"

#include "util/error.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

namespace wgc::llm::ref {

float half_to_float(uint16_t h) {
  int e = (h >> 10) & 31, m = h & 1023;
  double v = e == 0 ? std::ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : std::ldexp(m + 1024, e - 25);
  return float(h & 0x8000 ? -v : v);
}

uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000;
  float a = std::fabs(f);
  if (std::isnan(f)) return uint16_t(sign | 0x7e00);
  if (a >= 65520.f) return uint16_t(sign | 0x7c00);
  if (a < std::ldexp(1.f, -14)) {  // subnormal: multiples of 2^-24
    return uint16_t(sign | uint32_t(std::nearbyint(double(a) * std::ldexp(1.0, 24))));
  }
  int e;
  std::frexp(a, &e);                                         // a = m * 2^e, m in [0.5, 1)
  double q = std::nearbyint(std::ldexp(double(a), 11 - e));  // 11 significant bits
  if (q >= 2048) {
    q /= 2;
    ++e;
  }
  return uint16_t(sign | uint32_t(e + 14) << 10 | (uint32_t(q) & 1023));
}

float bf16_to_float(uint16_t h) {
  uint32_t x = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

uint16_t float_to_bf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if (std::isnan(f)) return uint16_t((x >> 16) | 0x40);
  x += 0x7fff + ((x >> 16) & 1);
  return uint16_t(x >> 16);
}

namespace {

uint16_t rd16(const std::byte* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}
uint8_t u8(const std::byte* p, size_t i) { return std::to_integer<uint8_t>(p[i]); }

void scale_min_k4(int j, const std::byte* q, int& d, int& m) {
  if (j < 4) {
    d = u8(q, j) & 63;
    m = u8(q, j + 4) & 63;
  } else {
    d = (u8(q, j + 4) & 0xF) | ((u8(q, j - 4) >> 6) << 4);
    m = (u8(q, j + 4) >> 4) | ((u8(q, j) >> 6) << 4);
  }
}

}  // namespace

std::vector<double> dequantize(WeightType type, std::span<const std::byte> bytes, int64_t rows, int64_t cols) {
  if (bytes.size() != ggml_bytes(type, rows, cols)) throw Error("wgc: dequantize: wrong byte count");
  const size_t n = size_t(rows * cols);
  std::vector<double> y(n);
  const std::byte* p = bytes.data();
  switch (type) {
    case WeightType::F32:
      for (size_t i = 0; i < n; ++i) {
        float f;
        std::memcpy(&f, p + 4 * i, 4);
        y[i] = f;
      }
      break;
    case WeightType::F16:
      for (size_t i = 0; i < n; ++i) y[i] = half_to_float(rd16(p + 2 * i));
      break;
    case WeightType::BF16:
      for (size_t i = 0; i < n; ++i) y[i] = bf16_to_float(rd16(p + 2 * i));
      break;
    case WeightType::Q8_0:
      for (size_t b = 0; b < n / 32; ++b) {
        const std::byte* blk = p + b * 34;
        double d = half_to_float(rd16(blk));
        for (int i = 0; i < 32; ++i) y[b * 32 + i] = d * double(int8_t(u8(blk, 2 + i)));
      }
      break;
    case WeightType::Q4_0:
      for (size_t b = 0; b < n / 32; ++b) {
        const std::byte* blk = p + b * 18;
        double d = half_to_float(rd16(blk));
        for (int i = 0; i < 16; ++i) {
          y[b * 32 + i] = d * ((u8(blk, 2 + i) & 0xF) - 8);
          y[b * 32 + 16 + i] = d * ((u8(blk, 2 + i) >> 4) - 8);
        }
      }
      break;
    case WeightType::Q4_K:
      for (size_t b = 0; b < n / 256; ++b) {
        const std::byte* blk = p + b * 144;
        double d = half_to_float(rd16(blk)), dmin = half_to_float(rd16(blk + 2));
        const std::byte* sc = blk + 4;
        const std::byte* q = blk + 16;
        double* out = &y[b * 256];
        for (int j = 0, is = 0; j < 256; j += 64, is += 2, q += 32) {
          int s, m;
          scale_min_k4(is, sc, s, m);
          double d1 = d * s, m1 = dmin * m;
          scale_min_k4(is + 1, sc, s, m);
          double d2 = d * s, m2 = dmin * m;
          for (int l = 0; l < 32; ++l) *out++ = d1 * (u8(q, l) & 0xF) - m1;
          for (int l = 0; l < 32; ++l) *out++ = d2 * (u8(q, l) >> 4) - m2;
        }
      }
      break;
    case WeightType::Q6_K:
      for (size_t b = 0; b < n / 256; ++b) {
        const std::byte* blk = p + b * 210;
        double d = half_to_float(rd16(blk + 208));
        const std::byte* ql = blk;
        const std::byte* qh = blk + 128;
        const std::byte* sc = blk + 192;
        double* out = &y[b * 256];
        for (int h = 0; h < 2; ++h, out += 128, ql += 64, qh += 32, sc += 8) {
          for (int l = 0; l < 32; ++l) {
            int is = l / 16;
            int q1 = int((u8(ql, l) & 0xF) | (((u8(qh, l) >> 0) & 3) << 4)) - 32;
            int q2 = int((u8(ql, l + 32) & 0xF) | (((u8(qh, l) >> 2) & 3) << 4)) - 32;
            int q3 = int((u8(ql, l) >> 4) | (((u8(qh, l) >> 4) & 3) << 4)) - 32;
            int q4 = int((u8(ql, l + 32) >> 4) | (((u8(qh, l) >> 6) & 3) << 4)) - 32;
            out[l] = d * int8_t(u8(sc, is)) * q1;
            out[l + 32] = d * int8_t(u8(sc, is + 2)) * q2;
            out[l + 64] = d * int8_t(u8(sc, is + 4)) * q3;
            out[l + 96] = d * int8_t(u8(sc, is + 6)) * q4;
          }
        }
      }
      break;
  }
  return y;
}

std::vector<std::byte> random_weight(WeightType type, int64_t rows, int64_t cols, uint32_t seed) {
  std::vector<std::byte> b(ggml_bytes(type, rows, cols));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uni(-1.f, 1.f);
  auto put16 = [&](size_t at, uint16_t v) { std::memcpy(&b[at], &v, 2); };
  auto randbytes = [&](size_t at, size_t n) {
    for (size_t i = 0; i < n; ++i) b[at + i] = std::byte(rng() & 0xff);
  };
  auto small_scale = [&](float lo, float hi) { return float_to_half(lo + (hi - lo) * (uni(rng) * 0.5f + 0.5f)); };
  const size_t n = size_t(rows * cols);
  switch (type) {
    case WeightType::F32:
      for (size_t i = 0; i < n; ++i) {
        float f = uni(rng);
        std::memcpy(&b[4 * i], &f, 4);
      }
      break;
    case WeightType::F16:
      for (size_t i = 0; i < n; ++i) put16(2 * i, float_to_half(uni(rng)));
      break;
    case WeightType::BF16:
      for (size_t i = 0; i < n; ++i) put16(2 * i, float_to_bf16(uni(rng)));
      break;
    case WeightType::Q8_0:
      for (size_t k = 0; k < n / 32; ++k) {
        put16(k * 34, small_scale(0.002f, 0.01f));
        randbytes(k * 34 + 2, 32);
      }
      break;
    case WeightType::Q4_0:
      for (size_t k = 0; k < n / 32; ++k) {
        put16(k * 18, small_scale(0.05f, 0.15f));
        randbytes(k * 18 + 2, 16);
      }
      break;
    case WeightType::Q4_K:
      for (size_t k = 0; k < n / 256; ++k) {
        put16(k * 144, small_scale(0.001f, 0.004f));
        put16(k * 144 + 2, small_scale(0.001f, 0.01f));
        randbytes(k * 144 + 4, 140);
      }
      break;
    case WeightType::Q6_K:
      for (size_t k = 0; k < n / 256; ++k) {
        randbytes(k * 210, 208);
        put16(k * 210 + 208, small_scale(0.0002f, 0.001f));
      }
      break;
  }
  return b;
}

std::vector<double> linear(const std::vector<double>& w, int64_t cols, const std::vector<float>& x, int n_tokens,
                           int64_t row0, int64_t nrows) {
  std::vector<double> y(size_t(n_tokens * nrows));
  for (int t = 0; t < n_tokens; ++t)
    for (int64_t r = 0; r < nrows; ++r) {
      double s = 0;
      const double* wr = &w[size_t((row0 + r) * cols)];
      const float* xt = &x[size_t(t * cols)];
      for (int64_t k = 0; k < cols; ++k) s += wr[k] * double(xt[k]);
      y[size_t(t * nrows + r)] = s;
    }
  return y;
}

std::vector<float> embedding(const std::vector<double>& w, int64_t cols, const std::vector<uint32_t>& ids) {
  std::vector<float> out(ids.size() * size_t(cols));
  for (size_t t = 0; t < ids.size(); ++t)
    for (int64_t k = 0; k < cols; ++k) out[t * size_t(cols) + size_t(k)] = float(w[ids[t] * size_t(cols) + size_t(k)]);
  return out;
}

std::vector<float> rms_norm(const std::vector<float>& x, const std::vector<float>& w, int rows, int n, float eps) {
  std::vector<float> y(x.size());
  for (int r = 0; r < rows; ++r) {
    double ss = 0;
    for (int i = 0; i < n; ++i) ss += double(x[size_t(r * n + i)]) * x[size_t(r * n + i)];
    double inv = 1.0 / std::sqrt(ss / n + double(eps));
    for (int i = 0; i < n; ++i) y[size_t(r * n + i)] = float(double(x[size_t(r * n + i)]) * inv * w[size_t(i)]);
  }
  return y;
}

std::vector<float> swiglu(const std::vector<float>& g, const std::vector<float>& u) {
  std::vector<float> y(g.size());
  for (size_t i = 0; i < g.size(); ++i) {
    double gd = g[i];
    y[i] = float(gd / (1.0 + std::exp(-gd)) * u[i]);
  }
  return y;
}

std::vector<float> quantize_q8_act(const std::vector<float>& x) {
  if (x.size() % 32)
    throw Error("wgc: quantize_q8_act: " + std::to_string(x.size()) + " values, not whole blocks of 32");
  std::vector<float> out(x.size());
  for (size_t b = 0; b < x.size(); b += 32) {
    float amax = 0;
    for (size_t i = b; i < b + 32; ++i) amax = std::max(amax, std::fabs(x[i]));
    const float d = amax / 127.0f, inv = d > 0 ? 1.0f / d : 0.0f;
    for (size_t i = b; i < b + 32; ++i) out[i] = std::clamp(std::nearbyint(x[i] * inv), -127.0f, 127.0f) * d;
  }
  return out;
}

void rope(std::vector<float>& x, int n_tokens, int n_heads, int head_dim, const std::vector<int>& pos,
          const std::vector<float>& inv_freq, bool interleaved) {
  const int half = head_dim / 2;
  for (int t = 0; t < n_tokens; ++t)
    for (int h = 0; h < n_heads; ++h) {
      float* v = &x[size_t((t * n_heads + h) * head_dim)];
      for (int i = 0; i < half; ++i) {
        float ang = float(pos[size_t(t)]) * inv_freq[size_t(i)];
        double c = std::cos(double(ang)), s = std::sin(double(ang));
        int a = interleaved ? 2 * i : i, b = interleaved ? 2 * i + 1 : i + half;
        double x0 = v[a], x1 = v[b];
        v[a] = float(x0 * c - x1 * s);
        v[b] = float(x1 * c + x0 * s);
      }
    }
}

std::vector<float> attention(const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v,
                             int n, int n_heads, int n_kv, int hd, int start, float scale) {
  std::vector<float> out(size_t(n * n_heads * hd));
  const int group = n_heads / n_kv;
  for (int t = 0; t < n; ++t)
    for (int h = 0; h < n_heads; ++h) {
      const int kvh = h / group, len = start + t + 1;
      const float* qv = &q[size_t((t * n_heads + h) * hd)];
      std::vector<double> s(static_cast<size_t>(len));
      double m = -INFINITY;
      for (int j = 0; j < len; ++j) {
        const float* kv = &k[size_t((j * n_kv + kvh) * hd)];
        double d = 0;
        for (int i = 0; i < hd; ++i) d += double(qv[i]) * kv[i];
        s[size_t(j)] = d * scale;
        m = std::max(m, s[size_t(j)]);
      }
      double l = 0;
      for (auto& e : s) l += (e = std::exp(e - m));
      for (int i = 0; i < hd; ++i) {
        double o = 0;
        for (int j = 0; j < len; ++j) o += s[size_t(j)] * v[size_t((j * n_kv + kvh) * hd + i)];
        out[size_t((t * n_heads + h) * hd + i)] = float(o / l);
      }
    }
  return out;
}

uint32_t argmax(const std::vector<float>& x) {
  uint32_t best = 0;
  for (uint32_t i = 1; i < x.size(); ++i)
    if (x[i] > x[best]) best = i;
  return best;
}

std::vector<std::pair<float, uint32_t>> topk(const std::vector<float>& x, int k) {
  std::vector<std::pair<float, uint32_t>> all(x.size());
  for (uint32_t i = 0; i < x.size(); ++i) all[i] = {x[i], i};
  auto better = [](const auto& a, const auto& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  };
  size_t kk = std::min(size_t(k), all.size());
  std::partial_sort(all.begin(), all.begin() + long(kk), all.end(), better);
  all.resize(kk);
  return all;
}

}  // namespace wgc::llm::ref
