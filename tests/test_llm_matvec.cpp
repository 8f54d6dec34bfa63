// The one-token matvecs with f32 activations: matvec.wgsl's schedules, its column ranges, the
// gate|up + SwiGLU, RMSNorm and QKV + RoPE variants, and the kx schedule (matvec_kx.wgsl).
#include "ops/llm/tuning.h"
#include "test_llm_util.h"

#include <array>
#include <cmath>
#include <cstring>

using namespace wgc;
using namespace wgc::llm;
using wgc::test::ctx;
using wgc::test::ops;

namespace {

// LlmOps of an adapter with too little workgroup memory to stage x: the matvecs read it from
// global memory.
LlmOps unstaged_ops() {
  LlmCaps c = llm_caps(ctx());
  c.workgroup_storage = 1024;
  return LlmOps(ctx(), c);
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

// The matvec's tuning knobs (rows per invocation group, group size, unroll, workgroup size, weights
// loaded ahead) only change the schedule: every setting gives the reference, for every type, at
// row counts that leave partial groups and workgroups, with bias, x staged in workgroup memory or
// read from global memory (an adapter with little workgroup memory). 45 rows give grids of few
// workgroups (their unroll is 8, kMatvecFewUnroll); 520 rows at 2 per workgroup give 260 (the
// unroll asked for).
TEST(LlmLinear, MatvecTuningsMatchReference) {
  struct Tune {
    uint32_t wg, tpr, unroll, rows, pf;
    int64_t w_rows;
    bool staged = true;
  };
  const Tune tunes[] = {{256, 32, 4, 2, 0, 45},        {128, 16, 1, 3, 1, 45}, {64, 8, 2, 4, 2, 45},
                        {256, 64, 1, 4, 0, 45, false}, {64, 32, 4, 1, 4, 520}, {64, 32, 1, 1, 1, 520},
                        {64, 32, 3, 1, 3, 520, false}};
  for (auto t : kGpuTensorTypes) {
    const int64_t cols = int64_t(block_size(t)) == 256 ? 512 : int64_t(block_size(t)) == 32 ? 4160 : 203;
    auto xv = test::random_floats(size_t(cols), 22);
    auto x = make_tensor(ctx(), {cols}, xv);
    for (int64_t rows : {int64_t(45), int64_t(520)}) {
      auto bytes = ref::random_weight(t, rows, cols, 21);
      auto w = upload_weight(ctx(), t, bytes, rows, cols);
      auto deq = ref::dequantize(t, bytes, rows, cols);
      auto bias_v = test::random_floats(size_t(rows), 23);
      auto bias = make_tensor(ctx(), {rows}, bias_v);
      auto r = ref::linear(deq, cols, xv, 1, 0, rows);
      std::vector<float> want(static_cast<size_t>(rows));
      for (int64_t i = 0; i < rows; ++i) want[size_t(i)] = float(r[size_t(i)] + bias_v[size_t(i)]);
      for (auto tune : tunes) {
        if (tune.w_rows != rows) continue;
        LlmOps o = tune.staged ? LlmOps(ctx()) : unstaged_ops();
        o.tuning.matvec_wg = tune.wg;
        o.tuning.matvec_tpr = tune.tpr;
        o.tuning.matvec_unroll = tune.unroll;
        o.tuning.matvec_rows = tune.rows;
        o.tuning.matvec_pf = tune.pf;
        auto y = test::poisoned(rows);
        LinearOptions lo;
        lo.bias = bias;
        Batch b(ctx());
        o.linear(b, w, x, y, 1, lo, LinearVersion::Shared);
        b.run();
        EXPECT_LE(test::rel_error(download<float>(ctx(), y), want), 1e-5)
            << to_string(t) << " " << rows << " rows, wg " << tune.wg << " tpr " << tune.tpr << " unroll "
            << tune.unroll << " rows " << tune.rows << " pf " << tune.pf << (tune.staged ? "" : " unstaged");
      }
    }
  }
}

// One-token matvecs with their columns split into ranges (matvec_split: partial sums, then a pass
// adding them in order, with the bias, a y offset and accumulation) against the reference, float
// types at awkward widths, x staged per range or read from global memory, with the prefetch; the
// rest of y untouched; the same bits on a second run; below matvec_split_cols nothing is split.
// (An adapter with little workgroup memory reads x from global memory.)
TEST(LlmLinear, MatvecSplitColumnsMatchesReference) {
  struct Tune {
    uint32_t splits, tpr, unroll, rows, pf;
    bool staged;
  };
  const Tune tunes[] = {{2, 32, 2, 2, 2, true}, {3, 8, 2, 1, 0, true}, {5, 16, 1, 3, 1, false}, {4, 8, 1, 2, 0, true}};
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
        LlmOps o = tune.staged ? LlmOps(ctx()) : unstaged_ops();
        o.tuning.matvec_split = tune.splits;
        o.tuning.matvec_split_cols = 1000;
        o.tuning.matvec_tpr = tune.tpr;
        o.tuning.matvec_unroll = tune.unroll;
        o.tuning.matvec_rows = tune.rows;
        o.tuning.matvec_pf = tune.pf;
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
    // x staged in workgroup memory with the norm's scale after the dot products (the late norm),
    // or read from global memory (an adapter with little workgroup memory), with the weights'
    // prefetch
    for (auto tune : {std::array<uint32_t, 6>{256, 32, 2, 2, 1, 0}, std::array<uint32_t, 6>{64, 8, 2, 4, 0, 1},
                      std::array<uint32_t, 6>{256, 32, 4, 2, 1, 2}, std::array<uint32_t, 6>{128, 16, 2, 3, 0, 0}}) {
      LlmOps o = tune[4] ? LlmOps(ctx()) : unstaged_ops();
      o.tuning.matvec_wg = tune[0];
      o.tuning.matvec_tpr = tune[1];
      o.tuning.matvec_unroll = tune[2];
      o.tuning.matvec_rows = tune[3];
      o.tuning.matvec_pf = tune[5];
      const std::string what = std::string(to_string(t)) + " wg " + std::to_string(tune[0]) + " staged " +
                               std::to_string(tune[4]) + " pf " + std::to_string(tune[5]);
      ASSERT_TRUE(o.matvec_fusions(TensorType::F32, cols).norm) << what;
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
  EXPECT_FALSE(ops().matvec_fusions(TensorType::F32, 6).norm);  // not a multiple of 4
  {
    // The GLU fusion's answer is the matvec's own: where 32 row groups cannot share 16 rows (the
    // tuning test_llm_model's F16DecodeKnobsMatchToo runs on a GPU), rms_norm_swiglu refuses and
    // the layer plan must not pick it.
    LlmOps o(ctx());
    apply_tuning(o.tuning, "matvec_kx=0/matvec_wg=64/matvec_tpr=2/swiglu_wg_rows=16");
    auto gu = upload_weight(ctx(), TensorType::F16, ref::random_weight(TensorType::F16, 96, 16, 2), 96, 16);
    EXPECT_FALSE(o.matvec_fusions(TensorType::F16, 16, nullptr, 96).glu);
    auto out = make_tensor(ctx(), {48});
    Batch bg(ctx());
    EXPECT_THROW(o.rms_norm_swiglu(bg, make_tensor(ctx(), {16}), make_tensor(ctx(), {16}), 1e-5f, gu, out), wgc::Error);
    // The default tuning takes it (and runs it).
    EXPECT_TRUE(ops().matvec_fusions(TensorType::F16, 16, nullptr, 96).glu);
    ops().rms_norm_swiglu(bg, make_tensor(ctx(), {16}), make_tensor(ctx(), {16}), 1e-5f, gu, out);
    EXPECT_FALSE(o.matvec_fusions(TensorType::F16, 16, nullptr, 94).glu);  // 47 gate rows: not whole groups
  }
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
// workgroup memory (the late norm, the weights prefetched) or not, in a second layer of the cache.
TEST(LlmLinear, QkvRopeMatchesTwoPasses) {
  const QkvRopeCase q;
  const int64_t rows = q.rows;
  for (auto t : {TensorType::F32, TensorType::F16, TensorType::BF16}) {
    auto w = q.weight(t);
    for (int variant = 0; variant < 4; ++variant) {
      const bool interleaved = variant == 1, dyn = variant >= 2;
      LlmOps o = variant == 2 ? unstaged_ops() : LlmOps(ctx());
      if (variant == 1) o.tuning.matvec_tpr = 8;
      o.tuning.matvec_pf = variant == 3 ? 2 : 0;
      ASSERT_TRUE(o.matvec_fusions(TensorType::F32, q.cols).rope);
      const std::string what = std::string(to_string(t)) + (interleaved ? " interleaved" : " neox") +
                               (dyn ? " position read on the GPU" : " fixed position") +
                               (variant == 2 ? ", x from global memory" : ", x staged") +
                               (variant == 3 ? ", prefetch" : "");
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
// several tiles, kx_wide_wg's workgroups from 12,288 columns; with kx_groups set, the narrow widths'
// grids are doubled (kKxGroupsCpl) and the wide ones' not.
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
    // 2,048 columns take one (kKxGroupsCpl doubles its grids)
    EXPECT_EQ(d.kx_chunks(TensorType::F16, 2048), 1u);
    EXPECT_EQ(d.kx_chunks(TensorType::F16, 4096), 2u);
    EXPECT_EQ(d.kx_chunks(TensorType::F16, 14336), most >= 512 ? 4u : 7u);
  }
  struct Tune {
    uint32_t wg, rows, loads, groups;
  };
  const Tune tunes[] = {{256, 16, 16, 0}, {64, 4, 4, 3},   {128, 32, 8, 0}, {32, 2, 16, 2},
                        {64, 8, 2, 0},    {256, 8, 28, 0}, {32, 4, 8, 3}};
  // the kx schedule with this tune's knobs (kx_wide_wg twice kx_wg, at most 256: 12,290 F16 or
  // BF16 columns take 7 chunks per invocation at 256, more at fewer invocations, as F32 at 256)
  auto set_kx = [](LlmTuning& tn, const Tune& tune) {
    tn.matvec_kx = 7;
    tn.kx_wide_wg = std::min(tune.wg * 2, 256u);
    tn.kx_wg = tune.wg;
    tn.kx_rows = tune.rows;
    tn.kx_loads = tune.loads;
    tn.kx_groups = tune.groups;
  };
  const float eps = 1e-5f;
  for (auto t : {TensorType::F32, TensorType::F16, TensorType::BF16}) {
    for (int64_t cols : {int64_t(203), int64_t(1000), int64_t(12290)}) {
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
                                 std::to_string(tune.loads) + " groups " + std::to_string(tune.groups);
        if (!o.kx_runs(LlmOps::kKxPlain, t, rows, cols, LinearVersion::Subgroup)) {
          // more than 8 chunks per invocation (the widest weights at small workgroups)
          EXPECT_GT(o.kx_chunks(t, cols), 8u) << what;
          continue;
        }
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
