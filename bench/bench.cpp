#include "bench/bench.h"

#include "ops/map.h"
#include "util/error.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>

namespace wgc::bench {

std::vector<std::pair<std::string, CaseMaker>>& registry() {
  static std::vector<std::pair<std::string, CaseMaker>> r;
  return r;
}

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// CPU loops are slow and noisy: take the median of a few, fewer for long ones.
double time_cpu(const std::function<void()>& f) {
  std::vector<double> t;
  auto t0 = Clock::now();
  f();
  t.push_back(ms_since(t0));
  int more = t[0] < 50 ? 4 : t[0] < 500 ? 2 : 0;
  for (int i = 0; i < more; ++i) {
    t0 = Clock::now();
    f();
    t.push_back(ms_since(t0));
  }
  return median(t);
}

}  // namespace

std::vector<double> sizes_or(const Options& o, const Context& ctx, std::vector<double> quick,
                             std::vector<double> cpu_adapter, std::vector<double> gpu) {
  if (o.sizes.size() != o.size_names.size())
    for (const auto& s : o.size_names)
      if (char* end = nullptr; std::strtod(s.c_str(), &end), s.empty() || *end)
        throw Error("wgc bench: --sizes: '" + s + "' is not a number (convolution presets go with conv ops only)");
  if (!o.sizes.empty()) return o.sizes;
  if (o.quick) return quick;
  return ctx.adapter().is_cpu() ? cpu_adapter : gpu;
}

Result run_case(const Context& ctx, const Case& c, const Options& o) {
  Result r{c};
  int reps = o.repeats ? o.repeats : o.quick ? 5 : 20;
  r.error = c.check ? c.check() : 0;
  // Warm-up: the first dispatches pay for pipeline creation and first touch, and an idle GPU
  // runs at a low clock for a while (seen on the H200: a 1 GB copy at 1.7 TB/s right after an
  // idle second, 4.2 TB/s once busy; after 300 ms of warm-up some cases still ran at the low
  // clock). Keep it busy for kWarmupMs first.
  constexpr double kWarmupMs = 1000;
  for (auto t0 = Clock::now(); ms_since(t0) < kWarmupMs;) {
    Batch warm(ctx);
    for (int i = 0; i < 4; ++i) c.record(warm);
    warm.run();
    if (o.quick) break;
  }
  std::vector<double> times;
  r.timestamps = ctx.features().timestamp_query && c.timing != Timing::RoundTrip;
  if (c.timing == Timing::RoundTrip) {
    for (int i = 0; i < reps; ++i) {
      Batch b(ctx);
      c.record(b);
      b.encode();
      auto t0 = Clock::now();
      b.run();
      times.push_back(ms_since(t0));
    }
  } else if (r.timestamps) {
    for (int i = 0; i < reps; ++i) {
      Batch b(ctx, c.timing == Timing::PerDispatch);
      if (c.timing == Timing::Span) b.time_span();
      c.record(b);
      b.run();
      times.push_back(b.total_ms());
    }
  } else {
    // Without timestamps: many runs in one submit, wall-clock, so the submit cost is amortised.
    for (int i = 0; i < std::max(3, reps / 4); ++i) {
      Batch b(ctx);
      for (int j = 0; j < 8; ++j) c.record(b);
      auto t0 = Clock::now();
      b.run();
      times.push_back(ms_since(t0) / 8);
    }
  }
  r.gpu_ms = median(times);
  auto [lo, hi] = std::minmax_element(times.begin(), times.end());
  r.gpu_spread = r.gpu_ms > 0 ? (*hi - *lo) / r.gpu_ms : 0;
  if (c.cpu) r.cpu_ms = time_cpu(c.cpu);
  if (c.cpu_blas) r.blas_ms = time_cpu(c.cpu_blas);
  return r;
}

namespace {
// Solves the m x m system a x = b (row-major) by Gaussian elimination with partial pivoting;
// empty when a pivot falls under 1e-12 (a's columns scaled to about 1: the system is singular).
std::optional<std::vector<double>> solve_linear(std::vector<double> a, std::vector<double> b) {
  const size_t m = b.size();
  for (size_t k = 0; k < m; ++k) {
    size_t piv = k;
    for (size_t i = k + 1; i < m; ++i)
      if (std::fabs(a[i * m + k]) > std::fabs(a[piv * m + k])) piv = i;
    if (!(std::fabs(a[piv * m + k]) > 1e-12)) return std::nullopt;
    for (size_t j = 0; j < m; ++j) std::swap(a[k * m + j], a[piv * m + j]);
    std::swap(b[k], b[piv]);
    for (size_t i = k + 1; i < m; ++i) {
      const double f = a[i * m + k] / a[k * m + k];
      for (size_t j = k; j < m; ++j) a[i * m + j] -= f * a[k * m + j];
      b[i] -= f * b[k];
    }
  }
  std::vector<double> x(m);
  for (size_t k = m; k-- > 0;) {
    double v = b[k];
    for (size_t j = k + 1; j < m; ++j) v -= a[k * m + j] * x[j];
    x[k] = v / a[k * m + k];
  }
  return x;
}
}  // namespace

