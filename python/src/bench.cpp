// The C++ side of python/bench.py: the same small library calls the Python functions make, timed
// in a C++ loop (no Python in it), so the difference is what the binding costs per call.
#include "common.h"

#include "ops/map.h"
#include "ops/matmul.h"
#include "ops/reduce.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>

namespace wgc::python {
namespace {

// Median microseconds per call of `op` on n elements ("add-tensor": device tensors in, a new one
// out; "sum-host": a host array, the CPU path under its threshold; "matmul-host": a sqrt(n)^2
// square, the CPU path under its threshold).
double bench_cpp(const ContextPtr& ctx, const std::string& op, int64_t n, int iters) {
  if (n < 1 || iters < 1) throw py::value_error("bench_cpp: n and iters must be >= 1");
  const Context& c = ctx->ctx();
  std::vector<float> host(static_cast<size_t>(n), 0.5f);
  std::function<void()> call;
  Tensor a, b;
  MatmulDims d;
  DeviceLock lock(*ctx);
  if (op == "add-tensor") {
    a = make_tensor(c, {n}, host);
    b = make_tensor(c, {n}, host);
    call = [&] { add(c, a, b); };
  } else if (op == "sum-host") {
    call = [&] { sum(c, std::span<const float>(host)); };
  } else if (op == "matmul-host") {
    auto side = uint32_t(std::max<int64_t>(1, int64_t(std::sqrt(double(n)))));
    d = {side, side, side, false};
    host.assign(size_t(side) * side, 0.5f);
    call = [&] { matmul(c, std::span<const float>(host), std::span<const float>(host), d); };
  } else {
    throw py::value_error("bench_cpp: no op '" + op + "'");
  }
  for (int i = 0; i < std::min(iters, 20); ++i) call();  // warm: pipelines, pool
  std::vector<double> us;
  for (int i = 0; i < iters; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    call();
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  std::nth_element(us.begin(), us.begin() + std::ptrdiff_t(us.size() / 2), us.end());
  return us[us.size() / 2];
}

}  // namespace

void bind_bench(py::module_& m) {
  m.def("bench_cpp", &bench_cpp, py::arg("ctx"), py::arg("op"), py::arg("n"), py::arg("iters"));
}

}  // namespace wgc::python
