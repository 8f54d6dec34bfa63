// The CPU LLM engine's linear-layer kernels (src/cpu/llm) on one core, every level this processor
// runs side by side: one rows x cols matrix of each type times `tokens` activation rows. Timed by
// the thread's CPU time (CLOCK_THREAD_CPUTIME_ID, best of 7 runs), so other processes on a shared
// machine slow it only through the memory and caches they share. Decode-shaped work (tokens 1)
// wants a matrix larger than the last-level cache (rows 32768: 37 MB of Q4_0) to measure how fast
// one core streams weights in; prefill-shaped work (tokens 64) a cache-sized one.
//
//   cmake --build build --target cpu_llm_kernels_bench
//   build/cpu_llm_kernels_bench [tokens 64] [rows 2048] [cols 2048] [types q4_0,f16,...] [levels avx2,...]
#include "cpu/llm/kernels.h"
#include "cpu/llm/llm_ref.h"
#include "cpu/llm/q8_buffer.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <random>
#include <string>
#include <vector>

using namespace wgc::llm;
using namespace wgc::llm::cpu;

namespace {

double thread_seconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t n = argc > 1 ? std::atoll(argv[1]) : 64, rows = argc > 2 ? std::atoll(argv[2]) : 2048,
                cols = argc > 3 ? std::atoll(argv[3]) : 2048;
  if (n < 1 || rows < 1 || cols < 256 || cols % 256) {
    std::fprintf(stderr, "usage: cpu_llm_kernels_bench [tokens >= 1] [rows >= 1] [cols: a multiple of 256]\n");
    return 2;
  }
  std::printf("%s; %lld tokens x %lldx%lld weights, one core's CPU time, best of 7\n\n", describe_cpu(1).c_str(),
              (long long)n, (long long)rows, (long long)cols);
  std::printf("| weights | level | GMAC/s | weight GB/s |\n|---|---|---:|---:|\n");
  std::vector<float> x(size_t(n * cols));
  std::mt19937 rng(2);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  for (float& v : x) v = dist(rng);
  std::vector<float> y(size_t(n * rows));
  // Only the named types and levels (comma-separated, as `wgc info` and WGC_CPU_ISA write them).
  const std::string only_types = argc > 4 ? argv[4] : "", only_levels = argc > 5 ? argv[5] : "";
  auto picked = [](const std::string& list, std::string name) {
    if (list.empty()) return true;
    for (char& c : name) c = char(std::tolower(static_cast<unsigned char>(c)));
    return ("," + list + ",").find("," + name + ",") != std::string::npos;
  };
  for (TensorType t : kCpuKernelTypes) {
    if (!picked(only_types, std::string(to_string(t)))) continue;
    const std::vector<std::byte> bytes = ref::random_weight(t, rows, cols, 1);
    const Weight w{t, bytes.data(), rows, cols, int64_t(bytes.size()) / rows};
    for (Isa isa : supported_isas()) {
      if (!picked(only_levels, std::string(to_string(isa)))) continue;
      const Kernels& k = kernels(isa);
      Q8Buffer xq;
      xq.resize(n, cols);
      k.quantize(x.data(), cols, 0, n, xq.rows());
      LinearIo io;
      io.x = x.data();
      io.x_stride = cols;
      io.xq = xq.rows();
      io.n = n;
      io.y = y.data();
      io.y_stride = rows;
      std::vector<std::byte> scratch(size_t(k.linear_scratch(cols)) + 64);
      void* s = reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(scratch.data()) + 63) & ~uintptr_t(63));
      // The rows as stored, and the level's load-time packed copy where it has one (what the engine
      // reads once it packs at load).
      const PackedWeight pw = pack_weight(k, w);
      for (const Weight* wt : {&w, &pw.weight}) {
        if (wt == &pw.weight && !pw.weight.packed) continue;
        double best = 1e30;
        for (int run = 0; run < 7; ++run) {
          const double t0 = thread_seconds();
          for (int64_t r = 0; r < rows; r += 128)
            k.linear(*wt, io, r, std::min(rows, r + 128), s);  // the engine's chunks
          best = std::min(best, thread_seconds() - t0);
        }
        std::printf("| %s | %s%s | %.1f | %.2f |\n", std::string(to_string(t)).c_str(),
                    std::string(to_string(isa)).c_str(), wt->packed ? " packed" : "",
                    double(rows) * double(cols) * double(n) / best * 1e-9, double(bytes.size()) / best * 1e-9);
      }
    }
  }
  return 0;
}
