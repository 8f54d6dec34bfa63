// LLM weights (every GGUF type repacked for the GPU), embedding lookup, next_token, linear's
// versions and the register-tiled prefill matmul (the one-token matvecs: test_llm_matvec.cpp; the
// serving kernels: test_llm_serving_linear.cpp).
#include "llm/formats/model_config.h"
#include "test_llm_util.h"

#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <tuple>

using namespace wgc;
using namespace wgc::llm;
using wgc::test::ctx;
using wgc::test::ops;

namespace {

struct Shape {
  int64_t rows, cols;
};

// Model-like and awkward shapes per type (quantized: cols a multiple of the block).
std::vector<Shape> shapes(TensorType t) {
  switch (block_size(t)) {
    case 1: return {{37, 200}, {19, 13}, {256, 512}, {3, 1}};
    case 32: return {{37, 96}, {130, 512}, {1, 32}, {5, 4160}};  // 4160: several x tiles
    default: return {{37, 256}, {65, 768}, {1, 512}};
  }
}

}  // namespace

TEST(LlmWeights, SizesAndErrors) {
  EXPECT_EQ(ggml_bytes(TensorType::Q8_0, 2, 64), 2u * 2 * 34);
  EXPECT_EQ(ggml_bytes(TensorType::Q6_K, 3, 512), 3u * 2 * 210);
  EXPECT_THROW(ggml_bytes(TensorType::Q4_K, 1, 100), Error);
  std::vector<std::byte> few(10);
  EXPECT_THROW(upload_weight(ctx(), TensorType::F32, few, 2, 2), Error);
  EXPECT_FALSE(is_gpu_weight_type(TensorType::Q5_1));
  EXPECT_TRUE(is_gpu_weight_type(TensorType::Q4_K));
}

// Embedding of every row reproduces the reference dequantization: checks the GPU layouts and
// each type's element decoding.
TEST(LlmEmbedding, EveryTypeEveryRowMatchesDequantize) {
  for (auto t : kGpuTensorTypes)
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

// next_token: the argmax's token (ties to the lower id, a NaN never winning, over one selection
// pass or several), that token's row of every table type in x (a zero row past the table: logits
// may be wider than it) with x's tail untouched, and both position words up by one.
TEST(LlmNextToken, TokenEmbeddingRowAndPositionOfEveryType) {
  for (auto t : kGpuTensorTypes)
    for (auto s : shapes(t)) {
      auto bytes = ref::random_weight(t, s.rows, s.cols, 5);
      auto w = upload_weight(ctx(), t, bytes, s.rows, s.cols);
      auto deq = ref::dequantize(t, bytes, s.rows, s.cols);
      for (auto [n, best] : std::vector<std::pair<int64_t, int64_t>>{
               {s.rows, s.rows - 1}, {s.rows, 0}, {5000, 4321 % s.rows}, {5000, 4999}}) {
        auto v = test::random_floats(size_t(n), uint32_t(n + best), -20.f, 20.f);
        v[size_t(best)] = 30.f;
        if (n > 2048) {  // an equal maximum in a later workgroup (it must lose), and a NaN
          if (best < n - 1) v[size_t(n - 1)] = 30.f;
          v[size_t(best == 7 ? 8 : 7)] = NAN;
        }
        auto logits = make_tensor(ctx(), {n}, v);
        auto out = test::poisoned(1, DType::U32), x = test::poisoned(s.cols + 3);
        const uint32_t p0[2] = {41, 9};
        auto pos = make_tensor(ctx(), {2}, DType::U32, std::as_bytes(std::span(p0)));
        Batch b(ctx());
        ops().next_token(b, logits, n, out, w, x, pos);
        b.run();
        const std::string what = std::string(to_string(t)) + " " + std::to_string(s.rows) + "x" +
                                 std::to_string(s.cols) + " n=" + std::to_string(n) + " best=" + std::to_string(best);
        ASSERT_EQ(download<uint32_t>(ctx(), out)[0], uint32_t(best)) << what;
        EXPECT_EQ(download<uint32_t>(ctx(), pos), (std::vector<uint32_t>{42, 10})) << what;
        auto bits = download<uint32_t>(ctx(), x);
        for (int i = 0; i < 3; ++i) EXPECT_EQ(bits[size_t(s.cols + i)], kPoisonNaN) << what;
        std::vector<float> got(size_t(s.cols));
        std::memcpy(got.data(), bits.data(), got.size() * 4);
        std::vector<float> want(size_t(s.cols), 0.f);
        if (best < s.rows) want = ref::embedding(deq, s.cols, {uint32_t(best)});
        EXPECT_LE(test::rel_error(got, want), 1e-6) << what;
      }
    }
}

TEST(LlmLinear, EveryTypeEveryVersionMatchesReference) {
  for (auto t : kGpuTensorTypes)
    for (auto s : shapes(t)) {
      auto bytes = ref::random_weight(t, s.rows, s.cols, 11);
      auto w = upload_weight(ctx(), t, bytes, s.rows, s.cols);
      auto deq = ref::dequantize(t, bytes, s.rows, s.cols);
      for (int n : {1, 3, 70}) {
        auto xv = test::random_floats(size_t(n * s.cols), uint32_t(n));
        auto x = make_tensor(ctx(), {int64_t(xv.size())}, xv);
        auto want = test::to_float(ref::linear(deq, s.cols, xv, n, 0, s.rows));
        for (auto v : test::linear_versions()) {
          if (n == 70 && v == LinearVersion::Naive && s.rows * s.cols > 20000) continue;  // slow on CPU
          auto y = test::poisoned(n * s.rows);
          Batch b(ctx());
          LinearOptions o;
          ops().linear(b, w, x, y, n, o, v);
          b.run();
          EXPECT_LE(test::rel_error(download<float>(ctx(), y), want), 1e-5)
              << to_string(t) << " " << s.rows << "x" << s.cols << " n=" << n << " " << to_string(v);
        }
      }
    }
}

// Row ranges of a concatenated weight into strided outputs, with bias and residual.
TEST(LlmLinear, RowRangesBiasAndAccumulate) {
  for (auto t : {TensorType::F16, TensorType::Q8_0, TensorType::Q4_K}) {
    const int64_t rows = 48, cols = int64_t(block_size(t)) == 256 ? 256 : 64;
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
        Batch b(ctx());
        ops().linear(b, w, x, y, n, o, v);
        b.run();
        EXPECT_LE(test::rel_error(download<float>(ctx(), y), want), 1e-5)
            << to_string(t) << " n=" << n << " " << to_string(v);
      }
    }
  }
}

