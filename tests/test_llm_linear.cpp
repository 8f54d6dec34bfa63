// LLM weights (every GGUF type repacked for the GPU), embedding lookup, matvec and matmul.
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

// rms_norm_linear of x (norm weight nw) through w, checked against ref rows of deq x xn: all rows
// into a poisoned y, then rows 4 .. rows - 4 at y offset 3 accumulated into random y (the rest of
// y untouched).
void expect_rms_norm_linear(const LlmOps& o, const Tensor& x, const Tensor& nw, float eps, const GpuWeight& w,
                            const std::vector<double>& deq, int64_t cols, const std::vector<float>& xn, uint32_t seed,
                            const std::string& what) {
  for (bool plain : {true, false}) {
    const int64_t rows = w.rows, row0 = plain ? 0 : 4, nr = plain ? rows : rows - 7, yoff = plain ? 0 : 3;
    const size_t ny = size_t(yoff + nr + 5);
    auto y0 = test::random_floats(ny, seed);
    const test::RowsWant rw = test::rows_want(ref::linear(deq, cols, xn, 1, row0, nr), y0, yoff, !plain);
    Tensor y = plain ? test::poisoned(int64_t(ny)) : make_tensor(ctx(), {int64_t(ny)}, y0);
    LinearOptions lo;
    lo.row0 = row0;
    lo.rows = nr;
    lo.y_offset = yoff;
    lo.accumulate = !plain;
    Batch b(ctx());
    o.rms_norm_linear(b, x, nw, eps, w, y, lo);
    b.run();
    auto got = download<float>(ctx(), y);
    got.resize(ny);
    test::expect_written_and_gaps(got, rw.want, rw.written, y0, !plain, 1e-5, what + (plain ? " plain" : " range"));
  }
}

// A QKV step's heads, a RoPE table, x, its norm weight and a position tensor (position 9 into
// cache row 4), at an awkward width; fused_as_two_passes checks rms_norm_qkv_rope bit-identical to
// rms_norm_linear then rope_kv_append under o's tuning (test::expect_same_qkv_rope).
struct QkvRopeCase {
  static constexpr int nh = 4, nkv = 2, hd = 16, max_ctx = 12;
  static constexpr int64_t rows = int64_t(nh + 2 * nkv) * hd, cols = 204;
  RopeTable table;
  Tensor pos, x, nw;

  QkvRopeCase() {
    std::vector<double> inv(hd / 2);
    for (int i = 0; i < hd / 2; ++i) inv[size_t(i)] = std::pow(10000.0, -2.0 * i / hd);
    table = make_rope_table(ctx(), inv, hd, 16);
    const std::vector<uint32_t> pos_rows = {9, 4};
    pos = make_tensor(ctx(), {2}, DType::U32, std::as_bytes(std::span(pos_rows)));
    x = make_tensor(ctx(), {cols}, test::random_floats(size_t(cols), 92));
    nw = make_tensor(ctx(), {cols}, test::random_floats(size_t(cols), 93, 0.5f, 1.5f));
  }
  GpuWeight weight(TensorType t) const {
    return upload_weight(ctx(), t, ref::random_weight(t, rows, cols, 91), rows, cols);
  }
  void fused_as_two_passes(const LlmOps& o, const GpuWeight& w, bool interleaved, bool dyn,
                           const std::string& what) const {
    const RopeKvArgs a = test::qkv_rope_args(nh, interleaved, dyn ? &pos : nullptr);
    auto fused = test::qkv_rope_outputs(rows, nkv, max_ctx, hd, [&](Batch& b, const Tensor& qkv, const KvLayer& c) {
      o.rms_norm_qkv_rope(b, x, nw, 1e-5f, w, qkv, table, c, a);
    });
    auto two = test::qkv_rope_outputs(rows, nkv, max_ctx, hd, [&](Batch& b, const Tensor& qkv, const KvLayer& c) {
      o.rms_norm_linear(b, x, nw, 1e-5f, w, qkv);
      o.rope_kv_append(b, qkv, table, c, a);
    });
    test::expect_same_qkv_rope(fused, two, rows, int64_t(nkv) * hd, what);
  }
};

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

// The matvec's tuning knobs (rows per invocation group, group size, unroll, workgroup size) only
// change the schedule: every setting gives the reference, for every type, at row counts that
// leave partial groups and workgroups, with bias and accumulation.
TEST(LlmLinear, MatvecTuningsMatchReference) {
  struct Tune {
    uint32_t wg, tpr, unroll, rows, xs, pf = 0, cols_static = 0, pf_loads = 8, few = 0;
  };
  // (the last two: grids of fewer than matvec_few_groups workgroups (45 rows: 1-6) with unroll 7
  // or 3 from matvec_few_unroll)
  const Tune tunes[] = {{256, 32, 4, 2, 2},
                        {128, 16, 1, 3, 2},
                        {64, 8, 2, 4, 2},
                        {256, 64, 1, 4, 0},
                        {256, 32, 4, 2, 2, 4, 1},
                        {64, 8, 4, 3, 2, 2},
                        {128, 16, 2, 4, 0, 1, 1},
                        {64, 8, 8, 2, 2, 8, 1, 16},
                        {64, 8, 2, 2, 2, 2, 1, 8, 7},
                        {128, 16, 4, 3, 0, 4, 0, 16, 3}};
  for (auto t : kGpuTensorTypes) {
    const int64_t rows = 45, cols = int64_t(block_size(t)) == 256 ? 512 : int64_t(block_size(t)) == 32 ? 4160 : 203;
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
      o.tuning.matvec_xs = tune.xs;
      o.tuning.matvec_pf = tune.pf;
      o.tuning.matvec_pf_loads = tune.pf_loads;
      o.tuning.matvec_static = tune.cols_static;
      o.tuning.matvec_few_groups = tune.few ? 64 : 0;
      o.tuning.matvec_few_unroll = tune.few;
      auto y = test::poisoned(rows);
      LinearOptions lo;
      lo.bias = bias;
      Batch b(ctx());
      o.linear(b, w, x, y, 1, lo, LinearVersion::Shared);
      b.run();
      EXPECT_LE(test::rel_error(download<float>(ctx(), y), want), 1e-5)
          << to_string(t) << " wg " << tune.wg << " tpr " << tune.tpr << " unroll " << tune.unroll << " rows "
          << tune.rows << " xs " << tune.xs << " pf " << tune.pf << " static " << tune.cols_static << " few "
          << tune.few;
    }
  }
}

