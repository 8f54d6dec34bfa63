#include "ops/tensor_ops.h"

#include "gpu/kernel.h"
#include "util/error.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace wgc {
namespace {

constexpr uint32_t kWorkgroup = 256;  // copy, binary, softmax/axis-reduce naive: invocations per workgroup

template <class V>
V parse_version(std::string_view op, std::string_view name, std::initializer_list<V> all) {
  std::string valid;
  for (V v : all) {
    if (to_string(v) == name) return v;
    valid += (valid.empty() ? "" : ", ") + std::string(to_string(v));
  }
  throw Error("wgc: unknown " + std::string(op) + " version '" + std::string(name) + "' (" + valid + ")");
}

void check_f32(const Tensor& t, std::string_view what, std::string_view op) {
  if (!t) throw Error("wgc: " + std::string(op) + ": " + std::string(what) + " is an empty tensor");
  if (t.dtype() != DType::F32)
    throw Error("wgc: " + std::string(op) + ": " + std::string(what) + " is " + std::string(to_string(t.dtype())) +
                ", f32 is needed");
}

// The lowest and highest element a walk reaches from offset with these strides.
std::pair<int64_t, int64_t> reach(uint32_t rank, const Dims& shape, const Strides& s, int64_t offset) {
  int64_t lo = offset, hi = offset;
  for (uint32_t d = 0; d < rank; ++d) {
    if (shape[d] == 0) return {0, -1};
    int64_t span = s[d] * int64_t(shape[d] - 1);
    (span < 0 ? lo : hi) += span;
  }
  return {lo, hi};
}

// Throws unless every element the walk touches lies inside t (the kernels run without bounds
// checks) and the offsets fit the kernels' i32 arithmetic.
void check_reach(uint32_t rank, const Dims& shape, const Strides& s, int64_t offset, const Tensor& t,
                 std::string_view what, std::string_view op) {
  auto [lo, hi] = reach(rank, shape, s, offset);
  if (hi < lo) return;
  int64_t elems = int64_t(t.bytes() / 4);
  if (lo < 0 || hi >= elems || hi > int64_t(INT32_MAX))
    throw Error("wgc: " + std::string(op) + ": the " + std::string(what) + " walk reaches elements " +
                std::to_string(lo) + ".." + std::to_string(hi) + ", the tensor holds " + std::to_string(elems));
}

void check_count(uint64_t n, std::string_view op) {
  if (n > UINT32_MAX)
    throw LimitError("wgc: " + std::string(op) + ": " + std::to_string(n) +
                     " elements exceed the kernels' 32-bit index");
}

// The walk's parameter block (copy/walk.wgsl): dims right-aligned into 6, leading extents 1.
Params walk_params(uint64_t count, uint32_t rank, const Dims& shape, const Strides& a, int64_t a_off, const Strides& b,
                   int64_t b_off) {
  Params p(uint32_t(count), 0u, int32_t(a_off), int32_t(b_off));
  uint32_t lead = kMaxRank - rank;
  for (uint32_t d = 0; d < kMaxRank; ++d) p.push(d < lead ? 1u : shape[d - lead]);
  for (uint32_t d = 0; d < kMaxRank; ++d) p.push(d < lead ? 0 : int32_t(a[d - lead]));
  for (uint32_t d = 0; d < kMaxRank; ++d) p.push(d < lead ? 0 : int32_t(b[d - lead]));
  return p;
}

Arg vec4_arg(const Tensor& t) { return Arg(t, 0, std::max<uint64_t>((t.bytes() + 15) / 16 * 16, 16)); }

// A WGSL f32 literal that reads back as v.
std::string wgsl_float(float v) {
  if (!std::isfinite(v)) throw Error("wgc: unary: a non-finite constant " + std::to_string(v) + " has no WGSL literal");
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", double(v));
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return "f32(" + s + ")";
}

Kernel kernel(const Context& ctx, const char* file, std::vector<std::pair<std::string, double>> constants) {
  return compile(ctx, embedded_kernel(file, std::move(constants)));
}

}  // namespace

// --- strided copy -----------------------------------------------------------------------------

std::string_view to_string(CopyVersion v) {
  switch (v) {
    case CopyVersion::Auto: return "auto";
    case CopyVersion::Naive: return "naive";
    case CopyVersion::Vec4: return "vec4";
  }
  return "?";
}

CopyVersion parse_copy_version(std::string_view name) {
  return parse_version("strided copy", name, {CopyVersion::Auto, CopyVersion::Naive, CopyVersion::Vec4});
}