// The register-tiled matmul at awkward sizes under several tilings (the default, a non-power-of-two
// tile with a k step that leaves a partial last tile for every type, 4 invocations per workgroup,
// 256 invocations): token counts around the tile, rows not a multiple of it, a row range of the
// weight, strided x (vec4 and element-wise reads; the gaps hold NaN), strided y with an offset,
// bias and accumulate. Unwritten parts of y must keep their contents.
TEST(LlmLinear, RegTileAwkwardShapes) {
  struct Tiling {
    uint32_t bm, bn, bk;
  };
  std::vector<std::pair<Tiling, std::unique_ptr<LlmOps>>> tilings;
  for (Tiling tl :
       {Tiling{64, 128, 16}, Tiling{16, 24, 12}, Tiling{8, 16, 48}, Tiling{128, 64, 16}, Tiling{64, 128, 8}}) {
    auto o = std::make_unique<LlmOps>(ctx());
    o->tuning.matmul_bm = tl.bm;
    o->tuning.matmul_bn = tl.bn;
    o->tuning.matmul_bk = tl.bk;
    tilings.emplace_back(tl, std::move(o));
  }
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (auto t : kGpuTensorTypes) {
    decltype(shapes(t)) sh;  // (Shape alone is ambiguous with wgc::Shape)
    switch (block_size(t)) {
      case 1: sh = {{131, 200}, {37, 13}}; break;
      case 32: sh = {{131, 96}, {9, 160}}; break;
      default: sh = {{131, 256}, {20, 512}}; break;
    }
    for (auto s : sh) {
      auto bytes = ref::random_weight(t, s.rows, s.cols, 21);
      auto w = upload_weight(ctx(), t, bytes, s.rows, s.cols);
      auto deq = ref::dequantize(t, bytes, s.rows, s.cols);
      auto bias_v = test::random_floats(size_t(s.rows), 23);
      auto bias = make_tensor(ctx(), {s.rows}, bias_v);
      for (int n : {1, 7, 130, 300}) {
        auto xv = test::random_floats(size_t(n) * size_t(s.cols), uint32_t(n + 1));
        for (int variant = 0; variant < 3; ++variant) {
          // 0: plain; 1: rows 3 .. rows-3, x_stride % 4 == 0, strided y, bias; 2: as 1 with
          // x_stride % 4 != 0 (unless cols % 4 == 1) and accumulate.
          const bool plain = variant == 0, acc = variant == 2;
          const int64_t row0 = plain ? 0 : 3, nr = plain ? s.rows : s.rows - 5;
          if (nr <= 0) continue;
          const int64_t xs = plain ? s.cols : variant == 1 ? (s.cols + 3) / 4 * 4 + 4 : s.cols + 3;
          const int64_t ys = plain ? nr : nr + 9, yoff = plain ? 0 : 5;
          std::vector<float> xb(size_t((n - 1) * xs + s.cols), nan);
          for (int tt = 0; tt < n; ++tt)
            std::copy_n(xv.begin() + ptrdiff_t(tt) * s.cols, s.cols, xb.begin() + ptrdiff_t(tt * xs));
          auto x = make_tensor(ctx(), {int64_t(xb.size())}, xb);
          const size_t ny = size_t((n - 1) * ys + yoff + nr + 6);
          auto y0 = test::random_floats(ny, 29);
          auto r = ref::linear(deq, s.cols, xv, n, row0, nr);
          std::vector<bool> written(ny, false);
          auto want = y0;
          for (int tt = 0; tt < n; ++tt)
            for (int64_t i = 0; i < nr; ++i) {
              size_t yi = size_t(tt * ys + yoff + i);
              double v = r[size_t(tt * nr + i)] + (plain ? 0.0 : double(bias_v[size_t(row0 + i)]));
              want[yi] = float(acc ? double(y0[yi]) + v : v);
              written[yi] = true;
            }
          for (auto& [tl, o] : tilings) {
            const std::string what = std::string(to_string(t)) + " " + std::to_string(s.rows) + "x" +
                                     std::to_string(s.cols) + " n=" + std::to_string(n) + " variant " +
                                     std::to_string(variant) + " tile " + std::to_string(tl.bm) + "x" +
                                     std::to_string(tl.bn) + "x" + std::to_string(tl.bk);
            Tensor y = acc ? make_tensor(ctx(), {int64_t(ny)}, y0) : test::poisoned(int64_t(ny));
            LinearOptions lo;
            lo.row0 = row0;
            lo.rows = nr;
            lo.x_stride = xs;
            lo.y_stride = ys;
            lo.y_offset = yoff;
            if (!plain) lo.bias = bias;
            lo.accumulate = acc;
            Batch b(ctx());
            o->linear(b, w, x, y, n, lo, LinearVersion::RegTile);
            b.run();
            auto got = download<float>(ctx(), y);
            got.resize(ny);
            test::expect_written_and_gaps(got, want, written, y0, acc, 1e-5, what);
          }
        }
      }
    }
  }
}

