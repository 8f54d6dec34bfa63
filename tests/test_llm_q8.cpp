// The 8-bit-activation path: quantizing activations (plain, after RMSNorm, after SwiGLU), the
// integer-dot-product matvec and matmul for Q4_0 / Q8_0 / Q4_K / Q6_K, the fused gate|up + SwiGLU
// matvec, and decode attention with a quantized output (at a fixed and at a GPU-read position).
#include "test_llm_util.h"

#include <cmath>
#include <cstring>
#include <functional>

using namespace wgc;
using namespace wgc::llm;
using wgc::test::ctx;
using wgc::test::ops;

namespace {

// The activations a Q8Act holds for n tokens, as floats (q * d); checks that every block's two
// sums are its quants' sums and that no quant is -128.
std::vector<float> dequant(const Q8Act& a, int n) {
  auto qs = download<uint32_t>(ctx(), a.qs);
  auto ds = download<uint32_t>(ctx(), a.ds);
  const int64_t nb = a.cols / 32;
  std::vector<float> out(size_t(n) * size_t(a.cols));
  for (int64_t b = 0; b < n * nb; ++b) {
    float d;
    std::memcpy(&d, &ds[size_t(2 * b)], 4);
    const uint32_t packed = ds[size_t(2 * b + 1)];
    const int lo_want = int16_t(packed & 0xffff), hi_want = int16_t(packed >> 16);
    int lo = 0, hi = 0;
    for (int i = 0; i < 32; ++i) {
      const int q = int8_t(qs[size_t(b * 8 + i / 4)] >> (8 * (i % 4)));
      EXPECT_NE(q, -128) << "block " << b;
      (i < 16 ? lo : hi) += q;
      out[size_t(b * 32 + i)] = float(q) * d;
    }
    EXPECT_EQ(lo, lo_want) << "block " << b;
    EXPECT_EQ(hi, hi_want) << "block " << b;
  }
  return out;
}

// |got - want| within one quantization step (of want's block) plus a rounding margin: a value on
// a rounding boundary may go either way when the GPU's f32 arithmetic differs in the last bit.
void expect_quantized(const std::vector<float>& got, const std::vector<float>& exact, const std::string& what) {
  ASSERT_EQ(got.size(), exact.size()) << what;
  auto want = ref::quantize_q8_act(exact);
  size_t bad = 0;
  for (size_t b = 0; b < exact.size(); b += 32) {
    float amax = 0;
    for (size_t i = b; i < b + 32; ++i) amax = std::max(amax, std::fabs(exact[i]));
    const float step = amax / 127.0f;
    for (size_t i = b; i < b + 32; ++i)
      if (!(std::fabs(got[i] - want[i]) <= step * 1.001f + 1e-6f * amax)) ++bad;
  }
  EXPECT_EQ(bad, 0u) << what;
}

// A random weight of type t on the GPU, its dequantized values and a random bias for it.
struct TestWeight {
  GpuWeight w;
  std::vector<double> deq;
  std::vector<float> bias_v;
  Tensor bias;
};
TestWeight test_weight(TensorType t, int64_t rows, int64_t cols, uint32_t seed) {
  auto bytes = ref::random_weight(t, rows, cols, seed);
  auto bias_v = test::random_floats(size_t(rows), seed + 1);
  return {upload_weight(ctx(), t, bytes, rows, cols), ref::dequantize(t, bytes, rows, cols), bias_v,
          make_tensor(ctx(), {rows}, bias_v)};
}
// Rows x cols around the kernels' tiles: a small and a large shape per block size (K-quants: last_k).
std::vector<std::pair<int64_t, int64_t>> linear_shapes(TensorType t, int64_t last_k) {
  if (int64_t(block_size(t)) == 256) return {{37, 256}, {45, last_k}};
  return {{37, 96}, {45, 4160}};
}

std::vector<float> poisoned_q8(const Q8Act& a) {
  fill_u32(ctx(), a.qs, kPoisonNaN);
  fill_u32(ctx(), a.ds, kPoisonNaN);
  return {};
}

}  // namespace