bool supports(const Context&, CopyVersion v, const CopyDims& d) {
  if (v != CopyVersion::Vec4) return true;
  if (d.rank == 0) return false;
  uint32_t in = d.rank - 1;
  if (d.shape[in] % 4 || d.src_strides[in] != 1 || d.dst_strides[in] != 1 || d.src_offset % 4 || d.dst_offset % 4)
    return false;
  for (uint32_t i = 0; i < in; ++i)
    if (d.src_strides[i] % 4 || d.dst_strides[i] % 4) return false;
  return true;
}

CopyVersion choose_copy(const Context& ctx, const CopyDims& d) {
  return supports(ctx, CopyVersion::Vec4, d) ? CopyVersion::Vec4 : CopyVersion::Naive;
}

void strided_copy(Batch& batch, const Tensor& src, const Tensor& dst, const CopyDims& d, CopyVersion v) {
  const Context& ctx = batch.context();
  check_f32(src, "the source", "strided copy");
  check_f32(dst, "the destination", "strided copy");
  if (d.rank > kMaxRank) throw Error("wgc: strided copy: rank " + std::to_string(d.rank) + " > 6");
  if (v == CopyVersion::Auto) v = choose_copy(ctx, d);
  if (!supports(ctx, v, d))
    throw Error("wgc: strided copy version " + std::string(to_string(v)) + " cannot run " + d.str() +
                " (vec4 needs a contiguous innermost dim of a multiple of 4 and 4-aligned strides and offsets)");
  check_reach(d.rank, d.shape, d.src_strides, d.src_offset, src, "source", "strided copy");
  check_reach(d.rank, d.shape, d.dst_strides, d.dst_offset, dst, "destination", "strided copy");
  uint64_t n = d.count();
  check_count(n, "strided copy");
  if (n == 0) return;
  if (v == CopyVersion::Naive) {
    Params p = walk_params(n, d.rank, d.shape, d.src_strides, d.src_offset, d.dst_strides, d.dst_offset);
    batch.dispatch(kernel(ctx, "copy/naive.wgsl", {{"WG", kWorkgroup}}), {src, dst}, p,
                   groups_1d(ctx, ceil_div(n, kWorkgroup)));
    return;
  }
  CopyDims q = d;  // in vec4 units
  q.shape[d.rank - 1] /= 4;
  for (uint32_t i = 0; i + 1 < d.rank; ++i) {
    q.src_strides[i] /= 4;
    q.dst_strides[i] /= 4;
  }
  q.src_offset /= 4;
  q.dst_offset /= 4;
  uint64_t n4 = n / 4;
  Params p = walk_params(n4, q.rank, q.shape, q.src_strides, q.src_offset, q.dst_strides, q.dst_offset);
  batch.dispatch(kernel(ctx, "copy/vec4.wgsl", {{"WG", kWorkgroup}}), {vec4_arg(src), vec4_arg(dst)}, p,
                 groups_1d(ctx, ceil_div(n4, kWorkgroup)));
}

// --- binary -------------------------------------------------------------------------------------

std::string_view to_string(BinaryVersion v) {
  switch (v) {
    case BinaryVersion::Auto: return "auto";
    case BinaryVersion::Strided: return "strided";
    case BinaryVersion::Vec4: return "vec4";
  }
  return "?";
}

BinaryVersion parse_binary_version(std::string_view name) {
  return parse_version("binary", name, {BinaryVersion::Auto, BinaryVersion::Strided, BinaryVersion::Vec4});
}

bool supports(const Context&, BinaryVersion v, const BinaryDims& d) {
  if (v != BinaryVersion::Vec4) return true;
  if (d.rank == 0) return false;
  uint32_t in = d.rank - 1;
  return d.shape[in] % 4 == 0 && (d.a_strides[in] == 0 || d.a_strides[in] == 1) &&
         (d.b_strides[in] == 0 || d.b_strides[in] == 1);
}

BinaryVersion choose_binary(const Context& ctx, const BinaryDims& d) {
  return supports(ctx, BinaryVersion::Vec4, d) ? BinaryVersion::Vec4 : BinaryVersion::Strided;
}

