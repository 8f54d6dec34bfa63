// decode_layer (layer_decode.wgsl: one decoder layer of one token in one dispatch, its five steps
// handing over inside the dispatch) against the CPU references of each step (cpu/llm/llm_ref.h),
// on random weights at awkward shapes (no size a multiple of the kernel's 16-row items), with the
// output poisoned first, for grids of one workgroup per item, one workgroup (every hand-over inside
// it) and three (items taken in turn by few); the cache rows before the position random, after it
// poisoned (read: wrong logits).
#include "ops/llm/decode_layer.h"
#include "test_llm_util.h"

#include <algorithm>
#include <cmath>
#include <cstring>

using namespace wgc;
using namespace wgc::llm;
using wgc::test::ctx;

namespace {

struct LayerShape {
  int64_t hidden, ffn;
  int nh, nkv, hd, max_ctx, pos;
  TensorType type;
};

struct LayerWeights {
  GpuWeight qkv, o, gate_up, down;
  std::vector<double> qkv_d, o_d, gate_up_d, down_d;
};

GpuWeight random_gpu_weight(TensorType t, int64_t rows, int64_t cols, uint32_t seed, std::vector<double>& dense) {
  auto bytes = ref::random_weight(t, rows, cols, seed);
  dense = ref::dequantize(t, bytes, rows, cols);
  return upload_weight(ctx(), t, bytes, rows, cols);
}

LayerWeights random_layer(const LayerShape& s) {
  LayerWeights w;
  w.qkv = random_gpu_weight(s.type, int64_t(s.nh + 2 * s.nkv) * s.hd, s.hidden, 11, w.qkv_d);
  w.o = random_gpu_weight(s.type, s.hidden, int64_t(s.nh) * s.hd, 12, w.o_d);
  w.gate_up = random_gpu_weight(s.type, 2 * s.ffn, s.hidden, 13, w.gate_up_d);
  w.down = random_gpu_weight(s.type, s.hidden, s.ffn, 14, w.down_d);
  return w;
}

// The layer's output, and the key and value it appends, by the CPU references: x [hidden], the
// cache's keys and values before the position [pos][nkv][hd].
struct LayerRef {
  std::vector<float> out, k, v;
};
LayerRef reference_layer(const LayerShape& s, const LayerWeights& w, const std::vector<float>& x,
                         const std::vector<float>& ln1, const std::vector<float>& ln2, std::vector<float> keys,
                         std::vector<float> values, const std::vector<float>& inv_freq, float eps) {
  const int64_t q_len = int64_t(s.nh) * s.hd, kv_len = int64_t(s.nkv) * s.hd;
  auto h = ref::rms_norm(x, ln1, 1, int(s.hidden), eps);
  auto qkv = test::to_float(ref::linear(w.qkv_d, s.hidden, h, 1, 0, q_len + 2 * kv_len));
  std::vector<float> q(qkv.begin(), qkv.begin() + q_len), k(qkv.begin() + q_len, qkv.begin() + q_len + kv_len),
      v(qkv.begin() + q_len + kv_len, qkv.end());
  ref::rope(q, 1, s.nh, s.hd, {s.pos}, inv_freq, false);
  ref::rope(k, 1, s.nkv, s.hd, {s.pos}, inv_freq, false);
  keys.insert(keys.end(), k.begin(), k.end());
  values.insert(values.end(), v.begin(), v.end());
  auto att = ref::attention(q, keys, values, 1, s.nh, s.nkv, s.hd, s.pos, float(1.0 / std::sqrt(double(s.hd))));
  auto o = ref::linear(w.o_d, q_len, att, 1, 0, s.hidden);
  std::vector<float> x2(size_t(s.hidden));
  for (size_t i = 0; i < x2.size(); ++i) x2[i] = float(double(x[i]) + o[i]);
  auto h2 = ref::rms_norm(x2, ln2, 1, int(s.hidden), eps);
  auto gu = test::to_float(ref::linear(w.gate_up_d, s.hidden, h2, 1, 0, 2 * s.ffn));
  auto act =
      ref::swiglu(std::vector<float>(gu.begin(), gu.begin() + s.ffn), std::vector<float>(gu.begin() + s.ffn, gu.end()));
  auto down = ref::linear(w.down_d, s.ffn, act, 1, 0, s.hidden);
  LayerRef r{std::vector<float>(size_t(s.hidden)), k, v};
  for (size_t i = 0; i < r.out.size(); ++i) r.out[i] = float(double(x2[i]) + down[i]);
  return r;
}

void check_layer(const LayerShape& s, const std::string& spec) {
  const std::string what = "hidden " + std::to_string(s.hidden) + " hd " + std::to_string(s.hd) + " pos " +
                           std::to_string(s.pos) + " " + std::string(to_string(s.type)) + " '" + spec + "'";
  LlmOps ops(ctx());
  apply_tuning(ops.tuning, spec);
  const LayerWeights w = random_layer(s);
  const float eps = 1e-5f;
  auto x = test::random_floats(size_t(s.hidden), 21, -2.f, 2.f);
  auto ln1 = test::random_floats(size_t(s.hidden), 22, 0.5f, 1.5f),
       ln2 = test::random_floats(size_t(s.hidden), 23, 0.5f, 1.5f);
  std::vector<float> norms(ln1);
  norms.insert(norms.end(), ln2.begin(), ln2.end());
  std::vector<double> inv_freq(size_t(s.hd / 2));
  std::vector<float> inv_freq_f(inv_freq.size());
  for (size_t i = 0; i < inv_freq.size(); ++i) {
    inv_freq_f[i] = float(std::pow(10000.0, -2.0 * double(i) / s.hd));
    inv_freq[i] = inv_freq_f[i];
  }
  RopeTable rope = make_rope_table(ctx(), inv_freq, s.hd, s.max_ctx);
  // layer 1 of two (a cache offset), the rows before the position random, the rest poisoned
  KvCache cache = make_kv_cache(ctx(), 2, s.nkv, s.max_ctx, s.hd);
  const size_t cache_elems = size_t(2) * s.nkv * s.max_ctx * s.hd;
  std::vector<uint32_t> kbits(cache_elems, kPoisonNaN), vbits(cache_elems, kPoisonNaN);
  auto kr = test::random_floats(size_t(s.pos) * s.nkv * s.hd, 24), vr = test::random_floats(kr.size(), 25);
  const KvLayer layer = cache.layer(1);
  for (int p = 0; p < s.pos; ++p)
    for (int h = 0; h < s.nkv; ++h)
      for (int d = 0; d < s.hd; ++d) {
        const size_t at = layer.offset + (size_t(h) * s.max_ctx + p) * s.hd + d,
                     src = (size_t(p) * s.nkv + h) * s.hd + d;
        std::memcpy(&kbits[at], &kr[src], 4);
        std::memcpy(&vbits[at], &vr[src], 4);
      }
  upload(ctx(), cache.k, std::as_bytes(std::span(kbits)));
  upload(ctx(), cache.v, std::as_bytes(std::span(vbits)));

  // three regions (a three-layer model): this layer in region 1, its output into region 2's xin
  LayerScratch sc = ops.make_decode_layer_scratch(3, s.hidden, s.ffn, s.nh, s.nkv, s.hd, s.max_ctx);
  ASSERT_EQ(ops.decode_layer_unfit(sc, s.type), "") << what;
  upload(ctx(), sc.words, std::as_bytes(std::span(x)), uint64_t(sc.region_words) * 4);
  std::vector<uint32_t> poison(size_t(s.hidden), kPoisonNaN);
  upload(ctx(), sc.words, std::as_bytes(std::span(poison)), uint64_t(2 * sc.region_words) * 4);
  // region 2's counters and words as a finished layer leaves them: the dispatch must reset them
  std::vector<uint32_t> used(size_t(sc.end - sc.cnt), 7u);
  upload(ctx(), sc.words, std::as_bytes(std::span(used)), uint64_t(2 * sc.region_words + sc.cnt) * 4);
  const uint32_t where[2] = {uint32_t(s.pos), uint32_t(s.pos)};
  Tensor positions = make_tensor(ctx(), {2}, DType::U32, std::as_bytes(std::span(where)));
  DecodeLayerArgs a;
  a.qkv = &w.qkv;
  a.o = &w.o;
  a.gate_up = &w.gate_up;
  a.down = &w.down;
  a.norms = make_tensor(ctx(), {int64_t(norms.size())}, norms);
  a.ln1 = 0;
  a.ln2 = uint32_t(s.hidden);
  a.eps = eps;
  a.rope = &rope;
  a.positions = positions;
  a.region = 1;
  a.next = 2;
  Batch b(ctx());
  ops.decode_layer(b, sc, layer, a);
  b.run();
  ASSERT_FALSE(layer_scratch_failed(ctx(), sc)) << what;

  const auto words = download<uint32_t>(ctx(), sc.words);
  std::vector<float> got(size_t(s.hidden));
  std::memcpy(got.data(), &words[2 * size_t(sc.region_words)], got.size() * 4);
  const LayerRef want = reference_layer(s, w, x, ln1, ln2, kr, vr, inv_freq_f, eps);
  EXPECT_EQ(std::count_if(got.begin(), got.end(), [](float v) { return std::isnan(v); }), 0) << what;
  EXPECT_LT(test::rel_error(got, want.out), 1e-4) << what << ": output";
  // the next layer's counters (ticket, four steps) and guarded words reset (the region two dispatches ago)
  for (uint32_t i = 0; i < 5; ++i) EXPECT_EQ(words[2 * size_t(sc.region_words) + sc.cnt + i], 0u) << what << " " << i;
  size_t unreset = 0;
  for (uint32_t i = sc.q; i < sc.end; ++i) unreset += words[2 * size_t(sc.region_words) + i] != 0x7FA5A5A5u;
  EXPECT_EQ(unreset, 0u) << what;
  // the new key and value in cache row pos, nothing else written
  const auto kc = download<float>(ctx(), cache.k), vc = download<float>(ctx(), cache.v);
  const auto kcb = download<uint32_t>(ctx(), cache.k);
  std::vector<float> k_row, v_row;
  size_t changed = 0;
  for (int h = 0; h < s.nkv; ++h)
    for (int d = 0; d < s.hd; ++d) {
      const size_t at = layer.offset + (size_t(h) * s.max_ctx + s.pos) * s.hd + d;
      k_row.push_back(kc[at]);
      v_row.push_back(vc[at]);
    }
  for (size_t i = 0; i < cache_elems; ++i) changed += kcb[i] != kbits[i];
  EXPECT_EQ(changed, size_t(s.nkv) * s.hd) << what << ": k cache elements written";
  EXPECT_LT(test::rel_error(k_row, want.k), 1e-5) << what << ": k";
  EXPECT_LT(test::rel_error(v_row, want.v), 1e-5) << what << ": v";
}

}  // namespace

