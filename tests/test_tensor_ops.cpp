// Every version of the graph's tensor ops (ops/tensor_ops.h) against the CPU references at awkward
// shapes, outputs poisoned first.
#include "cpu/tensor_ops.h"
#include "ops/tensor_ops.h"
#include "test_util.h"

using namespace wgc;
using wgc::test::ctx;

namespace {

Tensor upload(const std::vector<float>& v) { return make_tensor(ctx(), {int64_t(v.size())}, v); }

Tensor poisoned(size_t n) {
  Tensor t = make_tensor(ctx(), {int64_t(n)});
  fill_u32(ctx(), t, kPoisonNaN);
  return t;
}

std::vector<float> down(const Tensor& t, size_t n) {
  auto v = download<float>(ctx(), t);
  v.resize(n);
  return v;
}

// A transpose of shape by perm as a copy walk over the output.
CopyDims transpose_dims(const std::vector<int64_t>& shape, const std::vector<int64_t>& perm) {
  auto in_strides = contiguous_strides(shape);
  std::vector<int64_t> out_shape, src;
  for (auto p : perm) {
    out_shape.push_back(shape[size_t(p)]);
    src.push_back(in_strides[size_t(p)]);
  }
  return copy_dims(out_shape, src, 0, contiguous_strides(out_shape), 0);
}

}  // namespace

TEST(TensorOpsCpu, TransposeMovesElements) {
  // [2,3] -> [3,2]
  std::vector<float> x = {0, 1, 2, 3, 4, 5}, y(6);
  cpu::strided_copy(x, y, transpose_dims({2, 3}, {1, 0}));
  EXPECT_EQ(y, (std::vector<float>{0, 3, 1, 4, 2, 5}));
}

TEST(TensorOpsCpu, BroadcastShapesAndErrors) {
  EXPECT_EQ(broadcast_shape(std::vector<int64_t>{2, 1, 4}, std::vector<int64_t>{3, 1}),
            (std::vector<int64_t>{2, 3, 4}));
  EXPECT_THROW(broadcast(std::vector<int64_t>{2, 3}, std::vector<int64_t>{4}), Error);
  std::vector<float> a = {1, 2, 3, 4, 5, 6}, b = {10, 20, 30}, out(6);
  cpu::binary(BinaryOp::Add, a, b, out, broadcast(std::vector<int64_t>{2, 3}, std::vector<int64_t>{3}));
  EXPECT_EQ(out, (std::vector<float>{11, 22, 33, 14, 25, 36}));
}

class CopyVersions : public ::testing::TestWithParam<CopyVersion> {};

TEST_P(CopyVersions, MatchReference) {
  struct Case {
    std::vector<int64_t> shape, perm;
  };
  const Case cases[] = {{{3, 5, 7}, {2, 0, 1}},
                        {{2, 2, 3, 12}, {0, 2, 1, 3}},  // channel shuffle
                        {{1, 4, 3, 5, 8}, {0, 2, 1, 3, 4}},
                        {{17, 33}, {1, 0}},
                        {{2, 3, 4, 5, 6, 7}, {5, 4, 3, 2, 1, 0}},
                        {{6, 8}, {0, 1}}};
  for (const auto& c : cases) {
    CopyDims d = transpose_dims(c.shape, c.perm);
    if (!supports(ctx(), GetParam(), d)) continue;
    size_t n = size_t(d.count());
    auto x = test::random_floats(n, uint32_t(n));
    std::vector<float> want(n);
    cpu::strided_copy(x, want, d);
    Tensor out = poisoned(n);
    Batch b(ctx());
    strided_copy(b, upload(x), out, d, GetParam());
    b.run();
    EXPECT_EQ(down(out, n), want) << to_string(GetParam()) << " " << d.str();
  }
  // A slice with a negative step into the middle of a bigger buffer (Concat's parts do this).
  CopyDims s = copy_dims(std::vector<int64_t>{3, 4}, std::vector<int64_t>{-8, 1}, 16, std::vector<int64_t>{12, 1}, 4);
  if (supports(ctx(), GetParam(), s)) {
    auto x = test::random_floats(24, 5);
    std::vector<float> want(40, 7.f);
    cpu::strided_copy(x, want, s);
    Tensor out = upload(std::vector<float>(40, 7.f));
    Batch b(ctx());
    strided_copy(b, upload(x), out, s, GetParam());
    b.run();
    EXPECT_EQ(down(out, 40), want) << to_string(GetParam()) << " " << s.str();
  }
}

TEST(TensorOps, CopyRefusesWalksOutsideTheBuffers) {
  CopyDims d = copy_dims(std::vector<int64_t>{4, 4}, std::vector<int64_t>{4, 1}, 0, std::vector<int64_t>{4, 1}, 0);
  Batch b(ctx());
  EXPECT_THROW(strided_copy(b, upload(std::vector<float>(15)), poisoned(16), d), Error);
  EXPECT_THROW(strided_copy(b, upload(std::vector<float>(16)), poisoned(12), d), Error);
  EXPECT_THROW(parse_copy_version("fast"), Error);
}

INSTANTIATE_TEST_SUITE_P(All, CopyVersions, ::testing::ValuesIn(kCopyVersions),
                         [](const auto& p) { return std::string(to_string(p.param)); });

class BinaryVersions : public ::testing::TestWithParam<BinaryVersion> {};