TEST(LlmQ8, QuantizeNormSwigluMatchReference) {
  for (int64_t cols : {32, 96, 4160}) {
    const int n = 5;
    auto xv = test::random_floats(size_t(n) * size_t(cols + 7), uint32_t(cols));
    for (int64_t i = 0; i < cols; ++i) xv[size_t(2 * (cols + 7) + 3 + i)] = 0;  // an all-zero token
    auto x = make_tensor(ctx(), {int64_t(xv.size())}, xv);
    auto wv = test::random_floats(size_t(cols), 5, 0.5f, 1.5f);
    auto w = make_tensor(ctx(), {cols}, wv);
    Q8Act a = make_q8_act(ctx(), n, cols);
    // Token t at x[t * (cols + 7) + 3 ..].
    std::vector<float> rows;
    for (int t = 0; t < n; ++t)
      rows.insert(rows.end(), xv.begin() + t * (cols + 7) + 3, xv.begin() + t * (cols + 7) + 3 + cols);
    const std::string at = " cols " + std::to_string(cols);
    {
      poisoned_q8(a);
      Batch b(ctx());
      ops().quantize_q8(b, x, a, n, cols + 7, 3);
      b.run();
      expect_quantized(dequant(a, n), rows, "quantize" + at);
    }
    {
      poisoned_q8(a);
      Batch b(ctx());
      ops().rms_norm_q8(b, x, w, a, n, 1e-5f, cols + 7, 3);
      b.run();
      auto want = ref::rms_norm(rows, wv, n, int(cols), 1e-5f);
      expect_quantized(dequant(a, n), want, "rms_norm" + at);
    }
    {
      // gate at 3.., up at 3 + cols/2.. of rows of cols + 7 (cols / 2 outputs, when a block multiple)
      if ((cols / 2) % 32) continue;
      Q8Act h = make_q8_act(ctx(), n, cols / 2);
      poisoned_q8(h);
      Batch b(ctx());
      ops().swiglu_q8(b, Tensor(x), cols + 7, cols / 2, h, n);  // x_offset 0: gate at t * (cols + 7)
      b.run();
      std::vector<float> g, u;
      for (int t = 0; t < n; ++t) {
        g.insert(g.end(), xv.begin() + t * (cols + 7), xv.begin() + t * (cols + 7) + cols / 2);
        u.insert(u.end(), xv.begin() + t * (cols + 7) + cols / 2, xv.begin() + t * (cols + 7) + cols);
      }
      expect_quantized(dequant(h, n), ref::swiglu(g, u), "swiglu" + at);
    }
  }
}

// Rows split between workgroups (tuning.quant_groups, for steps of few tokens): the bits of one
// workgroup per row, for plain quantization, RMSNorm (its sum of squares redone by each part, also
// with the serving engine's fixed workgroup) and SwiGLU, one token and three.
TEST(LlmQ8, QuantizeSplitRowsGiveTheSameBits) {
  const int64_t cols = 4160;  // 1040 words: 5 passes of 256, the last partial
  const int n = 3;
  auto x = make_tensor(ctx(), {n * 2 * cols}, test::random_floats(size_t(n * 2 * cols), 77));
  auto w = make_tensor(ctx(), {cols}, test::random_floats(size_t(cols), 78, 0.5f, 1.5f));
  LlmOps one(ctx()), split(ctx());
  one.tuning.quant_groups = 0;
  split.tuning.quant_groups = 8;
  for (int tokens : {1, n})
    for (int mode = 0; mode < 4; ++mode) {
      auto run = [&](const LlmOps& o) {
        Q8Act a = make_q8_act(ctx(), n, cols);
        poisoned_q8(a);
        Batch b(ctx());
        if (mode == 0) o.quantize_q8(b, x, a, tokens, 2 * cols, 5);
        if (mode == 1) o.rms_norm_q8(b, x, w, a, tokens, 1e-5f, 2 * cols, 5);
        if (mode == 2) o.rms_norm_q8(b, x, w, a, tokens, 1e-5f, 2 * cols, 5, kBatchedQuantWg);
        if (mode == 3) o.swiglu_q8(b, x, 2 * cols, cols, a, tokens);
        b.run();
        auto qs = download<uint32_t>(ctx(), a.qs), ds = download<uint32_t>(ctx(), a.ds);
        qs.resize(size_t(tokens * cols / 4));
        ds.resize(size_t(tokens * cols / 16));
        qs.insert(qs.end(), ds.begin(), ds.end());
        return qs;
      };
      EXPECT_EQ(run(split), run(one)) << "mode " << mode << ", " << tokens << " tokens";
    }
}