// One-token matvecs with their columns split into ranges (matvec_split: partial sums, then a pass
// adding them in order, with the bias, a y offset and accumulation) against the reference, float
// types at awkward widths, x staged per range or read from global memory, with the prefetch; the
// rest of y untouched; the same bits on a second run; below matvec_split_cols nothing is split.
TEST(LlmLinear, MatvecSplitColumnsMatchesReference) {
  struct Tune {
    uint32_t splits, tpr, unroll, rows, xs, pf;
  };
  const Tune tunes[] = {{2, 32, 2, 2, 2, 2}, {3, 8, 2, 1, 2, 0}, {5, 16, 1, 3, 0, 1}, {4, 8, 1, 2, 1, 0}};
  for (auto t : {TensorType::F32, TensorType::F16, TensorType::BF16}) {
    for (int64_t cols : {int64_t(1037), int64_t(1160)}) {
      const int64_t rows = 45, row0 = 3, nr = 39, yoff = 2;
      auto bytes = ref::random_weight(t, rows, cols, 41);
      auto w = upload_weight(ctx(), t, bytes, rows, cols);
      auto deq = ref::dequantize(t, bytes, rows, cols);
      auto xv = test::random_floats(size_t(cols), 42);
      auto x = make_tensor(ctx(), {cols}, xv);
      auto bias_v = test::random_floats(size_t(rows), 43);
      auto bias = make_tensor(ctx(), {rows}, bias_v);
      auto r = ref::linear(deq, cols, xv, 1, row0, nr);
      for (auto tune : tunes) {
        LlmOps o(ctx());
        o.tuning.matvec_split = tune.splits;
        o.tuning.matvec_split_cols = 1000;
        o.tuning.matvec_tpr = tune.tpr;
        o.tuning.matvec_unroll = tune.unroll;
        o.tuning.matvec_few_groups = 0;  // the unroll asked for, in these grids of few workgroups too
        o.tuning.matvec_rows = tune.rows;
        o.tuning.matvec_xs = tune.xs;
        o.tuning.matvec_pf = tune.pf;
        o.tuning.matvec_static = tune.splits % 2;
        const std::string what = std::string(to_string(t)) + " cols " + std::to_string(cols) + " splits " +
                                 std::to_string(tune.splits) + " tpr " + std::to_string(tune.tpr);
        ASSERT_EQ(o.matvec_splits(t, cols), tune.splits) << what;
        for (bool plain : {true, false}) {
          const size_t ny = size_t(yoff + nr + 4);
          auto y0 = test::random_floats(ny, 44);
          std::vector<float> want = y0;
          std::vector<bool> written(ny, false);
          for (int64_t i = 0; i < nr; ++i) {
            const size_t yi = size_t(yoff + i);
            want[yi] = float(r[size_t(i)] + double(bias_v[size_t(row0 + i)]) + (plain ? 0.0 : double(y0[yi])));
            written[yi] = true;
          }
          LinearOptions lo;
          lo.row0 = row0;
          lo.rows = nr;
          lo.y_offset = yoff;
          lo.bias = bias;
          lo.accumulate = !plain;
          std::vector<float> runs[2];
          for (auto& got : runs) {
            Tensor y = plain ? test::poisoned(int64_t(ny)) : make_tensor(ctx(), {int64_t(ny)}, y0);
            Batch b(ctx());
            o.linear(b, w, x, y, 1, lo, LinearVersion::Shared);
            b.run();
            got = download<float>(ctx(), y);
            got.resize(ny);
          }
          test::expect_written_and_gaps(runs[0], want, written, y0, !plain, 1e-5, what + (plain ? " plain" : " acc"));
          EXPECT_EQ(0, std::memcmp(runs[0].data(), runs[1].data(), ny * 4)) << what << ": a second run differs";
        }
      }
    }
  }
  LlmOps o(ctx());
  o.tuning.matvec_split = 4;
  o.tuning.matvec_split_cols = 8192;
  EXPECT_EQ(o.matvec_splits(TensorType::F16, 8191), 1u);  // below matvec_split_cols
  EXPECT_EQ(o.matvec_splits(TensorType::F16, 14336), 4u);
  EXPECT_EQ(o.matvec_splits(TensorType::Q8_0, 14336), 1u);  // the float types only
  o.tuning.matvec_split = 1000;
  EXPECT_THROW(o.matvec_splits(TensorType::F16, 14336), Error);
}

// The fused gate|up + SwiGLU matvec (one token): silu(gate) * up against the reference, for every
// type, with the subgroup and shared reductions and two matvec shapes.
TEST(LlmLinear, LinearSwigluMatchesReference) {
  for (auto t : kGpuTensorTypes) {
    const int64_t half = 96, cols = int64_t(block_size(t)) == 256 ? 512 : int64_t(block_size(t)) == 32 ? 160 : 203;
    auto bytes = ref::random_weight(t, 2 * half, cols, 81);
    auto w = upload_weight(ctx(), t, bytes, 2 * half, cols);
    auto deq = ref::dequantize(t, bytes, 2 * half, cols);
    auto xv = test::random_floats(size_t(cols), 82);
    auto x = make_tensor(ctx(), {cols}, xv);
    auto want = ref::swiglu(test::to_float(ref::linear(deq, cols, xv, 1, 0, half)),
                            test::to_float(ref::linear(deq, cols, xv, 1, half, half)));
    for (auto [tpr, wg_rows, pf] :
         {std::array<uint32_t, 3>{32, 64, 0}, std::array<uint32_t, 3>{8, 64, 2}, std::array<uint32_t, 3>{32, 32, 1},
          std::array<uint32_t, 3>{16, 16, 4}, std::array<uint32_t, 3>{32, 32, 4}}) {
      LlmOps o(ctx());
      o.tuning.matvec_tpr = tpr;
      o.tuning.swiglu_wg_rows = wg_rows;
      o.tuning.matvec_pf = pf;
      o.tuning.matvec_pf_loads = pf == 4 ? 16 : 8;  // 4 rows per group x 4 steps
      o.tuning.matvec_static = pf % 2;
      std::vector<LinearVersion> vs = {LinearVersion::Shared};
      if (o.supports(LinearVersion::Subgroup, {1, 2 * half, cols, t})) vs.push_back(LinearVersion::Subgroup);
      for (auto v : vs) {
        auto out = test::poisoned(half);
        Batch b(ctx());
        o.linear_swiglu(b, w, x, out, v);
        b.run();
        EXPECT_LE(test::rel_error(download<float>(ctx(), out), want), 1e-5)
            << to_string(t) << " tpr " << tpr << " rows per workgroup " << wg_rows << " pf " << pf << " "
            << to_string(v);
      }
    }
  }
  auto w = upload_weight(ctx(), TensorType::F32, ref::random_weight(TensorType::F32, 48, 8, 1), 48, 8);
  Batch b(ctx());
  EXPECT_THROW(ops().linear_swiglu(b, w, make_tensor(ctx(), {8}), make_tensor(ctx(), {24})), Error);  // 24 % 32
}