std::optional<DispatchFit> fit_dispatches(std::span<const Result> rs) {
  // Columns of the design matrix: 1 (fixed), dispatches, bytes; each row divided by its time, so
  // that the residuals are relative.
  constexpr int kTerms = 3;
  bool used[kTerms] = {true, false, false};
  for (const auto& r : rs) {
    used[1] |= r.c.dispatches > 0;
    used[2] |= r.c.bytes > 0;
  }
  std::vector<int> cols;
  for (int j = 0; j < kTerms; ++j)
    if (used[j]) cols.push_back(j);
  const size_t m = cols.size();
  // Each column scaled to a largest entry of 1 (bytes run to 1e9 where the fixed term is 1): the
  // pivot test below then compares like with like.
  auto scaled_row = [&](const Result& r, double* out) {
    const double t = r.gpu_ms * 1e3, row[kTerms] = {1, r.c.dispatches, r.c.bytes};
    for (size_t i = 0; i < m; ++i) out[i] = row[cols[i]] / t;
  };
  double col_max[kTerms] = {0, 0, 0}, x_row[kTerms];
  for (const auto& r : rs)
    if (r.gpu_ms > 0) {
      scaled_row(r, x_row);
      for (size_t i = 0; i < m; ++i) col_max[i] = std::max(col_max[i], std::fabs(x_row[i]));
    }
  // Normal equations A^T A x = A^T b of the rows divided by their times (b: all ones).
  std::vector<double> ata(m * m, 0), atb(m, 0);
  for (const auto& r : rs) {
    if (r.gpu_ms <= 0) continue;
    scaled_row(r, x_row);
    for (size_t i = 0; i < m; ++i) x_row[i] /= col_max[i];
    for (size_t i = 0; i < m; ++i) {
      atb[i] += x_row[i];
      for (size_t j = 0; j < m; ++j) ata[i * m + j] += x_row[i] * x_row[j];
    }
  }
  auto solved = solve_linear(std::move(ata), std::move(atb));
  if (!solved) return std::nullopt;
  std::vector<double>& x = *solved;
  for (size_t i = 0; i < m; ++i) x[i] /= col_max[i];
  double coef[kTerms] = {0, 0, 0};
  for (size_t i = 0; i < m; ++i) coef[cols[i]] = x[i];
  DispatchFit f;
  f.fixed_us = coef[0];
  f.per_dispatch_us = coef[1];
  f.bandwidth = coef[2] > 0 ? 1e6 / coef[2] : 0;
  for (const auto& r : rs) {
    if (r.gpu_ms <= 0) continue;
    const double t = r.gpu_ms * 1e3, fit = coef[0] + coef[1] * r.c.dispatches + coef[2] * r.c.bytes;
    f.max_rel_residual = std::max(f.max_rel_residual, std::fabs(fit - t) / t);
  }
  return f;
}

double measured_bandwidth(const Context& ctx, const Options& o) {
  static double cached = 0;
  if (cached > 0) return cached;
  // The fastest copy kernel over a buffer far larger than the caches, timed with timestamps
  // (a copy reads and writes each byte once): the device's practical memory bandwidth.
  int64_t n = o.quick || ctx.adapter().is_cpu() ? (int64_t(1) << 22) : (int64_t(1) << 28);
  Tensor a = make_tensor(ctx, {n}), b = make_tensor(ctx, {n});
  fill_u32(ctx, a, 0);
  Case c;
  c.record = [&](Batch& batch) { copy(batch, a, b, {uint64_t(n)}, {}, MapVersion::Vec4); };
  Options ro = o;
  ro.repeats = o.quick ? 3 : 10;
  Result r = run_case(ctx, c, ro);
  cached = 2.0 * double(n) * 4 / (r.gpu_ms * 1e-3);
  return cached;
}

double nominal_flops(const Context& ctx) {
  const auto& d = ctx.adapter().device;
  // Vendor datasheet FP32 (non-tensor) rates of the cards wgc is benchmarked on.
  if (d.find("H200") != std::string::npos || d.find("H100 80GB HBM3") != std::string::npos) return 66.9e12;
  return 0;
}

}  // namespace wgc::bench