// linear_q8 against the reference over the quantized x the kernel saw (so only the dot products
// and scales are checked), every type, one token (matvec) and more (matmul) at token and row
// counts around the tiles, with a row range, strided y, bias and accumulation; four tilings.
TEST(LlmQ8, LinearMatchesReference) {
  struct Tiling {
    uint32_t bm, bn, mv_wg, mv_tpr, mv_rows, units, min_groups, mv_pf;
  };
  std::vector<std::pair<Tiling, std::unique_ptr<LlmOps>>> tilings;
  // The third shrinks every tile (mmq_min_groups) down to 16 x 32; all but the first load the
  // matvec's first units ahead (mvq_pf, for K-quants too).
  for (Tiling tl : {Tiling{64, 128, 256, 32, 2, 4, 0, 0}, Tiling{16, 40, 64, 8, 3, 2, 0, 2},
                    Tiling{64, 128, 256, 32, 2, 1, 100000, 1}, Tiling{64, 128, 64, 16, 1, 2, 0, 2}}) {
    auto o = std::make_unique<LlmOps>(ctx());
    o->tuning.mmq_bm = tl.bm;
    o->tuning.mmq_bn = tl.bn;
    o->tuning.mmq_units = tl.units;
    o->tuning.mmq_min_groups = tl.min_groups;
    o->tuning.mvq_wg = tl.mv_wg;
    o->tuning.mvq_tpr = tl.mv_tpr;
    o->tuning.mvq_rows = tl.mv_rows;
    o->tuning.mvq_pf = tl.mv_pf;
    o->tuning.mvq_kq_pf = 0;  // mvq_pf for K-quants too
    tilings.emplace_back(tl, std::move(o));
  }
  for (auto t : {TensorType::Q4_0, TensorType::Q8_0, TensorType::Q4_K, TensorType::Q6_K}) {
    for (auto [rows, cols] : linear_shapes(t, 768)) {
      auto [w, deq, bias_v, bias] = test_weight(t, rows, cols, 51);
      for (int n : {1, 3, 70}) {
        auto xv = test::random_floats(size_t(n) * size_t(cols), uint32_t(n + 53));
        auto x = make_tensor(ctx(), {int64_t(xv.size())}, xv);
        Q8Act xa = make_q8_act(ctx(), n, cols);
        {
          Batch b(ctx());
          ops().quantize_q8(b, x, xa, n);
          b.run();
        }
        auto xq = dequant(xa, n);
        for (int variant = 0; variant < 2; ++variant) {
          const bool plain = variant == 0;
          const int64_t row0 = plain ? 0 : 3, nr = plain ? rows : rows - 5, ys = plain ? nr : nr + 9,
                        yoff = plain ? 0 : 5;
          const size_t ny = size_t((n - 1) * ys + yoff + nr + 6);
          auto y0 = test::random_floats(ny, 59);
          auto r = ref::linear(deq, cols, xq, n, row0, nr);
          std::vector<float> want = y0;
          std::vector<bool> written(ny, false);
          for (int tt = 0; tt < n; ++tt)
            for (int64_t i = 0; i < nr; ++i) {
              const size_t yi = size_t(tt * ys + yoff + i);
              want[yi] = plain ? float(r[size_t(tt * nr + i)])
                               : float(double(y0[yi]) + r[size_t(tt * nr + i)] + bias_v[size_t(row0 + i)]);
              written[yi] = true;
            }
          for (auto& [tl, o] : tilings) {
            const std::string what = std::string(to_string(t)) + " " + std::to_string(rows) + "x" +
                                     std::to_string(cols) + " n=" + std::to_string(n) + " variant " +
                                     std::to_string(variant) + " tile " + std::to_string(tl.bm) + "x" +
                                     std::to_string(tl.bn) + " units " + std::to_string(tl.units) + " min_groups " +
                                     std::to_string(tl.min_groups) + " pf " + std::to_string(tl.mv_pf);
            Tensor y = plain ? test::poisoned(int64_t(ny)) : make_tensor(ctx(), {int64_t(ny)}, y0);
            LinearOptions lo;
            lo.row0 = row0;
            lo.rows = nr;
            lo.y_stride = ys;
            lo.y_offset = yoff;
            if (!plain) lo.bias = bias;
            lo.accumulate = !plain;
            Batch b(ctx());
            o->linear_q8(b, w, xa, y, n, lo);
            b.run();
            auto got = download<float>(ctx(), y);
            got.resize(ny);
            test::expect_written_and_gaps(got, want, written, y0, !plain, 2e-5, what);
          }
        }
      }
    }
  }
}