void binary(Batch& batch, const Tensor& a, const Tensor& b, const Tensor& out, const BinaryDims& d, BinaryOp op,
            BinaryVersion v) {
  const Context& ctx = batch.context();
  std::string name = "binary " + std::string(to_string(op));
  check_f32(a, "a", name);
  check_f32(b, "b", name);
  check_f32(out, "the output", name);
  if (v == BinaryVersion::Auto) v = choose_binary(ctx, d);
  if (!supports(ctx, v, d))
    throw Error("wgc: " + name + " version " + std::string(to_string(v)) +
                " needs an innermost extent of a multiple of 4 with operand strides 0 or 1 there");
  check_reach(d.rank, d.shape, d.a_strides, 0, a, "a", name);
  check_reach(d.rank, d.shape, d.b_strides, 0, b, "b", name);
  uint64_t n = d.count();
  check_count(n, name);
  if (out.bytes() / 4 < n)
    throw Error("wgc: " + name + ": the output holds " + std::to_string(out.bytes() / 4) + " floats, needs " +
                std::to_string(n));
  if (n == 0) return;
  std::vector<std::pair<std::string, double>> consts = {{"WG", kWorkgroup}, {"OP", double(int(op))}};
  if (v == BinaryVersion::Strided) {
    batch.dispatch(kernel(ctx, "binary/strided.wgsl", consts), {a, b, out},
                   walk_params(n, d.rank, d.shape, d.a_strides, 0, d.b_strides, 0),
                   groups_1d(ctx, ceil_div(n, kWorkgroup)));
    return;
  }
  Dims shape = d.shape;
  shape[d.rank - 1] /= 4;
  batch.dispatch(kernel(ctx, "binary/vec4.wgsl", consts), {a, b, vec4_arg(out)},
                 walk_params(n / 4, d.rank, shape, d.a_strides, 0, d.b_strides, 0),
                 groups_1d(ctx, ceil_div(n / 4, kWorkgroup)));
}

// --- unary --------------------------------------------------------------------------------------

std::string unary_expression(const UnaryParams& p) {
  switch (p.op) {
    case UnaryOp::Relu: return "max(x, 0.0)";
    case UnaryOp::Clip: {
      // ONNX Clip without a bound passes that side through (infinite bounds have no literal).
      std::string e = "x";
      if (std::isfinite(p.alpha)) e = "max(" + e + ", " + wgsl_float(p.alpha) + ")";
      if (std::isfinite(p.beta)) e = "min(" + e + ", " + wgsl_float(p.beta) + ")";
      return e;
    }
    case UnaryOp::Sigmoid: return "1.0 / (1.0 + exp(-x))";
    case UnaryOp::HardSigmoid: return "clamp(" + wgsl_float(p.alpha) + " * x + " + wgsl_float(p.beta) + ", 0.0, 1.0)";
    case UnaryOp::HardSwish: return "x * clamp(x / 6.0 + 0.5, 0.0, 1.0)";
    case UnaryOp::LeakyRelu: return "select(" + wgsl_float(p.alpha) + " * x, x, x >= 0.0)";
    case UnaryOp::Elu: return "select(" + wgsl_float(p.alpha) + " * (exp(x) - 1.0), x, x >= 0.0)";
    // tanh through exp of a clamped argument: some drivers' tanh gives NaN for large |x|.
    case UnaryOp::Tanh: return "1.0 - 2.0 / (exp(2.0 * clamp(x, -20.0, 20.0)) + 1.0)";
    case UnaryOp::Exp: return "exp(x)";
    case UnaryOp::Log: return "log(x)";
    case UnaryOp::Neg: return "-x";
    case UnaryOp::Abs: return "abs(x)";
    case UnaryOp::Sqrt: return "sqrt(x)";
  }
  throw Error("wgc: unary: unknown op");
}

void unary(Batch& batch, const Tensor& x, const Tensor& y, const UnaryParams& p, MapVersion v) {
  map(batch, x, y, {static_cast<uint64_t>(x.numel())}, unary_expression(p), {}, v);
}

// --- softmax ------------------------------------------------------------------------------------

std::string_view to_string(SoftmaxVersion v) {
  switch (v) {
    case SoftmaxVersion::Auto: return "auto";
    case SoftmaxVersion::Naive: return "naive";
    case SoftmaxVersion::Workgroup: return "workgroup";
  }
  return "?";
}

SoftmaxVersion parse_softmax_version(std::string_view name) {
  return parse_version("softmax", name, {SoftmaxVersion::Auto, SoftmaxVersion::Naive, SoftmaxVersion::Workgroup});
}

bool supports(const Context&, SoftmaxVersion, const AxisDims&) { return true; }

