// LLM weights (every GGUF type repacked for the GPU), embedding lookup, matvec and matmul.
#include "test_llm_util.h"

using namespace wgc;
using namespace wgc::llm;
using wgc::test::ctx;
using wgc::test::ops;

namespace {

struct Shape {
  int64_t rows, cols;
};

// Model-like and awkward shapes per type (quantized: cols a multiple of the block).
std::vector<Shape> shapes(WeightType t) {
  switch (block_elems(t)) {
    case 1: return {{37, 200}, {19, 13}, {256, 512}, {3, 1}};
    case 32: return {{37, 96}, {130, 512}, {1, 32}, {5, 4160}};  // 4160: several x tiles
    default: return {{37, 256}, {65, 768}, {1, 512}};
  }
}

}  // namespace

TEST(LlmWeights, SizesAndErrors) {
  EXPECT_EQ(ggml_bytes(WeightType::Q8_0, 2, 64), 2u * 2 * 34);
  EXPECT_EQ(ggml_bytes(WeightType::Q6_K, 3, 512), 3u * 2 * 210);
  EXPECT_THROW(ggml_bytes(WeightType::Q4_K, 1, 100), Error);
  std::vector<std::byte> few(10);
  EXPECT_THROW(upload_weight(ctx(), WeightType::F32, few, 2, 2), Error);
  EXPECT_EQ(parse_weight_type("Q4_K"), WeightType::Q4_K);
  EXPECT_THROW(parse_weight_type("q5_1"), Error);
}

TEST(LlmWeights, HalfConversionsRoundTrip) {
  for (float f : {0.f, 1.f, -2.5f, 65504.f, 6.1035156e-05f, 5.9604645e-08f, 0.1f, -3.14159f}) {
    EXPECT_EQ(ref::half_to_float(ref::float_to_half(f)), float(double(ref::half_to_float(ref::float_to_half(f)))));
    EXPECT_NEAR(ref::half_to_float(ref::float_to_half(f)), f, std::fabs(f) * 1e-3 + 1e-7) << f;
    EXPECT_NEAR(ref::bf16_to_float(ref::float_to_bf16(f)), f, std::fabs(f) * 8e-3) << f;
  }
  EXPECT_EQ(ref::float_to_half(1.f), 0x3c00);
  EXPECT_EQ(ref::float_to_bf16(1.f), 0x3f80);
}

// Embedding of every row reproduces the reference dequantization: checks the GPU layouts and
// each type's element decoding.
TEST(LlmEmbedding, EveryTypeEveryRowMatchesDequantize) {
  for (auto t : kAllWeightTypes)
    for (auto s : shapes(t)) {
      auto bytes = ref::random_weight(t, s.rows, s.cols, 7);
      auto w = upload_weight(ctx(), t, bytes, s.rows, s.cols);
      auto deq = ref::dequantize(t, bytes, s.rows, s.cols);
      std::vector<uint32_t> ids;
      for (uint32_t i = 0; i < s.rows; ++i) ids.push_back(uint32_t(s.rows - 1 - i));
      ids.push_back(0);
      auto idt = make_tensor(ctx(), {int64_t(ids.size())}, DType::U32, std::as_bytes(std::span(ids)));
      auto out = test::poisoned(int64_t(ids.size()) * s.cols);
      Batch b(ctx());
      ops().embedding(b, w, idt, out, int(ids.size()));
      b.run();
      auto got = download<float>(ctx(), out);
      got.resize(ids.size() * size_t(s.cols));
      EXPECT_LE(test::rel_error(got, ref::embedding(deq, s.cols, ids)), 1e-6)
          << to_string(t) << " " << s.rows << "x" << s.cols;
    }
}

TEST(LlmLinear, EveryTypeEveryVersionMatchesReference) {
  for (auto t : kAllWeightTypes)
    for (auto s : shapes(t)) {
      auto bytes = ref::random_weight(t, s.rows, s.cols, 11);
      auto w = upload_weight(ctx(), t, bytes, s.rows, s.cols);
      auto deq = ref::dequantize(t, bytes, s.rows, s.cols);
      for (int n : {1, 3, 70}) {
        auto xv = test::random_floats(size_t(n * s.cols), uint32_t(n));
        auto x = make_tensor(ctx(), {int64_t(xv.size())}, xv);
        auto want = test::to_float(ref::linear(deq, s.cols, xv, n, 0, s.rows));
        for (auto v : test::linear_versions()) {
          if (n == 70 && v == Version::Naive && s.rows * s.cols > 20000) continue;  // slow on CPU
          auto y = test::poisoned(n * s.rows);
          Batch b(ctx());
          LinearOptions o;
          o.version = v;
          ops().linear(b, w, x, y, n, o);
          b.run();
          EXPECT_LE(test::rel_error(download<float>(ctx(), y), want), 1e-5)
              << to_string(t) << " " << s.rows << "x" << s.cols << " n=" << n << " " << test::name(v);
        }
      }
    }
}