TEST(LlmQ8, LinearSwigluMatchesReference) {
  for (auto t : {TensorType::Q4_0, TensorType::Q8_0, TensorType::Q4_K, TensorType::Q6_K}) {
    const int64_t half = 96, cols = int64_t(block_size(t)) == 256 ? 512 : 160;
    auto bytes = ref::random_weight(t, 2 * half, cols, 61);
    auto w = upload_weight(ctx(), t, bytes, 2 * half, cols);
    auto deq = ref::dequantize(t, bytes, 2 * half, cols);
    auto xv = test::random_floats(size_t(cols), 62);
    auto x = make_tensor(ctx(), {cols}, xv);
    Q8Act xa = make_q8_act(ctx(), 1, cols), out = make_q8_act(ctx(), 1, half);
    poisoned_q8(out);
    Batch b(ctx());
    ops().quantize_q8(b, x, xa, 1);
    ops().linear_swiglu_q8(b, w, xa, out);
    b.run();
    auto xq = dequant(xa, 1);
    auto g = test::to_float(ref::linear(deq, cols, xq, 1, 0, half));
    auto u = test::to_float(ref::linear(deq, cols, xq, 1, half, half));
    expect_quantized(dequant(out, 1), ref::swiglu(g, u), std::string(to_string(t)));
  }
  auto w = upload_weight(ctx(), TensorType::Q4_0, ref::random_weight(TensorType::Q4_0, 64, 32, 1), 64, 32);
  Q8Act xa = make_q8_act(ctx(), 1, 32), out = make_q8_act(ctx(), 1, 64);
  Batch b(ctx());
  EXPECT_THROW(ops().linear_swiglu_q8(b, w, xa, out), Error);  // 64 rows are not gate|up of 64
}

// x quantized by ref::quantize_q8_act after ref::rms_norm: what rms_norm_linear_q8's workgroups
// compute (1 token).
std::vector<float> norm_quantized(const std::vector<float>& x, const std::vector<float>& w, int64_t cols) {
  return ref::quantize_q8_act(ref::rms_norm(std::vector<float>(x.begin(), x.begin() + cols), w, 1, int(cols), 1e-5f));
}

// Each output within a few quantization flips of the reference: the kernels add the sum of
// squares in another order than the reference, so a value on a rounding boundary may round the
// other way (an input element off by its block's step d, at most max d over the blocks).
void expect_near_flips(const std::vector<float>& got, const std::vector<double>& want, const std::vector<double>& deq,
                       int64_t cols, int64_t row0, const std::vector<float>& xq, const std::string& what) {
  float dmax = 0;
  for (float v : xq) dmax = std::max(dmax, std::fabs(v) / 127.f);
  size_t bad = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    double scale = 0, wmax = 0;
    for (int64_t j = 0; j < cols; ++j) {
      const double wv = deq[size_t((row0 + int64_t(i)) * cols + j)];
      scale += std::fabs(wv * xq[size_t(j)]);
      wmax = std::max(wmax, std::fabs(wv));
    }
    if (!(std::fabs(double(got[i]) - want[i]) <= 1e-5 * scale + 3 * dmax * wmax)) ++bad;
  }
  EXPECT_EQ(bad, 0u) << what;
}

