#include "ops/reduce.h"

#include "cpu/reduce.h"
#include "gpu/kernel.h"
#include "util/error.h"

#include <algorithm>
#include <bit>
#include <limits>

namespace wgc {

namespace {

constexpr uint32_t kUnroll = 4;  // vec4 loads per invocation per step (the kernels' U)

// Partials of the first pass of the grid-stride versions: enough workgroups to fill the device,
// few enough for the second pass (one workgroup) to be short. H200: 132 SMs x 8 resident
// workgroups of 256; SwiftShader: 2 cores.
uint32_t default_max_groups(const Context& ctx) { return ctx.adapter().is_cpu() ? 16 : 1024; }

uint32_t op_code(ReduceOp op) {
  switch (op) {
    case ReduceOp::Max: return 1;
    case ReduceOp::Min: return 2;
    case ReduceOp::Sum:
    case ReduceOp::Mean: return 0;
  }
  return 0;
}

uint32_t identity_bits(ReduceOp op) {
  float v = 0.f;
  if (op == ReduceOp::Max) v = -std::numeric_limits<float>::infinity();
  if (op == ReduceOp::Min) v = std::numeric_limits<float>::infinity();
  return std::bit_cast<uint32_t>(v);
}

const char* kernel_file(ReduceVersion v) {
  switch (v) {
    case ReduceVersion::Naive: return "reduce/naive.wgsl";
    case ReduceVersion::Vec4: return "reduce/vec4.wgsl";
    case ReduceVersion::Subgroup: return "reduce/subgroup.wgsl";
    case ReduceVersion::Auto: break;
  }
  throw Error("wgc: reduce: no kernel for version " + std::string(to_string(v)));
}

Arg vec4_arg(const Tensor& t) { return Arg(t, 0, std::max<uint64_t>((t.bytes() + 15) / 16 * 16, 16)); }

void check_input(const Tensor& x, const Tensor& out, const ReduceDims& d, ReduceOp op) {
  std::string name(to_string(op));
  if (!x) throw Error("wgc: " + name + ": the input is an empty tensor");
  if (x.dtype() != DType::F32)
    throw Error("wgc: " + name + ": the input is " + std::string(to_string(x.dtype())) + ", f32 is needed");
  if (static_cast<uint64_t>(x.numel()) < d.n)
    throw Error("wgc: " + name + ": the input has " + std::to_string(x.numel()) + " elements, fewer than the " +
                std::to_string(d.n) + " to reduce");
  if (!out || out.dtype() != DType::F32 || out.numel() < 1)
    throw Error("wgc: " + name + ": the output must be an f32 tensor of at least 1 element");
  if (d.n == 0 && op != ReduceOp::Sum) throw Error("wgc: " + name + " of an empty tensor (length 0) has no value");
  if (d.n > 0xffffffffull)
    throw LimitError("wgc: " + name + ": " + std::to_string(d.n) + " elements exceed the kernels' 32-bit index");
}

}  // namespace

std::string_view to_string(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return "sum";
    case ReduceOp::Max: return "max";
    case ReduceOp::Min: return "min";
    case ReduceOp::Mean: return "mean";
  }
  return "?";
}

std::string_view to_string(ReduceVersion v) {
  switch (v) {
    case ReduceVersion::Auto: return "auto";
    case ReduceVersion::Naive: return "naive";
    case ReduceVersion::Vec4: return "vec4";
    case ReduceVersion::Subgroup: return "subgroup";
  }
  return "?";
}

ReduceVersion parse_reduce_version(std::string_view name) {
  for (ReduceVersion v : {ReduceVersion::Auto, ReduceVersion::Naive, ReduceVersion::Vec4, ReduceVersion::Subgroup})
    if (to_string(v) == name) return v;
  throw Error("wgc: unknown reduce version '" + std::string(name) + "' (auto, naive, vec4, subgroup)");
}

bool supports(const Context& ctx, ReduceVersion v, const ReduceDims&) {
  return v != ReduceVersion::Subgroup || ctx.features().subgroups;
}

ReduceVersion choose_reduce(const Context& ctx, const ReduceDims& d) {
  return supports(ctx, ReduceVersion::Subgroup, d) ? ReduceVersion::Subgroup : ReduceVersion::Vec4;
}