namespace {
// One workgroup per row pays once rows are long and few enough that one invocation per row
// would leave the device idle (a classifier's [N, 1000]); an estimate, not yet measured.
bool rows_are_long(const AxisDims& d) { return d.len >= 64 && uint64_t(d.outer) * d.inner < 16384; }

void check_axis(const Tensor& x, const Tensor& y, const AxisDims& d, uint64_t y_elems, std::string_view op) {
  check_f32(x, "the input", op);
  check_f32(y, "the output", op);
  if (d.len == 0) throw Error("wgc: " + std::string(op) + ": the axis is empty");
  check_count(d.count(), op);
  if (x.bytes() / 4 < d.count() || y.bytes() / 4 < y_elems)
    throw Error("wgc: " + std::string(op) + ": tensors smaller than [" + std::to_string(d.outer) + "][" +
                std::to_string(d.len) + "][" + std::to_string(d.inner) + "]");
}
}  // namespace

SoftmaxVersion choose_softmax(const Context&, const AxisDims& d) {
  return rows_are_long(d) ? SoftmaxVersion::Workgroup : SoftmaxVersion::Naive;
}

void softmax(Batch& batch, const Tensor& x, const Tensor& y, const AxisDims& d, bool log, SoftmaxVersion v) {
  const Context& ctx = batch.context();
  check_axis(x, y, d, d.count(), "softmax");
  if (v == SoftmaxVersion::Auto) v = choose_softmax(ctx, d);
  uint64_t rows = uint64_t(d.outer) * d.inner;
  if (rows == 0) return;
  Params p(d.outer, d.len, d.inner, uint32_t(log));
  if (v == SoftmaxVersion::Naive)
    batch.dispatch(kernel(ctx, "softmax/naive.wgsl", {{"WG", kWorkgroup}}), {x, y}, p,
                   groups_1d(ctx, ceil_div(rows, kWorkgroup)));
  else
    batch.dispatch(kernel(ctx, "softmax/workgroup.wgsl", {}), {x, y}, p, groups_1d(ctx, rows));
}

// --- axis reduce --------------------------------------------------------------------------------

std::string_view to_string(AxisReduceVersion v) {
  switch (v) {
    case AxisReduceVersion::Auto: return "auto";
    case AxisReduceVersion::Naive: return "naive";
    case AxisReduceVersion::Workgroup: return "workgroup";
  }
  return "?";
}

AxisReduceVersion parse_axis_reduce_version(std::string_view name) {
  return parse_version("axis reduce", name,
                       {AxisReduceVersion::Auto, AxisReduceVersion::Naive, AxisReduceVersion::Workgroup});
}

bool supports(const Context&, AxisReduceVersion, const AxisDims&) { return true; }

AxisReduceVersion choose_axis_reduce(const Context&, const AxisDims& d) {
  return rows_are_long(d) ? AxisReduceVersion::Workgroup : AxisReduceVersion::Naive;
}

void axis_reduce(Batch& batch, const Tensor& x, const Tensor& y, const AxisDims& d, AxisReduceOp op,
                 AxisReduceVersion v) {
  const Context& ctx = batch.context();
  uint64_t rows = uint64_t(d.outer) * d.inner;
  check_axis(x, y, d, rows, "reduce " + std::string(to_string(op)));
  if (v == AxisReduceVersion::Auto) v = choose_axis_reduce(ctx, d);
  if (rows == 0) return;
  Params p(d.outer, d.len, d.inner, 0u);
  double o = double(int(op));
  if (v == AxisReduceVersion::Naive)
    batch.dispatch(kernel(ctx, "axis_reduce/naive.wgsl", {{"WG", kWorkgroup}, {"OP", o}}), {x, y}, p,
                   groups_1d(ctx, ceil_div(rows, kWorkgroup)));
  else
    batch.dispatch(kernel(ctx, "axis_reduce/workgroup.wgsl", {{"OP", o}}), {x, y}, p, groups_1d(ctx, rows));
}