TEST_P(BinaryVersions, MatchReferenceWithBroadcasting) {
  struct Case {
    std::vector<int64_t> a, b;
  };
  const Case cases[] = {
      {{2, 5, 7, 12}, {2, 5, 1, 1}},  // squeeze-excitation scale
      {{3, 1, 8}, {4, 1}},           {{13}, {13}}, {{5, 1000}, {1000}}, {{1}, {3, 4}}, {{2, 3, 4, 5, 6, 7, 2}, {7, 1}}};
  for (const auto& c : cases)
    for (BinaryOp op : {BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Div, BinaryOp::Max}) {
      BinaryDims d = broadcast(c.a, c.b);
      if (!supports(ctx(), GetParam(), d)) continue;
      auto a = test::random_floats(size_t(numel(c.a)), 11);
      auto b = test::random_floats(size_t(numel(c.b)), 12, 0.5f, 2.f);
      size_t n = size_t(d.count());
      std::vector<float> want(n);
      cpu::binary(op, a, b, want, d);
      Tensor out = poisoned(n);
      Batch bt(ctx());
      binary(bt, upload(a), upload(b), out, d, op, GetParam());
      bt.run();
      EXPECT_LT(test::rel_error(down(out, n), want), 1e-6) << to_string(GetParam()) << " " << to_string(op);
    }
}

INSTANTIATE_TEST_SUITE_P(All, BinaryVersions, ::testing::ValuesIn(kBinaryVersions),
                         [](const auto& p) { return std::string(to_string(p.param)); });

TEST(TensorOps, UnaryActivationsMatchReference) {
  auto x = test::random_floats(1001, 3, -8.f, 8.f);
  const UnaryParams ops[] = {{UnaryOp::Relu},
                             {UnaryOp::Clip, 0.f, 6.f},
                             {UnaryOp::Clip, -1.f, INFINITY},
                             {UnaryOp::Sigmoid},
                             {UnaryOp::HardSigmoid, 0.2f, 0.5f},
                             {UnaryOp::HardSwish},
                             {UnaryOp::LeakyRelu, 0.1f},
                             {UnaryOp::Elu, 1.5f},
                             {UnaryOp::Tanh},
                             {UnaryOp::Exp},
                             {UnaryOp::Neg},
                             {UnaryOp::Abs}};
  for (const auto& p : ops)
    for (MapVersion v : kMapVersions) {
      std::vector<float> want(x.size());
      cpu::unary(p, x, want);
      Tensor out = poisoned(x.size());
      Batch b(ctx());
      unary(b, upload(x), out, p, v);
      b.run();
      EXPECT_LT(test::rel_error(down(out, x.size()), want), 2e-6) << to_string(p.op) << " " << to_string(v);
    }
}

class SoftmaxVersions : public ::testing::TestWithParam<SoftmaxVersion> {};

TEST_P(SoftmaxVersions, MatchReference) {
  const AxisDims cases[] = {{3, 1000, 1}, {2, 7, 5}, {1, 1, 1}, {5, 130, 3}, {64, 3, 1}};
  for (const auto& d : cases)
    for (bool log : {false, true}) {
      size_t n = size_t(d.count());
      auto x = test::random_floats(n, uint32_t(n), -5.f, 5.f);
      std::vector<float> want(n);
      cpu::softmax(x, want, d, log);
      Tensor out = poisoned(n);
      Batch b(ctx());
      softmax(b, upload(x), out, d, log, GetParam());
      b.run();
      EXPECT_LT(test::rel_error(down(out, n), want), 1e-5)
          << to_string(GetParam()) << " " << d.outer << "x" << d.len << "x" << d.inner << " log " << log;
    }
}

INSTANTIATE_TEST_SUITE_P(All, SoftmaxVersions, ::testing::ValuesIn(kSoftmaxVersions),
                         [](const auto& p) { return std::string(to_string(p.param)); });

class AxisReduceVersions : public ::testing::TestWithParam<AxisReduceVersion> {};

TEST_P(AxisReduceVersions, MatchReference) {
  const AxisDims cases[] = {{6, 49, 1}, {2, 3136, 1}, {3, 5, 7}, {1, 1, 1}, {4, 129, 2}};
  for (const auto& d : cases)
    for (AxisReduceOp op : {AxisReduceOp::Sum, AxisReduceOp::Mean, AxisReduceOp::Max, AxisReduceOp::Min}) {
      size_t n = size_t(d.count()), m = size_t(d.outer) * d.inner;
      auto x = test::random_floats(n, uint32_t(n + m));
      std::vector<float> want(m);
      cpu::axis_reduce(op, x, want, d);
      Tensor out = poisoned(m);
      Batch b(ctx());
      axis_reduce(b, upload(x), out, d, op, GetParam());
      b.run();
      EXPECT_LT(test::rel_error(down(out, m), want), 1e-5)
          << to_string(GetParam()) << " " << to_string(op) << " " << d.outer << "x" << d.len << "x" << d.inner;
    }
}

INSTANTIATE_TEST_SUITE_P(All, AxisReduceVersions, ::testing::ValuesIn(kAxisReduceVersions),
                         [](const auto& p) { return std::string(to_string(p.param)); });

TEST(TensorOps, BatchedMatmulBroadcastsBatchDims) {
  // A [2,3,5,7] x B [3,7,9] -> C [2,3,5,9]: B broadcast over the first batch dim.
  BatchedMatmulDims d;
  d.m = 5, d.n = 9, d.k = 7, d.rank = 2;
  d.batch = {2, 3};
  d.a_strides = {3 * 35, 35};
  d.b_strides = {0, 63};
  auto a = test::random_floats(2 * 3 * 35, 1), b = test::random_floats(3 * 63, 2);
  size_t n = 2 * 3 * 45;
  std::vector<float> want(n);
  cpu::batched_matmul(a, b, want, d);
  for (BatchedMatmulVersion v : kBatchedMatmulVersions) {
    Tensor out = poisoned(n);
    Batch bt(ctx());
    batched_matmul(bt, upload(a), upload(b), out, d, v);
    bt.run();
    EXPECT_LT(test::rel_error(down(out, n), want), 1e-5) << to_string(v);
  }
}