void reduce(Batch& batch, const Tensor& x, const Tensor& out, const ReduceDims& d, ReduceOp op, ReduceConfig cfg,
            ReduceVersion v) {
  const Context& ctx = batch.context();
  check_input(x, out, d, op);
  if (v == ReduceVersion::Auto) v = choose_reduce(ctx, d);
  if (!supports(ctx, v, d))
    throw Error("wgc: " + std::string(to_string(op)) + ": the " + std::string(to_string(v)) +
                " version needs the Subgroups feature, which this adapter (" + ctx.adapter().device + ") lacks");
  uint32_t lim =
      std::min(ctx.limits().max_compute_invocations_per_workgroup, ctx.limits().max_compute_workgroup_size_x);
  if (cfg.workgroup == 0 || !std::has_single_bit(cfg.workgroup) || cfg.workgroup > lim)
    throw LimitError("wgc: " + std::string(to_string(op)) + ": a workgroup of " + std::to_string(cfg.workgroup) +
                     " invocations is not a power of two within the device's limit of " + std::to_string(lim));
  const uint64_t wg = cfg.workgroup;
  Kernel k = compile(ctx, embedded_kernel(kernel_file(v), {{"WG", wg}, {"OP", op_code(op)}}));
  const uint64_t n = d.n;
  const uint32_t ident = identity_bits(op);
  const float scale = op == ReduceOp::Mean ? static_cast<float>(1.0 / static_cast<double>(n)) : 1.f;
  auto pass = [&](const Tensor& in, uint64_t m, const Tensor& dst, bool last, Groups g) {
    Arg src = v == ReduceVersion::Naive ? Arg(in) : vec4_arg(in);
    batch.dispatch(k, {src, Arg(dst)}, Params(static_cast<uint32_t>(m), ident, last ? scale : 1.f), g);
  };

  if (v == ReduceVersion::Naive) {
    Tensor src = x;
    uint64_t m = n;
    for (;;) {
      uint64_t groups = std::max<uint64_t>(ceil_div(m, wg), 1);
      if (groups == 1) {
        pass(src, m, out, true, {1, 1, 1});
        return;
      }
      Tensor partial = make_tensor(ctx, {static_cast<int64_t>(groups)});
      pass(src, m, partial, false, groups_1d(ctx, groups));
      src = partial;
      m = groups;
    }
  }

  uint64_t cap = cfg.max_groups ? cfg.max_groups : default_max_groups(ctx);
  cap = std::min<uint64_t>(cap, ctx.limits().max_compute_workgroups_per_dimension);
  uint64_t groups = std::clamp<uint64_t>(ceil_div(ceil_div(n, 4), wg * kUnroll), 1, cap);
  if (groups == 1) {
    pass(x, n, out, true, {1, 1, 1});
    return;
  }
  Tensor partial = make_tensor(ctx, {static_cast<int64_t>(groups)});
  pass(x, n, partial, false, {static_cast<uint32_t>(groups), 1, 1});
  pass(partial, groups, out, true, {1, 1, 1});
}

Tensor reduce(const Context& ctx, const Tensor& x, ReduceOp op, ReduceVersion v) {
  Tensor out = make_tensor(ctx, {1});
  Batch b(ctx);
  reduce(b, x, out, {static_cast<uint64_t>(x.numel())}, op, {}, v);
  b.run();
  return out;
}

float reduce_value(const Context& ctx, const Tensor& x, ReduceOp op, ReduceVersion v) {
  return download<float>(ctx, reduce(ctx, x, op, v))[0];
}

float sum(const Context& ctx, const Tensor& x, ReduceVersion v) { return reduce_value(ctx, x, ReduceOp::Sum, v); }
float max(const Context& ctx, const Tensor& x, ReduceVersion v) { return reduce_value(ctx, x, ReduceOp::Max, v); }
float min(const Context& ctx, const Tensor& x, ReduceVersion v) { return reduce_value(ctx, x, ReduceOp::Min, v); }
float mean(const Context& ctx, const Tensor& x, ReduceVersion v) { return reduce_value(ctx, x, ReduceOp::Mean, v); }

namespace {

float host_reduce(const Context& ctx, std::span<const float> x, ReduceOp op, const thresholds::Threshold& t,
                  const Policy& policy) {
  if (x.empty() || run_on_cpu(ctx, t, policy, x.size())) {
    switch (op) {
      case ReduceOp::Sum: return cpu::sum(x);
      case ReduceOp::Max: return cpu::max(x);
      case ReduceOp::Min: return cpu::min(x);
      case ReduceOp::Mean: return cpu::mean(x);
    }
  }
  Tensor dx = make_tensor(ctx, {static_cast<int64_t>(x.size())}, x);
  return reduce_value(ctx, dx, op);
}

}  // namespace

float sum(const Context& ctx, std::span<const float> x, Policy policy) {
  return host_reduce(ctx, x, ReduceOp::Sum, thresholds::kSum, policy);
}
float max(const Context& ctx, std::span<const float> x, Policy policy) {
  return host_reduce(ctx, x, ReduceOp::Max, thresholds::kMax, policy);
}
float min(const Context& ctx, std::span<const float> x, Policy policy) {
  return host_reduce(ctx, x, ReduceOp::Min, thresholds::kMin, policy);
}
float mean(const Context& ctx, std::span<const float> x, Policy policy) {
  return host_reduce(ctx, x, ReduceOp::Mean, thresholds::kMean, policy);
}

std::vector<OpVersion> reduce_versions(const Context& ctx, ReduceOp op) {
  std::vector<OpVersion> out;
  ReduceVersion best = choose_reduce(ctx, {0});
  for (ReduceVersion v : kReduceVersions) {
    if (!supports(ctx, v, {0})) continue;
    out.push_back({std::string(to_string(op)), std::string(to_string(v)), 1, true, 4, v == best,
                   [op, v](Batch& b, std::span<const Tensor> in, const Tensor& o) {
                     reduce(b, in[0], o, {static_cast<uint64_t>(in[0].numel())}, op, {}, v);
                   }});
  }
  return out;
}

}  // namespace wgc