// rms_norm_linear and rms_norm_swiglu (the RMSNorm inside the one-token matvec) against the
// reference on the normalised x, every type, two matvec shapes, plain (poisoned y) and with a row
// range, y offset and accumulation (the rest of y untouched).
TEST(LlmLinear, RmsNormLinearMatchesReference) {
  const float eps = 1e-5f;
  for (auto t : kGpuTensorTypes) {
    const int64_t rows = 45, cols = int64_t(block_size(t)) == 256 ? 512 : int64_t(block_size(t)) == 32 ? 4160 : 204;
    auto bytes = ref::random_weight(t, rows, cols, 31);
    auto w = upload_weight(ctx(), t, bytes, rows, cols);
    auto deq = ref::dequantize(t, bytes, rows, cols);
    auto xv = test::random_floats(size_t(cols + 9), 32, -2.f, 3.f);  // past cols: not read
    auto x = make_tensor(ctx(), {int64_t(xv.size())}, xv);
    auto nv = test::random_floats(size_t(cols), 33, 0.5f, 1.5f);
    auto nw = make_tensor(ctx(), {cols}, nv);
    auto xn = ref::rms_norm(std::vector<float>(xv.begin(), xv.begin() + cols), nv, 1, int(cols), eps);
    // x staged in workgroup memory (matvec_xs 1) and read from global memory (0); the norm's scale
    // after the dot products (matvec_late, where x is staged) with the weights' prefetch
    for (auto tune :
         {std::array<uint32_t, 7>{256, 32, 2, 2, 1, 0, 0}, std::array<uint32_t, 7>{64, 8, 2, 4, 0, 0, 1},
          std::array<uint32_t, 7>{256, 32, 4, 2, 2, 1, 2}, std::array<uint32_t, 7>{128, 16, 2, 3, 1, 1, 0}}) {
      LlmOps o(ctx());
      o.tuning.matvec_wg = tune[0];
      o.tuning.matvec_tpr = tune[1];
      o.tuning.matvec_unroll = tune[2];
      o.tuning.matvec_few_groups = 0;  // the unroll asked for, in these grids of few workgroups too
      o.tuning.matvec_rows = tune[3];
      o.tuning.matvec_xs = tune[4];
      o.tuning.matvec_late = tune[5];
      o.tuning.matvec_pf = tune[6];
      o.tuning.matvec_static = tune[5];  // with the late norm
      const std::string what = std::string(to_string(t)) + " wg " + std::to_string(tune[0]) + " xs " +
                               std::to_string(tune[4]) + " late " + std::to_string(tune[5]) + " pf " +
                               std::to_string(tune[6]);
      ASSERT_TRUE(o.fuses_norm(cols)) << what;
      expect_rms_norm_linear(o, x, nw, eps, w, deq, cols, xn, 34, what);
      if (block_size(t) == 256) continue;  // gate|up of 2 x 96 rows at cols 160 or 204
      const int64_t half = 96, gc = block_size(t) == 32 ? 160 : 204;
      auto gb = ref::random_weight(t, 2 * half, gc, 35);
      auto gw = upload_weight(ctx(), t, gb, 2 * half, gc);
      auto gdeq = ref::dequantize(t, gb, 2 * half, gc);
      auto gx = std::vector<float>(xv.begin(), xv.begin() + gc);
      auto gn = std::vector<float>(nv.begin(), nv.begin() + gc);
      auto gxn = ref::rms_norm(gx, gn, 1, int(gc), eps);
      auto want = ref::swiglu(test::to_float(ref::linear(gdeq, gc, gxn, 1, 0, half)),
                              test::to_float(ref::linear(gdeq, gc, gxn, 1, half, half)));
      auto out = test::poisoned(half);
      Batch b(ctx());
      o.rms_norm_swiglu(b, make_tensor(ctx(), {gc}, gx), make_tensor(ctx(), {gc}, gn), eps, gw, out);
      b.run();
      EXPECT_LE(test::rel_error(download<float>(ctx(), out), want), 1e-5) << what << " swiglu";
    }
  }
  auto w = upload_weight(ctx(), TensorType::F32, ref::random_weight(TensorType::F32, 8, 6, 1), 8, 6);
  Batch b(ctx());
  auto y = make_tensor(ctx(), {8});
  EXPECT_FALSE(ops().fuses_norm(6));  // not a multiple of 4
  EXPECT_THROW(ops().rms_norm_linear(b, make_tensor(ctx(), {8}), make_tensor(ctx(), {8}), 1e-5f, w, y), Error);
  LinearOptions with_bias;
  with_bias.bias = y;
  auto w8 = upload_weight(ctx(), TensorType::F32, ref::random_weight(TensorType::F32, 8, 8, 1), 8, 8);
  EXPECT_THROW(ops().rms_norm_linear(b, make_tensor(ctx(), {8}), make_tensor(ctx(), {8}), 1e-5f, w8, y, with_bias),
               Error);  // no bias: the norm weight takes its binding
  EXPECT_THROW(ops().rms_norm_linear(b, make_tensor(ctx(), {8}), make_tensor(ctx(), {4}), 1e-5f, w8, y),
               Error);  // a short norm weight
}