// rms_norm_linear_q8 (the RMSNorm and quantization in every workgroup) against the reference,
// every type, at awkward sizes (one pass and several per workgroup), with a row range, bias and
// accumulation, in four schedules (unrolled, small workgroups; small workgroups with weights
// loaded ahead (a whole step's for small units, one for Q6_K's); the defaults).
TEST(LlmQ8, NormLinearMatchesReference) {
  std::vector<std::pair<std::string, std::unique_ptr<LlmOps>>> schedules;
  for (const char* spec : {"mvq_wg=256,mvq_tpr=32,mvq_rows=2,mvq_unroll=1,mvq_pf=0",
                           "mvq_wg=64,mvq_tpr=8,mvq_rows=3,mvq_unroll=3,mvq_pf=0",
                           "mvq_wg=64,mvq_tpr=8,mvq_rows=3,mvq_unroll=3,mvq_pf=2,mvq_kq_pf=0", ""}) {
    auto o = std::make_unique<LlmOps>(ctx());
    apply_tuning(o->tuning, spec);
    schedules.emplace_back(spec, std::move(o));
  }
  for (auto t : {TensorType::Q4_0, TensorType::Q8_0, TensorType::Q4_K, TensorType::Q6_K}) {
    for (auto [rows, cols] : linear_shapes(t, 4352)) {
      auto [w, deq, bias_v, bias] = test_weight(t, rows, cols, 71);
      auto xv = test::random_floats(size_t(cols + 13), 73, -2.f, 3.f);  // past cols: not read
      auto x = make_tensor(ctx(), {int64_t(xv.size())}, xv);
      auto nv = test::random_floats(size_t(cols), 74, 0.5f, 1.5f);
      auto nw = make_tensor(ctx(), {cols}, nv);
      auto xq = norm_quantized(xv, nv, cols);
      for (int variant = 0; variant < 2; ++variant) {
        const bool plain = variant == 0;
        const int64_t row0 = plain ? 0 : 3, nr = plain ? rows : rows - 5, yoff = plain ? 0 : 5;
        const size_t ny = size_t(yoff + nr + 6);
        auto y0 = test::random_floats(ny, 75);
        auto r = ref::linear(deq, cols, xq, 1, row0, nr);
        for (int64_t i = 0; i < nr; ++i)
          if (!plain) r[size_t(i)] += double(y0[size_t(yoff + i)]) + bias_v[size_t(row0 + i)];
        for (auto& [spec, o] : schedules) {
          const std::string what = std::string(to_string(t)) + " " + std::to_string(rows) + "x" + std::to_string(cols) +
                                   " variant " + std::to_string(variant) + " " + spec;
          ASSERT_TRUE(o->matvec_q8_fusions(cols).norm) << what;
          Tensor y = plain ? test::poisoned(int64_t(ny)) : make_tensor(ctx(), {int64_t(ny)}, y0);
          LinearOptions lo;
          lo.row0 = row0;
          lo.rows = nr;
          lo.y_offset = yoff;
          if (!plain) lo.bias = bias;
          lo.accumulate = !plain;
          Batch b(ctx());
          o->rms_norm_linear_q8(b, x, nw, 1e-5f, w, y, lo);
          b.run();
          auto got = download<float>(ctx(), y);
          expect_near_flips(std::vector<float>(got.begin() + yoff, got.begin() + yoff + nr), r, deq, cols, row0, xq,
                            what);
          size_t bad_gaps = 0;  // outside the rows: untouched (poison, or y0)
          for (size_t i = 0; i < ny; ++i)
            if (int64_t(i) < yoff || int64_t(i) >= yoff + nr) bad_gaps += plain ? !std::isnan(got[i]) : got[i] != y0[i];
          EXPECT_EQ(bad_gaps, 0u) << what;
        }
      }
    }
  }
}

// rms_norm_swiglu_q8 against the reference (a flip in x moves gate and up sums far less than
// one of the output's quantization steps, which expect_quantized allows).
TEST(LlmQ8, NormSwigluMatchesReference) {
  for (const char* spec : {"", "mvq_pf=1,mvq_kq_sw_tpr=8", "mvq_sw_tpr=32,mvq_kq_sw_tpr=32,mvq_pf=0",
                           "mvq_sw_tpr=16,mvq_pf=2,mvq_kq_pf=2"})
    for (auto t : {TensorType::Q4_0, TensorType::Q8_0, TensorType::Q4_K, TensorType::Q6_K}) {
      LlmOps o(ctx());
      apply_tuning(o.tuning, spec);
      const int64_t half = 96, cols = int64_t(block_size(t)) == 256 ? 512 : 160;
      auto bytes = ref::random_weight(t, 2 * half, cols, 81);
      auto w = upload_weight(ctx(), t, bytes, 2 * half, cols);
      auto deq = ref::dequantize(t, bytes, 2 * half, cols);
      auto xv = test::random_floats(size_t(cols), 82);
      auto x = make_tensor(ctx(), {cols}, xv);
      auto nv = test::random_floats(size_t(cols), 83, 0.5f, 1.5f);
      auto nw = make_tensor(ctx(), {cols}, nv);
      auto xq = norm_quantized(xv, nv, cols);
      Q8Act out = make_q8_act(ctx(), 1, half);
      poisoned_q8(out);
      Batch b(ctx());
      o.rms_norm_swiglu_q8(b, x, nw, 1e-5f, w, out);
      b.run();
      auto g = test::to_float(ref::linear(deq, cols, xq, 1, 0, half));
      auto u = test::to_float(ref::linear(deq, cols, xq, 1, half, half));
      expect_quantized(dequant(out, 1), ref::swiglu(g, u), std::string(to_string(t)) + " " + spec);
    }
}

