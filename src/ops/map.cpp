#include "ops/map.h"

#include "cpu/map.h"
#include "gpu/kernel.h"
#include "util/error.h"

#include <algorithm>

namespace wgc {

namespace {

constexpr uint32_t kUnroll = 4;  // vec4 loads per invocation per step in the grid-stride kernels

// Grid-stride grid sizes: enough resident workgroups to keep the memory system busy. The H200 runs
// 132 SMs x 8 workgroups of 256; SwiftShader has 2 cores.
uint32_t default_max_groups(const Context& ctx) { return ctx.adapter().is_cpu() ? 64 : 2048; }

void check_f32(const Tensor& t, std::string_view what, std::string_view op) {
  if (!t) throw Error("wgc: " + std::string(op) + ": " + std::string(what) + " is an empty tensor");
  if (t.dtype() != DType::F32)
    throw Error("wgc: " + std::string(op) + ": " + std::string(what) + " is " + std::string(to_string(t.dtype())) +
                ", f32 is needed");
}

void check_holds(const Tensor& t, uint64_t n, std::string_view what, std::string_view op) {
  if (static_cast<uint64_t>(t.numel()) < n)
    throw Error("wgc: " + std::string(op) + ": " + std::string(what) + " has " + std::to_string(t.numel()) +
                " elements, fewer than the " + std::to_string(n) + " to map");
}

void check_length(uint64_t n, std::string_view op) {
  if (n > 0xffffffffull)
    throw LimitError("wgc: " + std::string(op) + ": " + std::to_string(n) +
                     " elements exceed the kernels' 32-bit index");
}

// A binding of a whole tensor in vec4 units: bytes rounded up to 16 (buffers are allocated in
// 16-byte steps, so this stays inside the buffer).
Arg vec4_arg(const Tensor& t) { return Arg(t, 0, std::max<uint64_t>((t.bytes() + 15) / 16 * 16, 16)); }

const char* template_file(int arity, MapVersion v) {
  switch (v) {
    case MapVersion::Scalar: return arity == 1 ? "map/unary_scalar.wgsl" : "map/binary_scalar.wgsl";
    case MapVersion::Vec4: return arity == 1 ? "map/unary_vec4.wgsl" : "map/binary_vec4.wgsl";
    case MapVersion::GridStride: return arity == 1 ? "map/unary_grid.wgsl" : "map/binary_grid.wgsl";
    case MapVersion::Auto: break;
  }
  throw Error("wgc: map: no kernel for version " + std::string(to_string(v)));
}

Kernel map_kernel(const Context& ctx, int arity, MapVersion v, std::string_view expr, uint32_t wg) {
  check_map_expression(expr);
  const char* file = template_file(arity, v);
  KernelCode code = embedded_kernel(file, {{"WG", wg}});
  constexpr std::string_view kSlot = "return WGC_EXPR;";  // the one place in code, not comments
  size_t at = code.wgsl.find(kSlot);
  if (at == std::string::npos) throw Error(std::string("wgc: ") + file + " has no 'return WGC_EXPR;' slot");
  std::string wrapped;  // built by appends: GCC 12 warns falsely (-Wrestrict) on "(" + s + ")"
  wrapped.append("return (").append(expr).append(");");
  code.wgsl.replace(at, kSlot.size(), wrapped);
  code.label = std::string(file) + " [" + std::string(expr) + "]";
  try {
    return compile(ctx, code);
  } catch (const ShaderError& e) {
    throw ShaderError("wgc: map expression '" + std::string(expr) + "' (in " + (arity == 1 ? "x" : "x, y") +
                      ") is not valid WGSL:\n" + e.what());
  }
}

Groups map_groups(const Context& ctx, MapVersion v, uint64_t n, const MapConfig& cfg) {
  uint64_t wg = cfg.workgroup;
  switch (v) {
    case MapVersion::Scalar: return groups_1d(ctx, ceil_div(n, wg));
    case MapVersion::Vec4: return groups_1d(ctx, ceil_div(ceil_div(n, 4), wg));
    case MapVersion::GridStride: {
      uint64_t want = ceil_div(ceil_div(n, 4), wg * kUnroll);
      uint64_t cap = cfg.max_groups ? cfg.max_groups : default_max_groups(ctx);
      cap = std::min<uint64_t>(cap, ctx.limits().max_compute_workgroups_per_dimension);
      return {static_cast<uint32_t>(std::clamp<uint64_t>(want, 1, cap)), 1, 1};
    }
    case MapVersion::Auto: break;
  }
  throw Error("wgc: map: no grid for version " + std::string(to_string(v)));
}

MapVersion resolve(const Context& ctx, MapVersion v, const MapDims& d) {
  return v == MapVersion::Auto ? choose_map(ctx, d) : v;
}

void check_config(const Context& ctx, const MapConfig& cfg, std::string_view op) {
  uint32_t lim =
      std::min(ctx.limits().max_compute_invocations_per_workgroup, ctx.limits().max_compute_workgroup_size_x);
  if (cfg.workgroup == 0 || cfg.workgroup > lim)
    throw LimitError("wgc: " + std::string(op) + ": a workgroup of " + std::to_string(cfg.workgroup) +
                     " invocations exceeds the device's limit of " + std::to_string(lim));
}

// Checks the tensors of one map: f32, each holding at least d.n elements.
void check_tensors(std::initializer_list<const Tensor*> ins, const Tensor& out, const MapDims& d, std::string_view op) {
  for (const Tensor* t : ins) {
    check_f32(*t, ins.size() == 1 ? "the input" : "an input", op);
    check_holds(*t, d.n, ins.size() == 1 ? "the input" : "an input", op);
  }
  check_f32(out, "the output", op);
  check_holds(out, d.n, "the output", op);
  check_length(d.n, op);
}

// Records one map dispatch over inputs `ins` (1 or 2) into `out`.
void record(Batch& batch, std::initializer_list<const Tensor*> ins, const Tensor& out, const MapDims& d,
            std::string_view expr, MapVersion v, const MapConfig& cfg, std::string_view op) {
  const Context& ctx = batch.context();
  check_tensors(ins, out, d, op);
  check_config(ctx, cfg, op);
  v = resolve(ctx, v, d);
  int arity = static_cast<int>(ins.size());
  Kernel k = map_kernel(ctx, arity, v, expr, cfg.workgroup);
  uint64_t n = d.n;
  if (n == 0) return;
  std::vector<Arg> args;
  for (const Tensor* t : ins) args.push_back(v == MapVersion::Scalar ? Arg(*t) : vec4_arg(*t));
  args.push_back(v == MapVersion::Scalar ? Arg(out) : vec4_arg(out));
  batch.dispatch(k, std::move(args), Params(static_cast<uint32_t>(n)), map_groups(ctx, v, n, cfg));
}

Tensor like(const Context& ctx, const Tensor& x) { return make_tensor(ctx, x.shape(), DType::F32); }

}  // namespace

std::string_view to_string(MapVersion v) {
  switch (v) {
    case MapVersion::Auto: return "auto";
    case MapVersion::Scalar: return "scalar";
    case MapVersion::Vec4: return "vec4";
    case MapVersion::GridStride: return "grid-stride";
  }
  return "?";
}

MapVersion parse_map_version(std::string_view name) {
  for (MapVersion v : {MapVersion::Auto, MapVersion::Scalar, MapVersion::Vec4, MapVersion::GridStride})
    if (to_string(v) == name) return v;
  throw Error("wgc: unknown map version '" + std::string(name) + "' (auto, scalar, vec4, grid-stride)");
}

bool supports(const Context&, MapVersion, const MapDims&) { return true; }

MapVersion choose_map(const Context&, const MapDims&) { return MapVersion::Vec4; }

void check_map_expression(std::string_view expr) {
  if (expr.find_first_not_of(" \t\r\n") == std::string_view::npos)
    throw Error("wgc: map expression is empty (write a WGSL f32 expression in x, or x and y)");
  size_t bad = expr.find_first_of(";{}");
  if (bad != std::string_view::npos)
    throw Error("wgc: map expression '" + std::string(expr) + "' contains '" + std::string(1, expr[bad]) +
                "' at column " + std::to_string(bad + 1) + ": only an expression is allowed (no ';', '{', '}')");
}

void map(Batch& batch, const Tensor& x, const Tensor& out, const MapDims& d, std::string_view expr, MapConfig cfg,
         MapVersion v) {
  record(batch, {&x}, out, d, expr, v, cfg, "map");
}

void map(Batch& batch, const Tensor& x, const Tensor& y, const Tensor& out, const MapDims& d, std::string_view expr,
         MapConfig cfg, MapVersion v) {
  record(batch, {&x, &y}, out, d, expr, v, cfg, "map");
}

void add(Batch& batch, const Tensor& a, const Tensor& b, const Tensor& out, const MapDims& d, MapConfig cfg,
         MapVersion v) {
  const Context& ctx = batch.context();
  if (resolve(ctx, v, d) != MapVersion::Scalar || cfg.workgroup != 256) {
    record(batch, {&a, &b}, out, d, "x + y", v, cfg, "add");
    return;
  }
  // The original one-element-per-invocation kernel.
  check_tensors({&a, &b}, out, d, "add");
  uint64_t n = d.n;
  if (n == 0) return;
  batch.dispatch(compile(ctx, embedded_kernel("map/add.wgsl")), {a, b, out}, Params(static_cast<uint32_t>(n)),
                 groups_1d(ctx, ceil_div(n, 256)));
}

void copy(Batch& batch, const Tensor& x, const Tensor& out, const MapDims& d, MapConfig cfg, MapVersion v) {
  record(batch, {&x}, out, d, "x", v, cfg, "copy");
}

namespace {

MapDims dims_of(const Tensor& x) { return {static_cast<uint64_t>(x.numel())}; }

// The tensor forms take same-length tensors.
void check_same_length(const Tensor& a, const Tensor& b, std::string_view what, std::string_view op) {
  if (a.numel() != b.numel())
    throw Error("wgc: " + std::string(op) + ": " + std::string(what) + " has " + std::to_string(b.numel()) +
                " elements, the input " + std::to_string(a.numel()));
}

}  // namespace

Tensor map(const Context& ctx, const Tensor& x, std::string_view expr, MapVersion v) {
  check_f32(x, "the input", "map");
  Tensor out = like(ctx, x);
  Batch b(ctx);
  map(b, x, out, dims_of(x), expr, {}, v);
  b.run();
  return out;
}

Tensor map(const Context& ctx, const Tensor& x, const Tensor& y, std::string_view expr, MapVersion v) {
  check_f32(x, "the input", "map");
  check_same_length(x, y, "y", "map");
  Tensor out = like(ctx, x);
  Batch b(ctx);
  map(b, x, y, out, dims_of(x), expr, {}, v);
  b.run();
  return out;
}

Tensor add(const Context& ctx, const Tensor& a, const Tensor& b, MapVersion v) {
  check_f32(a, "a", "add");
  check_same_length(a, b, "b", "add");
  Tensor out = like(ctx, a);
  Batch batch(ctx);
  add(batch, a, b, out, dims_of(a), {}, v);
  batch.run();
  return out;
}

Tensor copy(const Context& ctx, const Tensor& x, MapVersion v) {
  check_f32(x, "the input", "copy");
  Tensor out = like(ctx, x);
  Batch b(ctx);
  copy(b, x, out, dims_of(x), {}, v);
  b.run();
  return out;
}

namespace {

Tensor upload(const Context& ctx, std::span<const float> x) {
  return make_tensor(ctx, {static_cast<int64_t>(x.size())}, x);
}

void check_host_lengths(std::span<const float> a, std::span<const float> b, std::string_view op) {
  if (a.size() != b.size())
    throw Error("wgc: " + std::string(op) + ": the inputs' lengths differ (" + std::to_string(a.size()) + " and " +
                std::to_string(b.size()) + ")");
}

}  // namespace

std::vector<float> map(const Context& ctx, std::span<const float> x, std::string_view expr, Policy policy) {
  check_map_expression(expr);
  if (run_on_cpu(ctx, thresholds::kMap, policy, x.size())) {
    if (auto e = cpu::Expr::parse(expr, 1)) {
      std::vector<float> out(x.size());
      cpu::map(x, out, *e);
      return out;
    }
  }
  if (x.empty()) {
    map_kernel(ctx, 1, choose_map(ctx, {0}), expr, 256);  // still reports a bad expression
    return {};
  }
  return download<float>(ctx, map(ctx, upload(ctx, x), expr));
}

std::vector<float> map(const Context& ctx, std::span<const float> x, std::span<const float> y, std::string_view expr,
                       Policy policy) {
  check_map_expression(expr);
  check_host_lengths(x, y, "map");
  if (run_on_cpu(ctx, thresholds::kMap2, policy, x.size())) {
    if (auto e = cpu::Expr::parse(expr, 2)) {
      std::vector<float> out(x.size());
      cpu::map(x, y, out, *e);
      return out;
    }
  }
  if (x.empty()) {
    map_kernel(ctx, 2, choose_map(ctx, {0}), expr, 256);
    return {};
  }
  return download<float>(ctx, map(ctx, upload(ctx, x), upload(ctx, y), expr));
}

std::vector<float> add(const Context& ctx, std::span<const float> a, std::span<const float> b, Policy policy) {
  check_host_lengths(a, b, "add");
  if (run_on_cpu(ctx, thresholds::kAdd, policy, a.size()) || a.empty()) {
    std::vector<float> out(a.size());
    cpu::add(a, b, out);
    return out;
  }
  return download<float>(ctx, add(ctx, upload(ctx, a), upload(ctx, b)));
}

std::vector<OpVersion> map_versions(const Context& ctx) {
  std::vector<OpVersion> out;
  MapVersion best = choose_map(ctx, {0});
  for (MapVersion v : kMapVersions) {
    std::string name(to_string(v));
    bool def = v == best;
    out.push_back({"copy", name, 1, false, 8, def, [v](Batch& b, std::span<const Tensor> in, const Tensor& o) {
                     copy(b, in[0], o, dims_of(in[0]), {}, v);
                   }});
    out.push_back({"add", name, 2, false, 12, def, [v](Batch& b, std::span<const Tensor> in, const Tensor& o) {
                     add(b, in[0], in[1], o, dims_of(in[0]), {}, v);
                   }});
    out.push_back({"map.exp", name, 1, false, 8, def, [v](Batch& b, std::span<const Tensor> in, const Tensor& o) {
                     map(b, in[0], o, dims_of(in[0]), "exp(x) * 0.5", {}, v);
                   }});
    out.push_back({"map2.fma", name, 2, false, 12, def, [v](Batch& b, std::span<const Tensor> in, const Tensor& o) {
                     map(b, in[0], in[1], o, dims_of(in[0]), "x * y + 1.0", {}, v);
                   }});
  }
  out.push_back({"copy", "buffer", 1, false, 8, false, [](Batch& b, std::span<const Tensor> in, const Tensor& o) {
                   b.copy(in[0], 0, o, 0, (in[0].bytes() + 3) / 4 * 4);
                 }});
  return out;
}

}  // namespace wgc