// rms_norm_qkv_rope (RoPE and the cache append in the f32-activation QKV matvec) against its two
// passes, rms_norm_linear then rope_kv_append: bit-identical qkv and caches (poisoned first, so
// rows either path leaves alone must stay so), F32/F16/BF16 weights at an awkward width, both
// pair layouts, a fixed position and one read on the GPU with a separate cache row, x staged in
// workgroup memory or not, 1, 2 and 4 RoPE pairs per row group, in a second layer of the cache.
TEST(LlmLinear, QkvRopeMatchesTwoPasses) {
  const QkvRopeCase q;
  const int64_t rows = q.rows;
  for (auto t : {TensorType::F32, TensorType::F16, TensorType::BF16}) {
    auto w = q.weight(t);
    for (int variant = 0; variant < 6; ++variant) {
      const bool interleaved = variant == 1 || variant == 5, dyn = variant == 2 || variant == 4;
      LlmOps o(ctx());
      o.tuning.matvec_xs = variant == 2 ? 0 : 1;
      if (variant == 1 || variant == 5) o.tuning.matvec_tpr = 8;
      if (variant >= 3) {  // the norm's scale late, the weights prefetched, the columns built in
        o.tuning.matvec_late = 1;
        o.tuning.matvec_pf = 2;
        o.tuning.matvec_static = 1;
      }
      // 2 and 4 RoPE pairs per row group (the last workgroup's groups partly past the rows)
      if (variant >= 4) o.tuning.matvec_rope_rows = variant == 4 ? 4 : 8;
      ASSERT_TRUE(o.fuses_rope(q.cols));
      const std::string what = std::string(to_string(t)) + (interleaved ? " interleaved" : " neox") +
                               (dyn ? " position read on the GPU, x from global memory" : " fixed position") +
                               (variant >= 3 ? ", late norm, prefetch, static columns" : "") + ", rope rows " +
                               std::to_string(o.tuning.matvec_rope_rows);
      q.fused_as_two_passes(o, w, interleaved, dyn, what);
    }
  }
  auto w = upload_weight(ctx(), TensorType::F16, ref::random_weight(TensorType::F16, rows - 2, 64, 1), rows - 2, 64);
  auto cache = make_kv_cache(ctx(), 1, q.nkv, q.max_ctx, q.hd);
  RopeKvArgs a;
  a.n_heads = q.nh;
  Batch b(ctx());
  auto x64 = make_tensor(ctx(), {64});
  EXPECT_THROW(ops().rms_norm_qkv_rope(b, x64, x64, 1e-5f, w, test::poisoned(rows), q.table, cache.layer(0), a),
               Error);  // rows are not the q, k and v heads
}