void axis_reduce_ints(Batch& batch, const Tensor& x, const Tensor& y, const AxisDims& d, AxisReduceOp op) {
  const Context& ctx = batch.context();
  uint64_t rows = uint64_t(d.outer) * d.inner;
  std::string what = "reduce " + std::string(to_string(op)) + " (integers)";
  for (const Tensor* t : {&x, &y})
    if (!*t || dtype_size(t->dtype()) != 4) throw Error("wgc: " + what + ": tensors of 4-byte elements are needed");
  if (d.len == 0) throw Error("wgc: " + what + ": the axis is empty");
  check_count(d.count(), what);
  if (x.bytes() / 4 < d.count() || y.bytes() / 4 < rows)
    throw Error("wgc: " + what + ": tensors smaller than [" + std::to_string(d.outer) + "][" + std::to_string(d.len) +
                "][" + std::to_string(d.inner) + "]");
  if (rows == 0) return;
  Params p(d.outer, d.len, d.inner, 0u);
  batch.dispatch(kernel(ctx, "axis_reduce/naive.wgsl", {{"WG", kWorkgroup}, {"OP", double(int(op))}, {"INT", 1}}),
                 {x, y}, p, groups_1d(ctx, ceil_div(rows, kWorkgroup)));
}

// --- batched matmul -----------------------------------------------------------------------------

std::string_view to_string(BatchedMatmulVersion v) {
  switch (v) {
    case BatchedMatmulVersion::Auto: return "auto";
    case BatchedMatmulVersion::Naive: return "naive";
  }
  return "?";
}

BatchedMatmulVersion parse_batched_matmul_version(std::string_view name) {
  return parse_version("batched matmul", name, {BatchedMatmulVersion::Auto, BatchedMatmulVersion::Naive});
}

bool supports(const Context& ctx, BatchedMatmulVersion, const BatchedMatmulDims& d) {
  return d.rank <= 4 && d.batches() <= ctx.limits().max_compute_workgroups_per_dimension;
}

BatchedMatmulVersion choose_batched_matmul(const Context&, const BatchedMatmulDims&) {
  return BatchedMatmulVersion::Naive;
}

void batched_matmul(Batch& batch, const Tensor& a, const Tensor& b, const Tensor& c, const BatchedMatmulDims& d,
                    BatchedMatmulVersion v) {
  const Context& ctx = batch.context();
  check_f32(a, "A", "batched matmul");
  check_f32(b, "B", "batched matmul");
  check_f32(c, "C", "batched matmul");
  if (v == BatchedMatmulVersion::Auto) v = choose_batched_matmul(ctx, d);
  if (!supports(ctx, v, d))
    throw Error("wgc: batched matmul: " + std::to_string(d.batches()) + " batches in " + std::to_string(d.rank) +
                " dims exceed the kernel's 4 dims or the device's grid");
  for (uint32_t i = 0; i < d.rank; ++i)
    if (d.a_strides[i] < 0 || d.b_strides[i] < 0) throw Error("wgc: batched matmul: negative batch stride");
  uint64_t nb = d.batches();
  // The last matrix of each operand must lie inside it.
  auto [alo, ahi] = reach(d.rank, d.batch, d.a_strides, 0);
  auto [blo, bhi] = reach(d.rank, d.batch, d.b_strides, 0);
  (void)alo;
  (void)blo;
  if (nb &&
      (uint64_t(ahi) + uint64_t(d.m) * d.k > a.bytes() / 4 || uint64_t(bhi) + uint64_t(d.k) * d.n > b.bytes() / 4 ||
       nb * d.m * d.n > c.bytes() / 4 || uint64_t(ahi) + uint64_t(d.m) * d.k > UINT32_MAX ||
       uint64_t(bhi) + uint64_t(d.k) * d.n > UINT32_MAX || nb * d.m * d.n > UINT32_MAX))
    throw Error("wgc: batched matmul: tensors smaller than " + std::to_string(nb) + " x [" + std::to_string(d.m) + "," +
                std::to_string(d.k) + "] x [" + std::to_string(d.k) + "," + std::to_string(d.n) + "]");
  if (nb == 0 || d.m == 0 || d.n == 0) return;
  Params p(d.m, d.n, d.k, uint32_t(nb));
  uint32_t lead = 4 - d.rank;
  for (uint32_t i = 0; i < 4; ++i) p.push(i < lead ? 1u : d.batch[i - lead]);
  for (uint32_t i = 0; i < 4; ++i) p.push(i < lead ? 0u : uint32_t(d.a_strides[i - lead]));
  for (uint32_t i = 0; i < 4; ++i) p.push(i < lead ? 0u : uint32_t(d.b_strides[i - lead]));
  batch.dispatch(kernel(ctx, "batched_matmul/naive.wgsl", {}), {a, b, c}, p,
                 {ceil_div(d.n, 16), ceil_div(d.m, 16), uint32_t(nb)});
}

}  // namespace wgc
