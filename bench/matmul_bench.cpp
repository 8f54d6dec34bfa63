// `wgc bench --ops matmul`: every matmul version at square sizes, against a plain CPU loop and
// OpenBLAS.
#include "bench/bench.h"
#include "cpu/matmul.h"
#include "ops/matmul.h"
#include "util/error.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>

#ifdef WGC_HAVE_CBLAS
#include <cblas.h>
#endif

namespace wgc::bench {
namespace {

constexpr double kPlainCpuMaxFlops = 4.3e9;  // ~1024^3: the plain loop takes seconds past this
constexpr double kNaiveMaxFlops = 2.2e11;    // the naive kernel at 4096^3 adds nothing but minutes

struct Data {
  uint32_t n;
  std::vector<float> a, b;
  Tensor ta, tb, tc;
};

// One version at one size under vec4-db2's knobs t (the plain rows: Auto's), checked on sampled rows against the f64
// reference.
Case matmul_case(const Context& ctx, std::shared_ptr<Data> d, MatmulVersion v, const MatmulTuning& t) {
  const MatmulDims dims{d->n, d->n, d->n, false};
  const size_t nn = size_t(d->n) * d->n;
  Case c;
  c.op = "matmul";
  c.version = std::string(to_string(v));
  c.size = std::to_string(d->n) + "^3";
  c.elements = d->n;
  c.flops = dims.flops();
  c.tolerance = 1e-5 * (1 + std::sqrt(double(d->n)));
  c.bytes = 3.0 * double(nn) * 4;
  c.record = [d, dims, v, t](Batch& b) { matmul(b, d->ta, d->tb, d->tc, dims, t, v); };
  c.check = [d, dims, v, t, &ctx] {
    fill_u32(ctx, d->tc, kPoisonNaN);
    Batch b(ctx);
    matmul(b, d->ta, d->tb, d->tc, dims, t, v);
    b.run();
    auto got = download<float>(ctx, d->tc);
    // Check a sample of rows against the double-precision reference (all rows is O(n^3) on CPU).
    double worst = 0;
    uint32_t step = std::max<uint32_t>(1, d->n / 16);
    std::vector<float> row(d->n);
    for (uint32_t i = 0; i < d->n; i += step) {
      cpu::matmul_reference(std::span(d->a).subspan(size_t(i) * d->n, d->n), d->b, row, 1, d->n, d->n, false);
      worst = std::max(worst, cpu::max_rel_error(std::span<const float>(got).subspan(size_t(i) * d->n, d->n),
                                                 std::span<const float>(row)));
    }
    return worst;
  };
  return c;
}

// WGC_MATMUL_SWEEP="KNOBS,KNOBS,..." (each parse_matmul_tuning's "key=value/key=value", with
// "@N" after it to run that set at size N alone): vec4-db2 timed again under each set, named
// "vec4-db2 [KNOBS]", so that one process (one device call) sweeps them all; `--versions vec4-db2`
// keeps them. A set with an unknown key or a bad number throws; one this device cannot run is left
// out with a note on stderr.
struct SweepSet {
  std::string name;
  MatmulTuning tuning;
  uint32_t only_n = 0;  // 0: every size
};
std::vector<SweepSet> sweep_sets(const Context& ctx) {
  std::vector<SweepSet> sets;
  const char* env = std::getenv("WGC_MATMUL_SWEEP");
  std::string all = env ? env : "";
  for (size_t pos = 0; pos < all.size();) {
    size_t end = std::min(all.find(',', pos), all.size());
    std::string set = all.substr(pos, end - pos);
    pos = end + 1;
    if (set.empty()) continue;
    SweepSet s{set.substr(0, set.find('@')), {}, 0};
    if (size_t at = set.find('@'); at != std::string::npos) {
      char* e = nullptr;
      s.only_n = uint32_t(std::strtoul(set.c_str() + at + 1, &e, 10));
      if (!s.only_n || *e) throw Error("wgc bench: WGC_MATMUL_SWEEP set '" + set + "': @ takes a size");
    }
    s.tuning = parse_matmul_tuning(s.name);  // a malformed set throws
    // A set this device cannot run (e.g. more workgroup memory than it has) is left out with a
    // note, so that one set does not cost the rest of a sweep.
    if (std::string e = matmul_tuning_error(ctx, s.tuning); !e.empty()) {
      std::fprintf(stderr, "wgc bench: WGC_MATMUL_SWEEP set '%s' left out: %s\n", set.c_str(), e.c_str());
      continue;
    }
    sets.push_back(std::move(s));
  }
  return sets;
}

std::vector<Case> cases(const Context& ctx, const Options& o) {
  std::vector<Case> out;
  const std::vector<SweepSet> sweep = sweep_sets(ctx);
  for (double s : sizes_or(o, ctx, {64, 257}, {128, 256, 512}, {1024, 2048, 4096})) {
    auto d = std::make_shared<Data>();
    d->n = static_cast<uint32_t>(s);
    size_t nn = size_t(d->n) * d->n;
    std::mt19937 rng(d->n);
    std::uniform_real_distribution<float> u(-1, 1);
    d->a.resize(nn);
    d->b.resize(nn);
    for (auto& x : d->a) x = u(rng);
    for (auto& x : d->b) x = u(rng);
    d->ta = make_tensor(ctx, {d->n, d->n}, d->a);
    d->tb = make_tensor(ctx, {d->n, d->n}, d->b);
    d->tc = make_tensor(ctx, {d->n, d->n});
    MatmulDims dims{d->n, d->n, d->n, false};
    for (MatmulVersion v : kMatmulVersions) {
      if (!supports(ctx, v, dims) || (v == MatmulVersion::Naive && dims.flops() > kNaiveMaxFlops)) continue;
      Case c = matmul_case(ctx, d, v, choose_matmul_tuning(ctx, dims));
      c.is_default = v == choose_matmul(ctx, dims);
      if (v == kMatmulVersions[0]) {  // CPU figures once per size
        if (dims.flops() <= kPlainCpuMaxFlops)
          c.cpu = [d] {
            std::vector<float> cc(size_t(d->n) * d->n);
            cpu::matmul(d->a, d->b, cc, d->n, d->n, d->n, false);
          };
#ifdef WGC_HAVE_CBLAS
        c.cpu_blas = [d] {
          std::vector<float> cc(size_t(d->n) * d->n);
          int n = int(d->n);
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.f, d->a.data(), n, d->b.data(), n, 0.f,
                      cc.data(), n);
        };
#endif
      }
      out.push_back(std::move(c));
    }
    for (const SweepSet& set : sweep) {
      if (set.only_n && set.only_n != d->n) continue;
      Case c = matmul_case(ctx, d, MatmulVersion::Vec4Db2, set.tuning);
      c.version += " [" + set.name + "]";
      out.push_back(std::move(c));
    }
  }
  return out;
}

Register reg("matmul", cases);

}  // namespace
}  // namespace wgc::bench