// The kx schedule (matvec_kx.wgsl: columns across the workgroup, x in registers, row tiles
// reduced by a transposed subgroup butterfly) for every kind it takes, against the reference:
// plain rows with bias, rms_norm_linear over a row range with a y offset and accumulation (the
// rest of y untouched), gate|up + SwiGLU with and without the norm (gate rows not a multiple of
// the tile), and QKV + RoPE bit-identical to its two kx passes. Float types at awkward widths
// (x masked past the columns; invocations whose last chunks are past the row), tiles of 2 to 32
// rows, one or several passes per tile (loaded one pass ahead or not), workgroups looping over
// several tiles, the late norm's reduction before or after the first sums (kx_early) and each
// tile's epilogue loads with its first weights or after its sums (kx_epi); with kx_groups set,
// the narrow widths' grids are doubled (kx_groups_cpl 2) and the wide ones' not.
TEST(LlmLinear, KxMatvecsMatchReference) {
  if (!ctx().features().subgroups) GTEST_SKIP() << "the kx schedule needs subgroups";
  {  // the defaults: every kind of float weights, an 8B model's matvecs and a 1B model's
    LlmOps d(ctx());
    const auto sg = LinearVersion::Subgroup;
    EXPECT_TRUE(d.kx_runs(LlmOps::kKxPlain, TensorType::F16, 4096, 14336, sg));
    EXPECT_TRUE(d.kx_runs(LlmOps::kKxPlain, TensorType::BF16, 4096, 4096, sg));
    EXPECT_TRUE(d.kx_runs(LlmOps::kKxSwiglu, TensorType::F16, 28672, 4096, sg));
    EXPECT_TRUE(d.kx_runs(LlmOps::kKxRope, TensorType::F16, 6144, 4096, sg));
    EXPECT_TRUE(d.kx_runs(LlmOps::kKxPlain, TensorType::F16, 2048, 8192, sg));  // a 1B down projection
    EXPECT_TRUE(d.kx_runs(LlmOps::kKxPlain, TensorType::F16, 128256, 2048, sg));
    EXPECT_TRUE(d.kx_runs(LlmOps::kKxSwiglu, TensorType::F16, 16384, 2048, sg));
    EXPECT_TRUE(d.kx_runs(LlmOps::kKxRope, TensorType::BF16, 3072, 2048, sg));
    EXPECT_FALSE(d.kx_runs(LlmOps::kKxPlain, TensorType::F16, 4096, 14336, LinearVersion::Shared));
    EXPECT_FALSE(d.kx_runs(LlmOps::kKxPlain, TensorType::Q8_0, 4096, 14336, sg));
    // 512 invocations from 12,288 columns, 256 below (at most what the adapter allows)
    const uint32_t most = ctx().limits().max_compute_invocations_per_workgroup;
    EXPECT_EQ(d.kx_workgroup(14336), std::min(512u, most));
    EXPECT_EQ(d.kx_workgroup(4096), std::min(256u, most));
    // chunks of 8 F16 per invocation (WebGPU allows at least 256 invocations): a 1B model's
    // 2,048 columns take one (kx_groups_cpl doubles its grids)
    EXPECT_EQ(d.kx_chunks(TensorType::F16, 2048), 1u);
    EXPECT_EQ(d.kx_chunks(TensorType::F16, 4096), 2u);
    EXPECT_EQ(d.kx_chunks(TensorType::F16, 14336), most >= 512 ? 4u : 7u);
  }
  struct Tune {
    uint32_t wg, rows, loads, groups, db = 0, early = 0, epi = 0;
  };
  const Tune tunes[] = {{256, 16, 16, 0}, {64, 4, 4, 3, 1, 0, 1}, {128, 32, 8, 0},        {32, 2, 16, 2, 1},
                        {64, 8, 2, 0, 1}, {256, 8, 28, 0, 0, 1},  {32, 4, 8, 3, 1, 1, 1}, {256, 8, 28, 0, 0, 1, 1}};
  // the kx schedule at every width, with this tune's knobs
  auto set_kx = [](LlmTuning& tn, const Tune& tune) {
    tn.matvec_kx = 7;
    tn.kx_cols = 0;
    tn.kx_min_rows = 0;
    tn.kx_wide_wg = tune.wg * 2;  // from 1000 columns: both workgroup sizes at the widths below
    tn.kx_wide_cols = 1000;
    tn.kx_wg = tune.wg;
    tn.kx_rows = tune.rows;
    tn.kx_loads = tune.loads;
    tn.kx_groups = tune.groups;
    tn.kx_db = tune.db;
    tn.kx_early = tune.early;
    tn.kx_epi = tune.epi;
  };
  const float eps = 1e-5f;
  for (auto t : {TensorType::F32, TensorType::F16, TensorType::BF16}) {
    for (int64_t cols : {int64_t(203), int64_t(1000)}) {
      const int64_t rows = 45, ncols = cols / 4 * 4;  // the norm's columns: a multiple of 4
      auto bytes = ref::random_weight(t, rows, cols, 41);
      auto w = upload_weight(ctx(), t, bytes, rows, cols);
      auto deq = ref::dequantize(t, bytes, rows, cols);
      auto nbytes = ref::random_weight(t, rows, ncols, 42);
      auto nw8 = upload_weight(ctx(), t, nbytes, rows, ncols);
      auto ndeq = ref::dequantize(t, nbytes, rows, ncols);
      auto xv = test::random_floats(size_t(cols), 43, -2.f, 3.f);
      auto x = make_tensor(ctx(), {cols}, xv);
      auto nv = test::random_floats(size_t(ncols), 44, 0.5f, 1.5f);
      auto nw = make_tensor(ctx(), {ncols}, nv);
      auto xn = ref::rms_norm(std::vector<float>(xv.begin(), xv.begin() + ncols), nv, 1, int(ncols), eps);
      auto bias_v = test::random_floats(size_t(rows), 45);
      auto bias = make_tensor(ctx(), {rows}, bias_v);
      auto r = ref::linear(deq, cols, xv, 1, 0, rows);
      std::vector<float> want(static_cast<size_t>(rows));
      for (int64_t i = 0; i < rows; ++i) want[size_t(i)] = float(r[size_t(i)] + bias_v[size_t(i)]);
      const int64_t half = 90;  // gate|up: 90 gate rows (tiles of T / 2 rows partly past them)
      auto gb = ref::random_weight(t, 2 * half, ncols, 46);
      auto gw = upload_weight(ctx(), t, gb, 2 * half, ncols);
      auto gdeq = ref::dequantize(t, gb, 2 * half, ncols);
      std::vector<float> gx(xv.begin(), xv.begin() + ncols);
      auto gwant = ref::swiglu(test::to_float(ref::linear(gdeq, ncols, gx, 1, 0, half)),
                               test::to_float(ref::linear(gdeq, ncols, gx, 1, half, half)));
      auto gnwant = ref::swiglu(test::to_float(ref::linear(gdeq, ncols, xn, 1, 0, half)),
                                test::to_float(ref::linear(gdeq, ncols, xn, 1, half, half)));
      for (auto tune : tunes) {
        LlmOps o(ctx());
        set_kx(o.tuning, tune);
        o.tuning.swiglu_wg_rows = 2;
        o.tuning.matvec_split_cols = 16;  // kx never splits
        const std::string what = std::string(to_string(t)) + " cols " + std::to_string(cols) + " wg " +
                                 std::to_string(tune.wg) + " rows " + std::to_string(tune.rows) + " loads " +
                                 std::to_string(tune.loads) + " groups " + std::to_string(tune.groups) + " db " +
                                 std::to_string(tune.db) + " early " + std::to_string(tune.early) + " epi " +
                                 std::to_string(tune.epi);
        ASSERT_TRUE(o.kx_runs(LlmOps::kKxPlain, t, rows, cols, LinearVersion::Subgroup)) << what;
        o.tuning.kx_cols = uint32_t(cols) + 1;  // narrower weights than kx_cols: matvec.wgsl
        EXPECT_FALSE(o.kx_runs(LlmOps::kKxPlain, t, rows, cols, LinearVersion::Subgroup)) << what;
        o.tuning.kx_cols = 0;
        {
          auto y = test::poisoned(rows);
          LinearOptions lo;
          lo.bias = bias;
          Batch b(ctx());
          o.linear(b, w, x, y, 1, lo, LinearVersion::Subgroup);
          b.run();
          EXPECT_LE(test::rel_error(download<float>(ctx(), y), want), 1e-5) << what << " plain";
        }
        expect_rms_norm_linear(o, x, nw, eps, nw8, ndeq, ncols, xn, 47, what + " norm");
        for (bool norm : {false, true}) {
          auto out = test::poisoned(half);
          Batch b(ctx());
          if (norm)
            o.rms_norm_swiglu(b, x, nw, eps, gw, out);
          else
            o.linear_swiglu(b, gw, make_tensor(ctx(), {ncols}, gx), out, LinearVersion::Subgroup);
          b.run();
          EXPECT_LE(test::rel_error(download<float>(ctx(), out), norm ? gnwant : gwant), 1e-5)
              << what << (norm ? " norm swiglu" : " swiglu");
        }
      }
    }
  }
  // QKV + RoPE: bit-identical to rms_norm_linear then rope_kv_append with the same schedule.
  const QkvRopeCase q;
  for (auto t : {TensorType::F32, TensorType::F16, TensorType::BF16}) {
    auto w = q.weight(t);
    for (auto tune : tunes) {
      for (bool interleaved : {false, true}) {
        LlmOps o(ctx());
        set_kx(o.tuning, tune);
        const std::string what = std::string(to_string(t)) + (interleaved ? " interleaved" : " neox") + " wg " +
                                 std::to_string(tune.wg) + " rows " + std::to_string(tune.rows);
        q.fused_as_two_passes(o, w, interleaved, interleaved, what);
      }
    }
  }
}

