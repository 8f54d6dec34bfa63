// `wgc bench --ops transpose,broadcast-mul,softmax,reduce-mean`: every version of the ONNX graph's
// tensor ops (ops/tensor_ops.h) at shapes from the torchvision networks, against their CPU
// references. Sizes are the batch (default: 1 and 32; quick: 1).
//   transpose      ShuffleNetV2's channel shuffle: [n, 2, 58, 28, 28] -> [n, 58, 2, 28, 28]
//   broadcast-mul  squeeze-excitation scale: [n, 96, 28, 28] x [n, 96, 1, 1]
//   softmax        a classifier's [n, 1000] rows
//   reduce-mean    ShuffleNetV2's global mean: [n, 1024, 7, 7] over the last two axes
#include "bench/bench.h"
#include "cpu/tensor_ops.h"
#include "ops/tensor_ops.h"

#include <memory>
#include <random>

namespace wgc::bench {
namespace {

// "n<batch>": appended rather than "n" + to_string, which GCC 12 misreads as an overlapping copy
// (-Wrestrict false positive).
std::string batch_label(int64_t n) {
  std::string label = "n";
  label += std::to_string(n);
  return label;
}

struct Data {
  std::vector<float> a, b, want;
  Tensor ta, tb, out;
};

std::shared_ptr<Data> data(const Context& ctx, size_t na, size_t nb, size_t nout, uint32_t seed) {
  auto d = std::make_shared<Data>();
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  d->a.resize(na);
  d->b.resize(std::max<size_t>(nb, 1));
  for (auto& x : d->a) x = u(rng);
  for (auto& x : d->b) x = u(rng) + 2.f;
  d->ta = make_tensor(ctx, {int64_t(na)}, d->a);
  d->tb = make_tensor(ctx, {int64_t(d->b.size())}, d->b);
  d->out = make_tensor(ctx, {int64_t(nout)});
  d->want.resize(nout);
  return d;
}

// A case per version: record(batch, data) runs it; the check compares the output with d->want.
template <class V, class Rec>
void add_cases(std::vector<Case>& out, const Context& ctx, const std::string& op, const std::string& size,
               std::shared_ptr<Data> d, double bytes, std::span<const V> versions, V chosen, Rec rec,
               std::function<bool(V)> supported) {
  for (V v : versions) {
    if (!supported(v)) continue;
    Case c;
    c.op = op;
    c.version = std::string(to_string(v)) + (v == chosen ? "*" : "");
    c.size = size;
    c.elements = double(d->want.size());
    c.bytes = bytes;
    c.record = [d, v, rec](Batch& b) { rec(b, *d, v); };
    c.check = [d, v, rec, &ctx] {
      fill_u32(ctx, d->out, kPoisonNaN);
      Batch b(ctx);
      rec(b, *d, v);
      b.run();
      auto got = download<float>(ctx, d->out);
      return cpu::max_rel_error(std::span<const float>(got), std::span<const float>(d->want));
    };
    c.tolerance = 1e-5;
    out.push_back(std::move(c));
  }
}

std::vector<Case> transpose_cases(const Context& ctx, const Options& o) {
  std::vector<Case> out;
  for (double s : sizes_or(o, ctx, {1}, {1, 8}, {1, 32})) {
    int64_t n = int64_t(s);
    std::vector<int64_t> shape = {n, 2, 58, 28, 28}, perm = {0, 2, 1, 3, 4};
    auto st = contiguous_strides(shape);
    std::vector<int64_t> oshape, src;
    for (auto p : perm) oshape.push_back(shape[size_t(p)]), src.push_back(st[size_t(p)]);
    CopyDims dims = copy_dims(oshape, src, 0, contiguous_strides(oshape), 0);
    size_t count = size_t(dims.count());
    auto d = data(ctx, count, 0, count, 1);
    cpu::strided_copy(d->a, d->want, dims);
    add_cases<CopyVersion>(
        out, ctx, "transpose", batch_label(n), d, 8.0 * double(count), kCopyVersions, choose_copy(ctx, dims),
        [dims](Batch& b, Data& x, CopyVersion v) { strided_copy(b, x.ta, x.out, dims, v); },
        [&ctx, dims](CopyVersion v) { return supports(ctx, v, dims); });
  }
  return out;
}

std::vector<Case> broadcast_mul_cases(const Context& ctx, const Options& o) {
  std::vector<Case> out;
  for (double s : sizes_or(o, ctx, {1}, {1, 8}, {1, 32})) {
    int64_t n = int64_t(s);
    BinaryDims dims = broadcast(std::vector<int64_t>{n, 96, 28, 28}, std::vector<int64_t>{n, 96, 1, 1});
    size_t count = size_t(dims.count());
    auto d = data(ctx, count, size_t(n * 96), count, 2);
    cpu::binary(BinaryOp::Mul, d->a, d->b, d->want, dims);
    add_cases<BinaryVersion>(
        out, ctx, "broadcast-mul", batch_label(n), d, 8.0 * double(count), kBinaryVersions, choose_binary(ctx, dims),
        [dims](Batch& b, Data& x, BinaryVersion v) { binary(b, x.ta, x.tb, x.out, dims, BinaryOp::Mul, v); },
        [&ctx, dims](BinaryVersion v) { return supports(ctx, v, dims); });
  }
  return out;
}

std::vector<Case> softmax_cases(const Context& ctx, const Options& o) {
  std::vector<Case> out;
  for (double s : sizes_or(o, ctx, {1}, {1, 64}, {1, 64, 1024})) {
    AxisDims dims{uint32_t(s), 1000, 1};
    size_t count = size_t(dims.count());
    auto d = data(ctx, count, 0, count, 3);
    cpu::softmax(d->a, d->want, dims);
    add_cases<SoftmaxVersion>(
        out, ctx, "softmax", batch_label(int64_t(s)), d, 8.0 * double(count), kSoftmaxVersions,
        choose_softmax(ctx, dims),
        [dims](Batch& b, Data& x, SoftmaxVersion v) { softmax(b, x.ta, x.out, dims, false, v); },
        [](SoftmaxVersion) { return true; });
  }
  return out;
}

std::vector<Case> reduce_mean_cases(const Context& ctx, const Options& o) {
  std::vector<Case> out;
  for (double s : sizes_or(o, ctx, {1}, {1, 8}, {1, 32})) {
    AxisDims dims{uint32_t(s) * 1024, 49, 1};
    size_t count = size_t(dims.count());
    auto d = data(ctx, count, 0, size_t(dims.outer), 4);
    cpu::axis_reduce(AxisReduceOp::Mean, d->a, d->want, dims);
    add_cases<AxisReduceVersion>(
        out, ctx, "reduce-mean", batch_label(int64_t(s)), d, 4.0 * double(count), kAxisReduceVersions,
        choose_axis_reduce(ctx, dims),
        [dims](Batch& b, Data& x, AxisReduceVersion v) { axis_reduce(b, x.ta, x.out, dims, AxisReduceOp::Mean, v); },
        [](AxisReduceVersion) { return true; });
  }
  return out;
}

Register reg_transpose{"transpose", transpose_cases};
Register reg_bmul{"broadcast-mul", broadcast_mul_cases};
Register reg_softmax{"softmax", softmax_cases};
Register reg_reduce_mean{"reduce-mean", reduce_mean_cases};

}  // namespace
}  // namespace wgc::bench
