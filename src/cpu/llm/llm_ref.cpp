#include "cpu/llm/llm_ref.h"

#include "cpu/llm/dequant.h"
#include "util/error.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

namespace wgc::llm::ref {

namespace {

// Bytes of a rows x cols matrix of type t; an error when cols is not a whole number of blocks.
size_t matrix_bytes(TensorType t, int64_t rows, int64_t cols) {
  auto row = rows > 0 && cols > 0 ? row_bytes(t, uint64_t(cols)) : std::nullopt;
  if (!row)
    throw Error("wgc: a " + std::string(to_string(t)) + " matrix of " + std::to_string(rows) + " x " +
                std::to_string(cols) + " elements is not whole blocks of " + std::to_string(block_size(t)));
  return size_t(*row) * size_t(rows);
}

}  // namespace

std::vector<double> dequantize(TensorType type, std::span<const std::byte> bytes, int64_t rows, int64_t cols) {
  if (bytes.size() != matrix_bytes(type, rows, cols)) throw Error("wgc: dequantize: wrong byte count");
  std::vector<float> f = llm::dequantize(type, bytes, size_t(rows) * size_t(cols));
  return {f.begin(), f.end()};
}

std::vector<std::byte> random_weight(TensorType type, int64_t rows, int64_t cols, uint32_t seed) {
  std::vector<std::byte> b(matrix_bytes(type, rows, cols));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uni(-1.f, 1.f);
  auto put16 = [&](size_t at, uint16_t v) { std::memcpy(&b[at], &v, 2); };
  auto randbytes = [&](size_t at, size_t n) {
    for (size_t i = 0; i < n; ++i) b[at + i] = std::byte(rng() & 0xff);
  };
  auto small_scale = [&](float lo, float hi) { return f32_to_f16(lo + (hi - lo) * (uni(rng) * 0.5f + 0.5f)); };
  const size_t n = size_t(rows * cols);
  switch (type) {
    case TensorType::F32:
      for (size_t i = 0; i < n; ++i) {
        float f = uni(rng);
        std::memcpy(&b[4 * i], &f, 4);
      }
      break;
    case TensorType::F16:
      for (size_t i = 0; i < n; ++i) put16(2 * i, f32_to_f16(uni(rng)));
      break;
    case TensorType::BF16:
      for (size_t i = 0; i < n; ++i) put16(2 * i, f32_to_bf16(uni(rng)));
      break;
    case TensorType::Q8_0:
      for (size_t k = 0; k < n / 32; ++k) {
        put16(k * 34, small_scale(0.002f, 0.01f));
        randbytes(k * 34 + 2, 32);
      }
      break;
    case TensorType::Q4_0:
      for (size_t k = 0; k < n / 32; ++k) {
        put16(k * 18, small_scale(0.05f, 0.15f));
        randbytes(k * 18 + 2, 16);
      }
      break;
    case TensorType::Q4_K:
      for (size_t k = 0; k < n / 256; ++k) {
        put16(k * 144, small_scale(0.001f, 0.004f));
        put16(k * 144 + 2, small_scale(0.001f, 0.01f));
        randbytes(k * 144 + 4, 140);
      }
      break;
    case TensorType::Q6_K:
      for (size_t k = 0; k < n / 256; ++k) {
        randbytes(k * 210, 208);
        put16(k * 210 + 208, small_scale(0.0002f, 0.001f));
      }
      break;
    default: throw Error("wgc: random_weight: no generator for " + std::string(to_string(type)));
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
                             int n, int n_heads, int n_kv, int hd, int start, float scale, int window, float softcap) {
  std::vector<float> out(size_t(n * n_heads * hd));
  const int group = n_heads / n_kv;
  for (int t = 0; t < n; ++t)
    for (int h = 0; h < n_heads; ++h) {
      const int kvh = h / group, len = start + t + 1;
      const int first = window > 0 ? std::max(0, len - window) : 0;
      const float* qv = &q[size_t((t * n_heads + h) * hd)];
      std::vector<double> s(static_cast<size_t>(len), 0.0);
      double m = -INFINITY;
      for (int j = first; j < len; ++j) {
        const float* kv = &k[size_t((j * n_kv + kvh) * hd)];
        double d = 0;
        for (int i = 0; i < hd; ++i) d += double(qv[i]) * kv[i];
        s[size_t(j)] = softcap > 0 ? softcap * std::tanh(d * scale / softcap) : d * scale;
        m = std::max(m, s[size_t(j)]);
      }
      double l = 0;
      for (int j = first; j < len; ++j) l += (s[size_t(j)] = std::exp(s[size_t(j)] - m));
      for (int i = 0; i < hd; ++i) {
        double o = 0;
        for (int j = first; j < len; ++j) o += s[size_t(j)] * v[size_t((j * n_kv + kvh) * hd + i)];
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
