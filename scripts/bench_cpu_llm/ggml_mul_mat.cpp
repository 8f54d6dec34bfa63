// llama.cpp's CPU matrix multiplication alone: one rows x cols weight matrix of a type times
// `tokens` f32 activation rows, through ggml's CPU backend (a prebuilt libggml-cpu-<variant>.so of
// the peer, node-llama-cpp, linked at build time: never part of wgc), timed like wgc's
// cpu_llm_kernels_bench: the process's CPU time, best of 7 runs after one untimed. The weights go
// where llama.cpp's model loader puts them: the repack buffer (CPU_REPACK: Q4_0 and Q4_K as 8-row
// interleaved blocks on AVX2) when it takes the matrix, else the plain CPU buffer. The CPU time
// includes ggml quantizing the activations (from_float), which wgc's bench leaves out.
//
//   ggml_mul_mat TYPE TOKENS ROWS COLS   (TYPE: f32 f16 bf16 q8_0 q4_0 q4_k q6_k)
//   -> "| TYPE | llama.cpp BUFFER | GMAC/s | weight GB/s |"
// Built by scripts/bench_cpu_llm_kernels.sh (with the ggml headers of the peer's own source).
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <random>
#include <string>
#include <vector>

namespace {

double cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

bool parse_type(const std::string& n, ggml_type& t) {
  const std::pair<const char*, ggml_type> known[] = {
      {"f32", GGML_TYPE_F32},   {"f16", GGML_TYPE_F16},   {"bf16", GGML_TYPE_BF16}, {"q8_0", GGML_TYPE_Q8_0},
      {"q4_0", GGML_TYPE_Q4_0}, {"q4_k", GGML_TYPE_Q4_K}, {"q6_k", GGML_TYPE_Q6_K}};
  for (const auto& [name, type] : known)
    if (n == name) return t = type, true;
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  ggml_type type{};
  if (argc != 5 || !parse_type(argv[1], type)) {
    std::fprintf(stderr, "usage: ggml_mul_mat f32|f16|bf16|q8_0|q4_0|q4_k|q6_k TOKENS ROWS COLS\n");
    return 2;
  }
  const int64_t n = std::atoll(argv[2]), rows = std::atoll(argv[3]), cols = std::atoll(argv[4]);
  if (n < 1 || rows < 8 || cols < 256 || cols % 256) {
    std::fprintf(stderr, "ggml_mul_mat: tokens >= 1, rows >= 8, cols a multiple of 256\n");
    return 2;
  }
  ggml_backend_t backend = ggml_backend_cpu_init();
  ggml_backend_cpu_set_n_threads(backend, 1);
  ggml_backend_reg_t reg = ggml_backend_cpu_reg();
  ggml_backend_dev_t dev = ggml_backend_reg_dev_get(reg, 0);
  using extra_bufts_fn = ggml_backend_buffer_type_t* (*)(ggml_backend_dev_t);
  auto extra_bufts =
      reinterpret_cast<extra_bufts_fn>(ggml_backend_reg_get_proc_address(reg, "ggml_backend_dev_get_extra_bufts"));

  const ggml_init_params no_alloc = {ggml_tensor_overhead() * 8 + ggml_graph_overhead(), nullptr, true};
  ggml_context* cw = ggml_init(no_alloc);
  ggml_context* cx = ggml_init(no_alloc);
  ggml_context* cg = ggml_init(no_alloc);
  ggml_tensor* w = ggml_new_tensor_2d(cw, type, cols, rows);
  ggml_tensor* x = ggml_new_tensor_2d(cx, GGML_TYPE_F32, cols, n);
  ggml_tensor* y = ggml_mul_mat(cg, w, x);
  ggml_cgraph* graph = ggml_new_graph(cg);
  ggml_build_forward_expand(graph, y);

  // The first extra buffer type whose tensor traits take this matrix product (llama.cpp's
  // scheduler asks the same question of the device).
  ggml_backend_buffer_type_t buft = ggml_backend_cpu_buffer_type();
  for (ggml_backend_buffer_type_t* e = extra_bufts ? extra_bufts(dev) : nullptr; e && *e; ++e) {
    ggml_backend_buffer_t probe = ggml_backend_buft_alloc_buffer(*e, ggml_nbytes(w) + 4096);
    w->buffer = probe;
    ggml_backend_buffer_init_tensor(probe, w);
    const bool takes = ggml_backend_dev_supports_op(dev, y);
    w->buffer = nullptr;
    w->extra = nullptr;
    ggml_backend_buffer_free(probe);
    if (takes) {
      buft = *e;
      break;
    }
  }
  ggml_backend_buffer_t wbuf = ggml_backend_alloc_ctx_tensors_from_buft(cw, buft);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<float> wf(size_t(rows * cols));
  for (float& v : wf) v = dist(rng);
  std::vector<char> wq(ggml_nbytes(w));
  if (type == GGML_TYPE_F32)
    std::memcpy(wq.data(), wf.data(), wq.size());
  else
    ggml_quantize_chunk(type, wf.data(), wq.data(), 0, rows, cols, nullptr);
  ggml_backend_tensor_set(w, wq.data(), 0, wq.size());  // repacks in the repack buffer
  ggml_backend_buffer_t xbuf = ggml_backend_alloc_ctx_tensors(cx, backend);
  std::vector<float> xf(size_t(n * cols));
  for (float& v : xf) v = dist(rng);
  ggml_backend_tensor_set(x, xf.data(), 0, xf.size() * sizeof(float));
  ggml_gallocr_t galloc = ggml_gallocr_new(ggml_backend_get_default_buffer_type(backend));
  ggml_gallocr_alloc_graph(galloc, graph);

  double best = 1e30;
  for (int run = 0; run < 8; ++run) {
    const double t0 = cpu_seconds();
    ggml_backend_graph_compute(backend, graph);
    if (run > 0) best = std::min(best, cpu_seconds() - t0);
  }
  std::printf("| %s | llama.cpp %s | %.1f | %.2f |\n", argv[1], ggml_backend_buft_name(buft),
              double(rows) * double(cols) * double(n) / best * 1e-9, double(wq.size()) / best * 1e-9);
  ggml_gallocr_free(galloc);
  ggml_backend_buffer_free(xbuf);
  ggml_backend_buffer_free(wbuf);
  ggml_free(cg);
  ggml_free(cx);
  ggml_free(cw);
  ggml_backend_free(backend);
  return 0;
}