// QKV rows and cache layer `layer` of a poisoned cache as `record` leaves them (bits of qkv, k, v).
std::vector<std::vector<uint32_t>> qkv_and_cache(
    int64_t rows, int layers, int layer, int nkv, int max_ctx, int hd,
    const std::function<void(Batch&, const Tensor&, const KvLayer&)>& record) {
  auto qkv = test::poisoned(rows);
  auto cache = make_kv_cache(ctx(), layers, nkv, max_ctx, hd);
  fill_u32(ctx(), cache.k, kPoisonNaN);
  fill_u32(ctx(), cache.v, kPoisonNaN);
  Batch b(ctx());
  record(b, qkv, cache.layer(layer));
  b.run();
  return {download<uint32_t>(ctx(), qkv), download<uint32_t>(ctx(), cache.k), download<uint32_t>(ctx(), cache.v)};
}
// The fused result equals the two passes' bit for bit, which wrote every qkv row and one cache row
// of each kv head (rows either path leaves alone stay poisoned).
void expect_same_qkv(const std::vector<std::vector<uint32_t>>& fused, const std::vector<std::vector<uint32_t>>& two,
                     int64_t rows, int64_t kv_row, const std::string& what) {
  EXPECT_EQ(fused[0], two[0]) << what << ": qkv";
  EXPECT_EQ(fused[1], two[1]) << what << ": k cache";
  EXPECT_EQ(fused[2], two[2]) << what << ": v cache";
  for (int i = 0; i < 3; ++i) {
    size_t written = 0;
    for (uint32_t v : two[size_t(i)]) written += v != kPoisonNaN;
    EXPECT_EQ(written, size_t(i == 0 ? rows : kv_row)) << what << " part " << i;
  }
}

// rms_norm_qkv_rope_q8 (RoPE and the cache append in the QKV matvec) against its two passes,
// rms_norm_linear_q8 then rope_kv_append: bit-identical qkv and caches (poisoned first, so rows
// either path leaves alone must stay so), every type, both pair layouts, a fixed position and
// one read on the GPU with a separate cache row, in a second layer of the cache.
TEST(LlmQ8, QkvRopeMatchesTwoPasses) {
  const int nh = 4, nkv = 2, hd = 64, max_ctx = 12;
  const int64_t rows = int64_t(nh + 2 * nkv) * hd;
  std::vector<double> inv(hd / 2);
  for (int i = 0; i < hd / 2; ++i) inv[size_t(i)] = std::pow(10000.0, -2.0 * i / hd);
  auto table = make_rope_table(ctx(), inv, hd, 16);
  const std::vector<uint32_t> pos_rows = {9, 4};  // position 9 into cache row 4
  auto pos = make_tensor(ctx(), {2}, DType::U32, std::as_bytes(std::span(pos_rows)));
  for (auto t : {TensorType::Q4_0, TensorType::Q8_0, TensorType::Q4_K, TensorType::Q6_K}) {
    const int64_t cols = int64_t(block_size(t)) == 256 ? 512 : 160;
    auto w = upload_weight(ctx(), t, ref::random_weight(t, rows, cols, 91), rows, cols);
    auto x = make_tensor(ctx(), {cols}, test::random_floats(size_t(cols), 92));
    auto nw = make_tensor(ctx(), {cols}, test::random_floats(size_t(cols), 93, 0.5f, 1.5f));
    for (bool interleaved : {false, true})
      for (bool dyn : {false, true}) {
        const std::string what = std::string(to_string(t)) + (interleaved ? " interleaved" : " neox") +
                                 (dyn ? " position read on the GPU" : " fixed position");
        RopeKvArgs a;
        a.n_heads = nh;
        a.pos0 = 6;
        a.interleaved = interleaved;
        if (dyn) {
          a.positions = pos;
          a.cache_rows = true;
        }
        const auto fused =
            qkv_and_cache(rows, 2, 1, nkv, max_ctx, hd, [&](Batch& b, const Tensor& qkv, const KvLayer& c) {
              ops().rms_norm_qkv_rope_q8(b, x, nw, 1e-5f, w, qkv, table, c, a);
            });
        const auto two =
            qkv_and_cache(rows, 2, 1, nkv, max_ctx, hd, [&](Batch& b, const Tensor& qkv, const KvLayer& c) {
              ops().rms_norm_linear_q8(b, x, nw, 1e-5f, w, qkv);
              ops().rope_kv_append(b, qkv, table, c, a);
            });
        expect_same_qkv(fused, two, rows, nkv * hd, what);
      }
  }
  auto w = upload_weight(ctx(), TensorType::Q8_0, ref::random_weight(TensorType::Q8_0, rows - 2, 64, 1), rows - 2, 64);
  auto cache = make_kv_cache(ctx(), 1, nkv, max_ctx, hd);
  RopeKvArgs a;
  a.n_heads = nh;
  Batch b(ctx());
  auto x = make_tensor(ctx(), {64});
  EXPECT_THROW(ops().rms_norm_qkv_rope_q8(b, x, x, 1e-5f, w, test::poisoned(rows), table, cache.layer(0), a),
               Error);  // rows are not the q, k and v heads
}