// The matvec's tuning knobs (rows per invocation group, group size, unroll, workgroup size) only
// change the schedule: every setting gives the reference, for every type, at row counts that
// leave partial groups and workgroups, with bias and accumulation.
TEST(LlmLinear, MatvecTuningsMatchReference) {
  struct Tune {
    uint32_t wg, tpr, unroll, rows;
  };
  const Tune tunes[] = {{256, 32, 2, 2}, {128, 16, 1, 3}, {64, 8, 2, 4}, {256, 64, 1, 4}};
  for (auto t : kAllWeightTypes) {
    const int64_t rows = 45, cols = block_elems(t) == 256 ? 512 : block_elems(t) == 32 ? 4160 : 203;
    auto bytes = ref::random_weight(t, rows, cols, 21);
    auto w = upload_weight(ctx(), t, bytes, rows, cols);
    auto deq = ref::dequantize(t, bytes, rows, cols);
    auto xv = test::random_floats(size_t(cols), 22);
    auto x = make_tensor(ctx(), {cols}, xv);
    auto bias_v = test::random_floats(size_t(rows), 23);
    auto bias = make_tensor(ctx(), {rows}, bias_v);
    auto r = ref::linear(deq, cols, xv, 1, 0, rows);
    std::vector<float> want(static_cast<size_t>(rows));
    for (int64_t i = 0; i < rows; ++i) want[size_t(i)] = float(r[size_t(i)] + bias_v[size_t(i)]);
    for (auto tune : tunes) {
      LlmOps o(ctx());
      o.tuning.matvec_wg = tune.wg;
      o.tuning.matvec_tpr = tune.tpr;
      o.tuning.matvec_unroll = tune.unroll;
      o.tuning.matvec_rows = tune.rows;
      auto y = test::poisoned(rows);
      LinearOptions lo;
      lo.bias = bias;
      lo.version = Version::Shared;
      Batch b(ctx());
      o.linear(b, w, x, y, 1, lo);
      b.run();
      EXPECT_LE(test::rel_error(download<float>(ctx(), y), want), 1e-5)
          << to_string(t) << " wg " << tune.wg << " tpr " << tune.tpr << " unroll " << tune.unroll << " rows "
          << tune.rows;
    }
  }
}

// Row ranges of a concatenated weight into strided outputs, with bias and residual.
TEST(LlmLinear, RowRangesBiasAndAccumulate) {
  for (auto t : {WeightType::F16, WeightType::Q8_0, WeightType::Q4_K}) {
    const int64_t rows = 48, cols = block_elems(t) == 256 ? 256 : 64;
    auto bytes = ref::random_weight(t, rows, cols, 3);
    auto w = upload_weight(ctx(), t, bytes, rows, cols);
    auto deq = ref::dequantize(t, bytes, rows, cols);
    auto bias_v = test::random_floats(size_t(rows), 5);
    auto bias = make_tensor(ctx(), {rows}, bias_v);
    for (int n : {1, 5}) {
      const int64_t row0 = 16, nr = 20, ys = 30, yoff = 7;
      auto xv = test::random_floats(size_t(n * cols), 9);
      auto x = make_tensor(ctx(), {int64_t(xv.size())}, xv);
      auto y0 = test::random_floats(size_t(n * ys), 13);
      auto want = y0;
      auto r = ref::linear(deq, cols, xv, n, row0, nr);
      for (int tt = 0; tt < n; ++tt)
        for (int64_t i = 0; i < nr; ++i)
          want[size_t(tt * ys + yoff + i)] += float(r[size_t(tt * nr + i)] + bias_v[size_t(row0 + i)]);
      for (auto v : test::linear_versions()) {
        auto y = make_tensor(ctx(), {int64_t(y0.size())}, y0);
        LinearOptions o;
        o.row0 = row0;
        o.rows = nr;
        o.y_stride = ys;
        o.y_offset = yoff;
        o.bias = bias;
        o.accumulate = true;
        o.version = v;
        Batch b(ctx());
        ops().linear(b, w, x, y, n, o);
        b.run();
        EXPECT_LE(test::rel_error(download<float>(ctx(), y), want), 1e-5)
            << to_string(t) << " n=" << n << " " << test::name(v);
      }
    }
  }
}

TEST(LlmLinear, BadShapesAreErrors) {
  auto bytes = ref::random_weight(WeightType::F32, 4, 8, 1);
  auto w = upload_weight(ctx(), WeightType::F32, bytes, 4, 8);
  auto x = make_tensor(ctx(), {8}), y = make_tensor(ctx(), {4});
  Batch b(ctx());
  LinearOptions o;
  o.row0 = 2;
  o.rows = 3;
  EXPECT_THROW(ops().linear(b, w, x, y, 1, o), Error);
  EXPECT_THROW(ops().linear(b, w, x, y, 2), Error);
}
