// `wgc bench --ops copy,add,map.exp,map2.fma,sum,max`: every version of the elementwise maps and
// the reductions, against plain CPU loops.
#include "bench/bench.h"
#include "cpu/reduce.h"
#include "ops/map.h"
#include "ops/reduce.h"
#include "util/error.h"

#include <cmath>
#include <memory>
#include <random>

namespace wgc::bench {
namespace {

struct Data {
  std::vector<std::vector<float>> host;
  std::vector<Tensor> in;
  Tensor out;
  std::vector<float> want;  // CPU result (n floats, or 1 for a reduction)
};

// The CPU loop of each op (also its reference). Returns the output.
std::vector<float> cpu_op(const std::string& op, const std::vector<std::vector<float>>& x) {
  const auto& a = x[0];
  std::vector<float> o;
  if (op == "sum") return {cpu::sum(a)};
  if (op == "max") return {cpu::max(a)};
  if (op == "min") return {cpu::min(a)};
  if (op == "mean") return {cpu::mean(a)};
  o.resize(a.size());
  if (op == "copy")
    for (size_t i = 0; i < a.size(); ++i) o[i] = a[i];
  else if (op == "add")
    for (size_t i = 0; i < a.size(); ++i) o[i] = a[i] + x[1][i];
  else if (op == "map.exp")
    for (size_t i = 0; i < a.size(); ++i) o[i] = std::exp(a[i]) * 0.5f;
  else if (op == "map2.fma")
    for (size_t i = 0; i < a.size(); ++i) o[i] = a[i] * x[1][i] + 1.0f;
  else
    throw Error("bench: no CPU loop for " + op);
  return o;
}

std::vector<Case> make_cases(const Context& ctx, const Options& o, const std::string& op,
                             const std::vector<OpVersion>& versions) {
  std::vector<Case> out;
  for (double s : sizes_or(o, ctx, {1000, 65539}, {1 << 16, 1 << 20}, {1 << 20, 1 << 24, 1 << 28})) {
    auto n = static_cast<int64_t>(s);
    std::shared_ptr<Data> d;
    for (const auto& v : versions) {
      if (v.op != op || v.version == "buffer") continue;  // a buffer copy gets no timestamps
      if (!d) {
        d = std::make_shared<Data>();
        std::mt19937 rng{static_cast<uint32_t>(n)};
        std::uniform_real_distribution<float> u(-1, 1);
        for (int i = 0; i < v.inputs; ++i) {
          d->host.emplace_back(size_t(n));
          for (auto& x : d->host.back()) x = u(rng);
          d->in.push_back(make_tensor(ctx, {n}, d->host.back()));
        }
        d->out = make_tensor(ctx, {v.scalar_output ? 1 : n});
        d->want = cpu_op(op, d->host);
      }
      Case c;
      c.op = op;
      c.version = v.version;
      c.is_default = v.is_default;
      c.size = std::to_string(n);
      c.elements = double(n);
      c.bytes = v.bytes_per_element * double(n);
      auto rec = v.record;
      c.record = [d, rec](Batch& b) { rec(b, d->in, d->out); };
      bool scalar = v.scalar_output;
      c.check = [d, rec, scalar, &ctx] {
        fill_u32(ctx, d->out, kPoisonNaN);
        Batch b(ctx);
        rec(b, d->in, d->out);
        b.run();
        auto got = download<float>(ctx, d->out);
        if (scalar) {
          // Reductions: error relative to sum |x| (what bounds a float sum's rounding).
          double scale = std::max(cpu::sum_abs_f64(d->host[0]) / double(d->host[0].size()), 1e-30);
          if (d->want[0] != 0 && std::fabs(d->want[0]) > scale) scale = std::fabs(d->want[0]);
          return std::isfinite(got[0]) ? std::fabs(double(got[0]) - d->want[0]) / scale : INFINITY;
        }
        return cpu::max_rel_error(std::span<const float>(got), std::span<const float>(d->want));
      };
      c.tolerance = scalar ? 1e-4 : 1e-6;
      if (out.empty() || out.back().size != c.size) c.cpu = [d, op] { cpu_op(op, d->host); };
      out.push_back(std::move(c));
    }
  }
  return out;
}

Register copy_reg("copy", [](const Context& c, const Options& o) { return make_cases(c, o, "copy", map_versions(c)); });
Register add_reg("add", [](const Context& c, const Options& o) { return make_cases(c, o, "add", map_versions(c)); });
Register exp_reg("map.exp",
                 [](const Context& c, const Options& o) { return make_cases(c, o, "map.exp", map_versions(c)); });
Register fma_reg("map2.fma",
                 [](const Context& c, const Options& o) { return make_cases(c, o, "map2.fma", map_versions(c)); });
Register sum_reg("sum", [](const Context& c, const Options& o) {
  return make_cases(c, o, "sum", reduce_versions(c, ReduceOp::Sum));
});
Register max_reg("max", [](const Context& c, const Options& o) {
  return make_cases(c, o, "max", reduce_versions(c, ReduceOp::Max));
});

}  // namespace
}  // namespace wgc::bench