TEST(DecodeLayer, MatchesTheReferenceSteps) {
  // 4 query heads over 2 kv heads of 8, hidden 40 (3 items of 16 rows), ffn 72 (9 items of 8)
  const LayerShape a{40, 72, 4, 2, 8, 64, 37, TensorType::F16};
  for (const char* spec : {"layer_wgs=1", "layer_wgs=1/attn_dec_wgs=8"}) check_layer(a, spec);
  // position 0 (one key: the new one, from the scratch), BF16, 3 query heads per kv head of 16
  check_layer({72, 40, 6, 2, 16, 48, 0, TensorType::BF16}, "");
  // keys in several blocks of one split (at head_dim 16: 32 keys a block), 8 splits of 8 keys
  check_layer({24, 56, 2, 1, 16, 96, 77, TensorType::F16}, "attn_dec_wgs=1/layer_pf=3");
  check_layer({24, 56, 2, 1, 16, 96, 77, TensorType::F16}, "attn_dec_wgs=12");
  // hidden 4100: x staged in more than one round of four loads per invocation (layer_decode's ld4x4)
  check_layer({4100, 72, 4, 2, 8, 16, 5, TensorType::BF16}, "");
  check_layer({4100, 72, 4, 2, 8, 16, 5, TensorType::BF16}, "layer_lb=3/layer_pf=1/attn_dec_wgs=12");
  check_layer({4100, 72, 4, 2, 8, 16, 5, TensorType::F16}, "layer_lb=1/layer_poll=1");
}