// The serving kernel's results do not depend on the batch: a token alone, among others, at any
// place in the batch, with any workgroup size or token tile, gives bit-identical outputs (with a
// row range, bias and accumulation on top).
TEST(LlmLinear, BatchedIsBatchInvariant) {
  for (auto t : kGpuTensorTypes) {
    const int64_t rows = 45, cols = int64_t(block_size(t)) == 256 ? 512 : int64_t(block_size(t)) == 32 ? 608 : 203;
    auto bytes = ref::random_weight(t, rows + 7, cols, 31);
    auto w = upload_weight(ctx(), t, bytes, rows + 7, cols);
    const int n = 21;
    auto xv = test::random_floats(size_t(n * cols), 32);
    auto x = make_tensor(ctx(), {int64_t(xv.size())}, xv);
    auto bias = make_tensor(ctx(), {rows + 7}, test::random_floats(size_t(rows + 7), 33));
    auto y0v = test::random_floats(size_t(n * rows), 34);
    // Tokens [first, first + count) of x, as a batch of their own, into rows [first, ...) of y.
    auto run = [&](LlmOps& o, int first, int count) {
      auto y = make_tensor(ctx(), {int64_t(y0v.size())}, y0v);
      auto xs = make_tensor(ctx(), {int64_t(count) * cols},
                            std::span<const float>(xv).subspan(size_t(first) * size_t(cols), size_t(count * cols)));
      LinearOptions lo;
      lo.row0 = 7;
      lo.rows = rows;
      lo.bias = bias;
      lo.accumulate = true;
      Batch b(ctx());
      auto yv = test::poisoned(int64_t(count) * rows);
      b.copy(y, uint64_t(first) * uint64_t(rows) * 4, yv, 0, uint64_t(count) * uint64_t(rows) * 4);
      o.linear(b, w, xs, yv, count, lo, LinearVersion::Batched);
      b.run();
      return download<float>(ctx(), yv);
    };
    LlmOps& o = ops();
    auto all = run(o, 0, n);
    auto deq = ref::dequantize(t, bytes, rows + 7, cols);
    auto r = ref::linear(deq, cols, xv, n, 7, rows);
    std::vector<float> want(r.size());
    auto bv = download<float>(ctx(), bias);
    for (size_t i = 0; i < r.size(); ++i) want[i] = float(r[i] + bv[7 + i % size_t(rows)] + y0v[i]);
    EXPECT_LE(test::rel_error(all, want), 1e-5) << to_string(t);
    auto same = [&](const std::vector<float>& got, int first, const std::string& what) {
      ASSERT_EQ(std::memcmp(got.data(), all.data() + size_t(first) * size_t(rows), got.size() * 4), 0)
          << to_string(t) << " " << what;
    };
    for (int i : {0, n - 1}) same(run(o, i, 1), i, "token " + std::to_string(i) + " alone");
    same(run(o, 3, 9), 3, "tokens 3..11");
    for (uint32_t wg : {8u, 256u}) {
      LlmOps other(ctx());
      other.tuning.batched_wg = wg;
      other.tuning.batched_tt = wg == 8 ? 2 : 32;
      same(run(other, 0, n), 0, "workgroup " + std::to_string(wg));
      same(run(other, 2, 4), 2, "workgroup " + std::to_string(wg) + ", 4 tokens");
    }
  }
}