TEST(LlmLinear, RegTileBadTilingsAreErrors) {
  auto bytes = ref::random_weight(TensorType::F32, 4, 8, 1);
  auto w = upload_weight(ctx(), TensorType::F32, bytes, 4, 8);
  auto x = make_tensor(ctx(), {16}), y = make_tensor(ctx(), {8});
  LinearOptions o;
  for (auto tl : {std::array<uint32_t, 3>{12, 64, 16}, {64, 64, 6}, {512, 512, 16}, {64, 128, 1024}}) {
    LlmOps ops2(ctx());
    ops2.tuning.matmul_bm = tl[0];
    ops2.tuning.matmul_bn = tl[1];
    ops2.tuning.matmul_bk = tl[2];
    Batch b(ctx());
    EXPECT_THROW(ops2.linear(b, w, x, y, 2, o, LinearVersion::RegTile), Error) << tl[0] << "x" << tl[1] << "x" << tl[2];
  }
}

TEST(LlmLinear, BadShapesAreErrors) {
  auto bytes = ref::random_weight(TensorType::F32, 4, 8, 1);
  auto w = upload_weight(ctx(), TensorType::F32, bytes, 4, 8);
  auto x = make_tensor(ctx(), {8}), y = make_tensor(ctx(), {4});
  Batch b(ctx());
  LinearOptions o;
  o.row0 = 2;
  o.rows = 3;
  EXPECT_THROW(ops().linear(b, w, x, y, 1, o), Error);
  EXPECT_THROW(ops().linear(b, w, x, y, 2), Error);
}