// Workgroups that wait on each other's items: one per item (the GPU default), two and three in
// all (each taking many items in turn). GPUs only: SwiftShader gives no forward progress between
// workgroups (LlmOps::decode_layer runs one workgroup there).
TEST(DecodeLayer, ManyWorkgroupsMatchTheReferenceSteps) {
  if (ctx().adapter().is_cpu()) GTEST_SKIP() << "SwiftShader gives no forward progress between workgroups";
  const LayerShape a{40, 72, 4, 2, 8, 64, 37, TensorType::F16};
  for (const char* spec : {"", "layer_wgs=2", "layer_wgs=3/attn_dec_wgs=8"}) check_layer(a, spec);
  check_layer({24, 56, 2, 1, 16, 96, 77, TensorType::F16}, "attn_dec_wgs=12/layer_wgs=2");
  check_layer({24, 56, 2, 1, 16, 96, 77, TensorType::F16}, "attn_dec_wgs=12/layer_poll=1");
  check_layer({4100, 72, 4, 2, 8, 16, 5, TensorType::BF16}, "");
}

TEST(DecodeLayer, RefusesWhatItCannotRun) {
  LlmOps ops(ctx());
  const LayerShape s{40, 72, 4, 2, 8, 64, 3, TensorType::F16};
  const LayerWeights w = random_layer(s);
  LayerScratch sc = ops.make_decode_layer_scratch(2, s.hidden, s.ffn, s.nh, s.nkv, s.hd, s.max_ctx);
  EXPECT_NE(ops.decode_layer_unfit(sc, TensorType::Q8_0), "");
  EXPECT_THROW(ops.make_decode_layer_scratch(1, s.hidden, s.ffn, s.nh, s.nkv, s.hd, s.max_ctx), Error);
  std::vector<float> inv(4, 0.5f);
  RopeTable rope = make_rope_table(ctx(), std::vector<double>(4, 0.5), s.hd, s.max_ctx);
  KvCache cache = make_kv_cache(ctx(), 1, s.nkv, s.max_ctx, s.hd);
  DecodeLayerArgs a;
  a.qkv = &w.qkv;
  a.o = &w.gate_up;  // the wrong shape
  a.gate_up = &w.gate_up;
  a.down = &w.down;
  a.norms = make_tensor(ctx(), {2 * s.hidden});
  a.ln2 = uint32_t(s.hidden);
  a.rope = &rope;
  a.positions = make_tensor(ctx(), {2}, DType::U32);
  Batch b(ctx());
  try {
    ops.decode_layer(b, sc, cache.layer(0), a);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("o: 144 x 40"), std::string::npos) << e.what();
  }
  a.o = &w.o;
  a.next = 0;  // its own region
  EXPECT_THROW(ops.decode_layer(b, sc, cache.layer(0), a), Error);
}

// A wait that gave up (the kernel's error word set) is what layer_scratch_failed reports, in a
// scratch of any region count; a fresh scratch reports none.
TEST(DecodeLayer, ReportsAWaitThatGaveUp) {
  LlmOps ops(ctx());
  for (int layers : {2, 3}) {
    LayerScratch sc = ops.make_decode_layer_scratch(layers, 40, 72, 4, 2, 8, 64);
    EXPECT_FALSE(layer_scratch_failed(ctx(), sc)) << layers;
    const uint32_t one = 1;
    upload(ctx(), sc.words, std::as_bytes(std::span(&one, 1)), uint64_t(sc.err) * 4);
    EXPECT_TRUE(layer_scratch_failed(ctx(), sc)) << layers;
  }
}