// The same for a QKV weight in two parts of different types (llama.cpp's Q4_K_M: q|k Q4_K, v
// Q6_K), one rms_norm_qkv_rope_q8 per part, against rms_norm_linear_q8 per part then
// rope_kv_append, without weights loaded ahead, with them (K-quants too), and with 64 invocations
// per row (both paths).
TEST(LlmQ8, QkvRopeInPartsMatchesTwoPasses) {
  const int nh = 4, nkv = 2, hd = 64, max_ctx = 12;
  const int64_t cols = 512, rows_qk = int64_t(nh + nkv) * hd, rows_v = int64_t(nkv) * hd, rows = rows_qk + rows_v;
  std::vector<double> inv(hd / 2);
  for (int i = 0; i < hd / 2; ++i) inv[size_t(i)] = std::pow(10000.0, -2.0 * i / hd);
  auto table = make_rope_table(ctx(), inv, hd, 16);
  const std::vector<uint32_t> pos_rows = {9, 4};
  auto pos = make_tensor(ctx(), {2}, DType::U32, std::as_bytes(std::span(pos_rows)));
  auto x = make_tensor(ctx(), {cols}, test::random_floats(size_t(cols), 95));
  auto nw = make_tensor(ctx(), {cols}, test::random_floats(size_t(cols), 96, 0.5f, 1.5f));
  const std::pair<TensorType, TensorType> types[] = {{TensorType::Q4_K, TensorType::Q6_K},
                                                     {TensorType::Q4_0, TensorType::Q8_0}};
  for (const char* spec : {"mvq_pf=0", "mvq_pf=2,mvq_kq_pf=0", "mvq_tpr=64"})
    for (auto [tqk, tv] : types) {
      LlmOps o(ctx());
      apply_tuning(o.tuning, spec);
      const GpuWeight wqk = upload_weight(ctx(), tqk, ref::random_weight(tqk, rows_qk, cols, 97), rows_qk, cols);
      const GpuWeight wv = upload_weight(ctx(), tv, ref::random_weight(tv, rows_v, cols, 98), rows_v, cols);
      const std::string what = std::string(to_string(tqk)) + "+" + std::string(to_string(tv)) + " " + spec;
      RopeKvArgs a;
      a.n_heads = nh;
      a.positions = pos;
      a.cache_rows = true;
      const auto fused =
          qkv_and_cache(rows, 1, 0, nkv, max_ctx, hd, [&](Batch& b, const Tensor& qkv, const KvLayer& c) {
            o.rms_norm_qkv_rope_q8(b, x, nw, 1e-5f, wqk, qkv, table, c, a, 0);
            o.rms_norm_qkv_rope_q8(b, x, nw, 1e-5f, wv, qkv, table, c, a, rows_qk);
          });
      const auto two = qkv_and_cache(rows, 1, 0, nkv, max_ctx, hd, [&](Batch& b, const Tensor& qkv, const KvLayer& c) {
        LinearOptions lo;
        o.rms_norm_linear_q8(b, x, nw, 1e-5f, wqk, qkv, lo);
        lo.y_offset = rows_qk;
        o.rms_norm_linear_q8(b, x, nw, 1e-5f, wv, qkv, lo);
        o.rope_kv_append(b, qkv, table, c, a);
      });
      expect_same_qkv(fused, two, rows, nkv * hd, what);
      Batch b(ctx());
      auto cache = make_kv_cache(ctx(), 1, nkv, max_ctx, hd);
      EXPECT_THROW(
          o.rms_norm_qkv_rope_q8(b, x, nw, 1e-5f, wv, test::poisoned(rows), table, cache.layer(0), a, rows_qk + 1),
          Error);  // not a head boundary
      EXPECT_THROW(
          o.rms_norm_qkv_rope_q8(b, x, nw, 1e-5f, wqk, test::poisoned(rows), table, cache.layer(0), a, rows_v + hd),
          Error);  // past the q, k and v rows
    }
}