// 8-bit activations (Q4_0 / Q8_0 weights): against the reference with x quantized the same way
// (per token and block of 32: d = max|x| / 127, q = round(x / d)) and, looser, the exact one; and
// batch-invariant like the f32 kernel.
TEST(LlmLinear, BatchedQ8MatchesReferenceAndIsBatchInvariant) {
  for (auto t : {TensorType::Q4_0, TensorType::Q8_0})
    for (auto [rows, cols] : {std::pair<int64_t, int64_t>{37, 96}, {45, 1088}}) {
      const struct { int64_t rows, cols; } s{rows, cols};
      auto bytes = ref::random_weight(t, s.rows, s.cols, 41);
      auto w = upload_weight(ctx(), t, bytes, s.rows, s.cols);
      auto deq = ref::dequantize(t, bytes, s.rows, s.cols);
      const int n = 19;
      auto xv = test::random_floats(size_t(n * s.cols), 42);
      for (int64_t i = 0; i < s.cols; ++i) xv[size_t(3 * s.cols + i)] = 0;  // an all-zero token
      auto xq = xv;                                                         // as the kernel quantizes it
      for (size_t b = 0; b < xq.size(); b += 32) {
        float amax = 0;
        for (size_t i = b; i < b + 32; ++i) amax = std::max(amax, std::fabs(xq[i]));
        const float d = amax / 127.0f, inv = d > 0 ? 1.0f / d : 0.0f;
        for (size_t i = b; i < b + 32; ++i) xq[i] = std::clamp(std::nearbyint(xq[i] * inv), -127.0f, 127.0f) * d;
      }
      auto x = make_tensor(ctx(), {int64_t(xv.size())}, xv);
      auto run = [&](const LlmOps& o, int first, int count) {
        auto xs =
            make_tensor(ctx(), {int64_t(count) * s.cols},
                        std::span<const float>(xv).subspan(size_t(first) * size_t(s.cols), size_t(count * s.cols)));
        auto y = test::poisoned(int64_t(count) * s.rows);
        Batch b(ctx());
        o.linear(b, w, xs, y, count, {}, LinearVersion::BatchedQ8);
        b.run();
        return download<float>(ctx(), y);
      };
      auto all = run(ops(), 0, n);
      const std::string what = std::string(to_string(t)) + " " + std::to_string(s.rows) + "x" + std::to_string(s.cols);
      const auto want_q = test::to_float(ref::linear(deq, s.cols, xq, n, 0, s.rows));
      EXPECT_LE(test::rel_error(all, want_q), 1e-3) << what;
      EXPECT_LE(test::rel_error(all, test::to_float(ref::linear(deq, s.cols, xv, n, 0, s.rows))), 3e-2) << what;
      const auto same = [&](const std::vector<float>& got, int first, const std::string& how) {
        ASSERT_EQ(std::memcmp(got.data(), all.data() + size_t(first) * size_t(s.rows), got.size() * 4), 0)
            << what << " " << how;
      };
      for (int i : {0, 3, n - 1}) same(run(ops(), i, 1), i, "token " + std::to_string(i) + " alone");
      same(run(ops(), 5, 3), 5, "tokens 5..7");
      // Token tiles, workgroup sizes and the prefetch change who computes an output, not how.
      for (uint32_t tt : {2u, 32u})
        for (bool pf : {false, true}) {
          LlmOps other(ctx());
          other.tuning.batched_tt = tt;
          other.tuning.batched_prefetch = pf;
          other.tuning.batched_wg = tt == 2 ? 256 : 32;
          const std::string how = "tt " + std::to_string(tt) + (pf ? " prefetch" : "");
          same(run(other, 0, n), 0, how);
          same(run(other, 4, 6), 4, how + ", tokens 4..9");
        }
      // Token groups sharing a workgroup (with a smaller x tile) likewise.
      // (8 groups of the automatic workgroup size: fewer, as the workgroup and its memory allow.)
      for (uint32_t tg : {2u, 3u, 8u}) {
        LlmOps other(ctx());
        other.tuning.batched_tt = 4;
        other.tuning.batched_tg = tg;
        other.tuning.batched_xt = tg == 3 ? 256 : 0;
        other.tuning.batched_wg = tg == 8 ? 0 : 32;
        const std::string how = std::to_string(tg) + " token groups";
        same(run(other, 0, n), 0, how);
        same(run(other, 4, 6), 4, how + ", tokens 4..9");
      }
      // Fewer rows per row group (small steps) likewise.
      for (uint32_t tr : {1u, 2u}) {
        LlmOps other(ctx());
        other.tuning.batched_small_n = 8;
        other.tuning.batched_small_tr = tr;
        const std::string how = std::to_string(tr) + " rows per group";
        same(run(other, 0, 1), 0, how + ", token 0 alone");
        same(run(other, 4, 6), 4, how + ", tokens 4..9");
        same(run(other, 0, n), 0, how + ", 19 tokens (4 rows)");
      }
      // Several weight blocks in flight per lane (small and large steps), and the integer sums
      // turned into floats without a conversion: the same bits.
      for (auto [un, small_un, i2f] : {std::tuple{1u, 4u, 1u}, {4u, 2u, 0u}}) {
        LlmOps other(ctx());
        other.tuning.batched_unroll = un;
        other.tuning.batched_small_unroll = small_un;
        other.tuning.batched_small_n = 6;
        other.tuning.batched_i2f = i2f;
        other.tuning.batched_xt = un == 4 ? 0 : 256;
        other.tuning.batched_small_xt = un == 4 ? 2048 : 0;  // one tile of a row for small steps
        const std::string how =
            "unroll " + std::to_string(un) + "/" + std::to_string(small_un) + " i2f " + std::to_string(i2f);
        same(run(other, 0, 1), 0, how + ", token 0 alone");
        same(run(other, 4, 6), 4, how + ", tokens 4..9");
        same(run(other, 0, n), 0, how + ", 19 tokens");
      }
      // Small steps shaped like a matvec (linear_batched_q8_mv.wgsl; the default for steps of up to
      // 4 tokens, checked above), its schedules: chunks of 8 blocks (several per row here), more
      // rows per group, tiny workgroups, up to 8 tokens, the sums without a conversion: the same bits.
      for (auto [sl, un, tr, wg, i2f] :
           {std::tuple{1u, 1u, 1u, 64u, 0u}, {2u, 3u, 2u, 16u, 1u}, {8u, 2u, 4u, 256u, 0u}, {4u, 8u, 1u, 256u, 0u}}) {
        LlmOps other(ctx());
        other.tuning.batched_mv_n = 8;
        other.tuning.batched_mv_sl = sl;
        other.tuning.batched_mv_un = un;
        other.tuning.batched_mv_tr = tr;
        other.tuning.batched_mv_wg = wg;
        other.tuning.batched_i2f = i2f;
        const std::string how = "mv " + std::to_string(sl) + "/" + std::to_string(un) + "/" + std::to_string(tr) + "/" +
                                std::to_string(wg) + (i2f ? " i2f" : "");
        same(run(other, 3, 1), 3, how + ", token 3 alone");
        same(run(other, 5, 3), 5, how + ", tokens 5..7");
        same(run(other, 4, 6), 4, how + ", tokens 4..9");
        same(run(other, 11, 8), 11, how + ", tokens 11..18");
      }
      // x quantized first (the serving engine's fused path): the same bits.
      {
        const int first = 2, count = 11;
        auto xs =
            make_tensor(ctx(), {int64_t(count) * s.cols},
                        std::span<const float>(xv).subspan(size_t(first) * size_t(s.cols), size_t(count * s.cols)));
        Q8Act q = make_q8_act(ctx(), count + 2, s.cols);
        auto y = test::poisoned(int64_t(count) * s.rows);
        Batch b(ctx());
        ops().quantize_q8(b, xs, q, count);
        ops().linear_batched_q8(b, w, q, y, count);
        b.run();
        same(download<float>(ctx(), y), first, "from quantize_q8");
      }
      // 32 lanes per row: another summation order, as close to the reference.
      LlmOps kl32(ctx());
      kl32.tuning.batched_kl = 32;
      EXPECT_LE(test::rel_error(run(kl32, 0, n), want_q), 1e-3) << what << " 32 lanes per row";
    }
  auto f16 = upload_weight(ctx(), TensorType::F16, ref::random_weight(TensorType::F16, 4, 32, 1), 4, 32);
  auto x = make_tensor(ctx(), {32}, test::random_floats(32, 1));
  auto y = test::poisoned(4);
  Batch b(ctx());
  EXPECT_THROW(ops().linear(b, f16, x, y, 1, {}, LinearVersion::BatchedQ8), Error);  // not for f16 weights
  EXPECT_THROW(ops().linear_batched_q8(b, f16, make_q8_act(ctx(), 1, 32), y, 1), Error);
  LlmOps bad_tr(ctx());
  bad_tr.tuning.batched_mv_n = 0;
  bad_tr.tuning.batched_small_n = 4;
  bad_tr.tuning.batched_small_tr = 3;
  auto q8 = upload_weight(ctx(), TensorType::Q8_0, ref::random_weight(TensorType::Q8_0, 4, 32, 1), 4, 32);
  EXPECT_THROW(bad_tr.linear(b, q8, x, y, 1, {}, LinearVersion::BatchedQ8), Error);  // 1, 2 or 4 rows
  LlmOps bad_un(ctx());
  bad_un.tuning.batched_mv_n = 0;
  bad_un.tuning.batched_small_unroll = 3;
  EXPECT_THROW(bad_un.linear(b, q8, x, y, 1, {}, LinearVersion::BatchedQ8), Error);  // 1, 2 or 4 blocks
  for (const char* bad :
       {"batched_mv_n=9", "batched_mv_sl=3", "batched_mv_un=0", "batched_mv_un=9", "batched_mv_tr=3"}) {
    LlmOps bad_mv(ctx());
    apply_tuning(bad_mv.tuning, bad);
    EXPECT_THROW(bad_mv.linear(b, q8, x, y, 1, {}, LinearVersion::BatchedQ8), Error) << bad;
  }
}

