// How fast one core reads F16 weights from memory in the access patterns a decode step can take
// (docs/cpu_llm.md, "2026-12-07 evening"): 65536 rows x 2048 F16 (256 MiB, past any L3) dotted
// with one activation row, by the thread's CPU time, the variants interleaved over 7 rounds
// (median and best GB/s of weights). A measuring aid for this doc, not the engine's kernels.
//
//   g++ -O3 -mavx2 -mfma -mf16c scripts/bench_cpu_llm/read_bandwidth.cpp -o /tmp/read_bandwidth && /tmp/read_bandwidth
#include <immintrin.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <vector>

namespace {

using half = unsigned short;
constexpr int K = 2048;
constexpr size_t kRows = 65536;

double cpu_seconds() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) + double(t.tv_nsec) * 1e-9;
}

float hsum(__m256 v) {
  __m128 b = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  b = _mm_add_ps(b, _mm_movehl_ps(b, b));
  return _mm_cvtss_f32(_mm_add_ss(b, _mm_movehdup_ps(b)));
}

__m256 load8(const half* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }

// llama.cpp's ggml_vec_dot_f16: one row at a time, 4 accumulators, F16 activations.
void one_row(const half* w, const half* x, float* y) {
  for (size_t r = 0; r < kRows; ++r) {
    const half* wr = w + r * K;
    __m256 a[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    for (int k = 0; k < K; k += 32)
      for (int j = 0; j < 4; ++j) a[j] = _mm256_fmadd_ps(load8(wr + k + 8 * j), load8(x + k + 8 * j), a[j]);
    y[r] = hsum(_mm256_add_ps(_mm256_add_ps(a[0], a[1]), _mm256_add_ps(a[2], a[3])));
  }
}

// wgc's avx2 decode: R rows at a time, one accumulator each; the rows as stored (R streams) or
// packed (R rows interleaved by 8 values: one stream), optionally prefetching D bytes ahead.
template <int R, bool Packed, int D = 0>
void tile(const half* w, const float* x, float* y) {
  for (size_t r = 0; r < kRows; r += R) {
    __m256 a[R];
    for (int i = 0; i < R; ++i) a[i] = _mm256_setzero_ps();
    const half* g = w + r * K;
    for (int k = 0; k < K; k += 8) {
      if constexpr (D > 0) _mm_prefetch(reinterpret_cast<const char*>(g + k * R) + D, _MM_HINT_T0);
      const __m256 xv = _mm256_loadu_ps(x + k);
      for (int i = 0; i < R; ++i) a[i] = _mm256_fmadd_ps(load8(Packed ? g + k * R + 8 * i : g + i * K + k), xv, a[i]);
    }
    for (int i = 0; i < R; ++i) y[r + i] = hsum(a[i]);
  }
}

}  // namespace

int main() {
  std::vector<half> w(kRows * K);
  for (size_t i = 0; i < w.size(); ++i) w[i] = half(0x3c00 ^ (i & 0xff));
  const std::vector<half> xh(K, 0x3c00);
  const std::vector<float> xf(K, 1.f);
  std::vector<float> y(kRows);
  struct Variant {
    const char* name;
    void (*run)(const half*, const half*, const float*, float*);
  };
  const Variant variants[] = {
      {"one row, 4 accumulators", [](const half* w, const half* xh, const float*, float* y) { one_row(w, xh, y); }},
      {"8 rows as stored", [](const half* w, const half*, const float* x, float* y) { tile<8, false>(w, x, y); }},
      {"4 rows as stored", [](const half* w, const half*, const float* x, float* y) { tile<4, false>(w, x, y); }},
      {"2 rows as stored", [](const half* w, const half*, const float* x, float* y) { tile<2, false>(w, x, y); }},
      {"8 rows packed", [](const half* w, const half*, const float* x, float* y) { tile<8, true>(w, x, y); }},
      {"4 rows packed", [](const half* w, const half*, const float* x, float* y) { tile<4, true>(w, x, y); }},
      {"8 rows packed, prefetch 512 B",
       [](const half* w, const half*, const float* x, float* y) { tile<8, true, 512>(w, x, y); }},
      {"8 rows packed, prefetch 2 KiB",
       [](const half* w, const half*, const float* x, float* y) { tile<8, true, 2048>(w, x, y); }},
  };
  constexpr int kVariants = sizeof(variants) / sizeof(variants[0]), kRounds = 7;
  std::vector<std::vector<double>> gbs(kVariants);
  float sink = 0;
  for (int round = 0; round < kRounds; ++round)
    for (int v = 0; v < kVariants; ++v) {
      const double t0 = cpu_seconds();
      variants[v].run(w.data(), xh.data(), xf.data(), y.data());
      gbs[size_t(v)].push_back(double(w.size()) * 2 / (cpu_seconds() - t0) * 1e-9);
      sink += y[5];
    }
  for (int v = 0; v < kVariants; ++v) {
    std::vector<double>& g = gbs[size_t(v)];
    std::sort(g.begin(), g.end());
    std::printf("%-32s median %5.1f  best %5.1f GB/s\n", variants[v].name, g[kRounds / 2], g.back());
  }
  return sink == 12345.f ? 1 : 0;
}