TEST(LlmQ8, BadInputsAreErrors) {
  auto f16 = upload_weight(ctx(), TensorType::F16, ref::random_weight(TensorType::F16, 4, 32, 1), 4, 32);
  auto q4 = upload_weight(ctx(), TensorType::Q4_0, ref::random_weight(TensorType::Q4_0, 4, 64, 1), 4, 64);
  Q8Act x = make_q8_act(ctx(), 2, 32);
  auto y = make_tensor(ctx(), {16});
  Batch b(ctx());
  EXPECT_THROW(ops().linear_q8(b, f16, x, y, 1), Error);                      // not for f16 weights
  EXPECT_THROW(ops().linear_q8(b, q4, x, y, 1), Error);                       // 32 columns for a 64-column weight
  EXPECT_THROW(ops().quantize_q8(b, y, x, 3), Error);                         // 3 tokens in a 2-token Q8Act
  EXPECT_THROW(make_q8_act(ctx(), 1, 40), Error);                             // not whole blocks
  EXPECT_THROW(ops().quantize_q8(b, make_tensor(ctx(), {40}), x, 2), Error);  // x too short
  EXPECT_THROW(ops().rms_norm_linear_q8(b, make_tensor(ctx(), {32}), make_tensor(ctx(), {64}), 1e-5f, q4, y),
               Error);  // x shorter than the weight's 64 columns
  EXPECT_THROW(ops().rms_norm_linear_q8(b, make_tensor(ctx(), {64}), make_tensor(ctx(), {32}), 1e-5f, q4, y),
               Error);                                  // a norm weight shorter than x
  EXPECT_FALSE(ops().matvec_q8_fusions(1 << 20).norm);  // x's quants beyond the workgroup memory
  EXPECT_FALSE(ops().matvec_q8_fusions(40).norm);       // not whole blocks
}

// Decode attention with the output quantized: against the reference, at a fixed position and
// with the position read on the GPU (a fixed split count, empty splits past the keys).
TEST(LlmQ8, AttentionDecodeQ8MatchesReference) {
  const int nh = 8, nkv = 2, hd = 64, max_ctx = 80;
  auto cache = make_kv_cache(ctx(), 1, nkv, max_ctx, hd);
  auto kv = test::random_floats(size_t(nkv) * max_ctx * hd, 71);
  auto vv = test::random_floats(kv.size(), 72);
  upload(ctx(), cache.k, std::as_bytes(std::span(kv)));
  upload(ctx(), cache.v, std::as_bytes(std::span(vv)));
  auto qv = test::random_floats(size_t(nh) * hd, 73);
  auto q = make_tensor(ctx(), {int64_t(qv.size())}, qv);
  for (int pos : {0, 17, 79}) {
    // Reference: keys 0..pos in [pos + 1][nkv][hd].
    std::vector<float> k2, v2;
    for (int p = 0; p <= pos; ++p)
      for (int h = 0; h < nkv; ++h)
        for (int e = 0; e < hd; ++e) {
          k2.push_back(kv[(size_t(h) * max_ctx + size_t(p)) * hd + size_t(e)]);
          v2.push_back(vv[(size_t(h) * max_ctx + size_t(p)) * hd + size_t(e)]);
        }
    std::vector<float> qall(size_t(pos + 1) * nh * hd, 0.f);
    std::copy(qv.begin(), qv.end(), qall.end() - nh * hd);
    auto want_all = ref::attention(qall, k2, v2, pos + 1, nh, nkv, hd, 0, 1.f / std::sqrt(float(hd)));
    std::vector<float> want(want_all.end() - nh * hd, want_all.end());
    // splits: 3, or 150 (more than the combine's invocations per head, most of them empty)
    for (int mode : {0, 1, 2}) {
      const bool dyn = mode > 0;
      Q8Act out = make_q8_act(ctx(), 1, nh * hd);
      auto posb = make_tensor(ctx(), {1}, DType::U32);
      const uint32_t pu = uint32_t(pos);
      upload(ctx(), posb, std::as_bytes(std::span(&pu, 1)));
      AttentionArgs a;
      a.n_heads = nh;
      a.start = dyn ? 0 : pos;  // dyn: the position comes from posb
      if (dyn) {
        a.start_from = posb;
        a.splits = mode == 1 ? 3 : 150;
      }
      poisoned_q8(out);
      Batch b(ctx());
      ops().attention_decode_q8(b, cache.layer(0), q, out, a);
      b.run();
      expect_quantized(dequant(out, 1), want,
                       "pos " + std::to_string(pos) + (dyn ? " (dyn)" : "") + " mode " + std::to_string(mode));
    }
  }
}