// The QKV linear with RoPE and the KV append in its epilogue (the serving engine's fused path):
// the bits of linear_batched_q8 then rope_kv_append, in the output (queries rotated, keys and
// values as computed) and in the paged cache (every other slot left poisoned), with and without
// bias, interleaved pairs or not, one token (the small-step kernel; 1-row groups asked for: 2
// taken, and 4) and 9.
TEST(LlmLinear, BatchedQ8RopeEqualsLinearThenRopeKvAppend) {
  const int nh = 4, nkv = 2, hd = 16, cols = 96, slots = 48;
  const int64_t rows = (nh + 2 * nkv) * hd;
  ModelConfig mc;  // theta 10000, no scaling
  mc.head_dim = mc.rope_dim = hd;
  auto table = make_rope_table(ctx(), mc.rope_inv_freq(), hd, 64);
  for (auto t : {TensorType::Q4_0, TensorType::Q8_0})
    for (int n : {1, 9}) {
      auto w = upload_weight(ctx(), t, ref::random_weight(t, rows, cols, 43), rows, cols);
      auto bias = make_tensor(ctx(), {rows}, test::random_floats(size_t(rows), 44));
      std::vector<uint32_t> pos(size_t(2 * n));
      for (int i = 0; i < n; ++i) {
        pos[size_t(i)] = uint32_t(3 + 5 * i);                 // positions
        pos[size_t(n + i)] = uint32_t((i * 11 + 7) % slots);  // cache rows
      }
      auto pt = make_tensor(ctx(), {int64_t(pos.size())}, DType::U32, std::as_bytes(std::span(pos)));
      auto xs = make_tensor(ctx(), {int64_t(n) * cols}, test::random_floats(size_t(n * cols), 45));
      Q8Act xq = make_q8_act(ctx(), n, cols);
      {
        Batch b(ctx());
        ops().quantize_q8(b, xs, xq, n);
        b.run();
      }
      for (bool interleaved : {false, true})
        for (bool with_bias : {false, true}) {
          const uint32_t mv_tr = with_bias ? 4 : 1;  // one token: linear_batched_q8_mv, 2 or 4 rows a group
          RopeKvArgs a;
          a.n_tokens = n;
          a.n_heads = nh;
          a.positions = pt;
          a.cache_rows = true;
          a.interleaved = interleaved;
          LinearOptions o;
          if (with_bias) o.bias = bias;
          LlmOps small(ctx());
          small.tuning.batched_small_n = 1;
          small.tuning.batched_small_tr = 1;
          small.tuning.batched_mv_tr = mv_tr;
          auto run = [&](bool fused) {
            KvCache cache = make_kv_cache(ctx(), 1, nkv, slots, hd);
            fill_u32(ctx(), cache.k, kPoisonNaN);
            fill_u32(ctx(), cache.v, kPoisonNaN);
            auto y = test::poisoned(int64_t(n) * rows);
            Batch b(ctx());
            if (fused) {
              small.linear_batched_q8_rope(b, w, xq, y, n, table, cache.layer(0), a, o.bias);
            } else {
              small.linear_batched_q8(b, w, xq, y, n, o);
              small.rope_kv_append(b, y, table, cache.layer(0), a);
            }
            b.run();
            return std::array<std::vector<uint32_t>, 3>{
                download<uint32_t>(ctx(), y), download<uint32_t>(ctx(), cache.k), download<uint32_t>(ctx(), cache.v)};
          };
          const auto want = run(false), got = run(true);
          const std::string what = std::string(to_string(t)) + " n " + std::to_string(n) +
                                   (interleaved ? " interleaved" : "") + (with_bias ? " bias" : "") + " mv_tr " +
                                   std::to_string(mv_tr);
          EXPECT_EQ(got[0], want[0]) << what << ": q|k|v";
          EXPECT_EQ(got[1], want[1]) << what << ": k cache";
          EXPECT_EQ(got[2], want[2]) << what << ": v cache";
        }
    }
  // A weight whose rows are not the heads', and a RoPE table of another head size.
  auto w =
      upload_weight(ctx(), TensorType::Q8_0, ref::random_weight(TensorType::Q8_0, rows - 2, cols, 1), rows - 2, cols);
  KvCache cache = make_kv_cache(ctx(), 1, nkv, slots, hd);
  Q8Act xq = make_q8_act(ctx(), 2, cols);
  auto y = test::poisoned(2 * rows);
  RopeKvArgs a;
  a.n_tokens = 2;
  a.n_heads = nh;
  Batch b(ctx());
  EXPECT_THROW(ops().linear_batched_q8_rope(b, w, xq, y, 2, table, cache.layer(0), a), Error);
  auto w2 = upload_weight(ctx(), TensorType::Q8_0, ref::random_weight(TensorType::Q8_0, rows, cols, 1), rows, cols);
  ModelConfig m8;
  m8.head_dim = m8.rope_dim = 8;
  auto table8 = make_rope_table(ctx(), m8.rope_inv_freq(), 8, 64);
  EXPECT_THROW(ops().linear_batched_q8_rope(b, w2, xq, y, 2, table8, cache.layer(0), a), Error);
  ops().linear_batched_q8_rope(b, w2, xq, y, 2, table, cache.layer(0), a);  // the right one
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
// tile with a k step that leaves a partial last tile for every type, one invocation per workgroup,
// 256 invocations): token counts around the tile, rows not a multiple of it, a row range of the
// weight, strided x (vec4 and element-wise reads; the gaps hold NaN), strided y with an offset,
// bias and accumulate. Unwritten parts of y must keep their contents.
TEST(LlmLinear, RegTileAwkwardShapes) {
  struct Tiling {
    uint32_t bm, bn, bk, cnst = 1, prefetch = 1, db = 0, tn = 8;  // LlmTuning's matmul_const, _prefetch, _db, _tn
  };
  std::vector<std::pair<Tiling, std::unique_ptr<LlmOps>>> tilings;
  // Two with two workgroup-memory buffers (one of them with override constants), two with 8 x 4
  // register tiles; the last: override constants, no prefetch (the form before the prelude; kept
  // as knobs).
  for (Tiling tl : {Tiling{64, 128, 16, 1, 1, 0, 4}, Tiling{16, 24, 12, 1, 1, 1, 4}, Tiling{8, 8, 48, 0, 1, 1},
                    Tiling{128, 128, 16}, Tiling{64, 128, 8, 0, 0}}) {
    auto o = std::make_unique<LlmOps>(ctx());
    o->tuning.matmul_bm = tl.bm;
    o->tuning.matmul_bn = tl.bn;
    o->tuning.matmul_bk = tl.bk;
    o->tuning.matmul_const = tl.cnst;
    o->tuning.matmul_prefetch = tl.prefetch;
    o->tuning.matmul_db = tl.db;
    o->tuning.matmul_tn = tl.tn;
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
                                     std::to_string(tl.bn) + "x" + std::to_string(tl.bk) + " const " +
                                     std::to_string(tl.cnst) + " prefetch " + std::to_string(tl.prefetch) + " db " +
                                     std::to_string(tl.db) + " tn " + std::to_string(tl.tn);
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
