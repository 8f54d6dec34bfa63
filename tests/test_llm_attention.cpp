// LLM KV cache appends and attention: tiled flash attention (prefill, continuing after cached
// tokens) and split-K flash decoding, against the f64 reference, with GQA.
#include "llm/formats/model_config.h"
#include "test_llm_util.h"

#include <cstring>
#include <memory>
#include <span>
#include <string>

using namespace wgc;
using namespace wgc::llm;
using wgc::test::Cfg;
using wgc::test::ctx;
using wgc::test::make_qkv;
using wgc::test::ops;
using wgc::test::Qkv;

namespace {

const Cfg kCfgs[] = {{4, 4, 64}, {8, 2, 128}, {8, 1, 8}};  // GQA ratios 1, 4, 8
// The contiguous-cache tests also take head dims that no tile divides (20: 5 vec4s) and the
// 96 (24 vec4s: a partial second output vec4 per invocation), with a GQA ratio of 3.
const Cfg kCfgsMore[] = {{4, 4, 64}, {8, 2, 128}, {8, 1, 8}, {6, 2, 20}, {3, 1, 96}};

// Every attention kernel and schedule: the default (flash_attn_tiled_pf.wgsl with its row groups
// in subgroups (4 lanes on SwiftShader) for prefill, flash_decode_sg.wgsl for decode); an adapter
// without subgroups (the row groups through workgroup memory; flash_decode.wgsl, at its default
// and with smaller workgroups: several (head, vec4) pairs per invocation); one with 2 KiB of
// workgroup memory as well (flash_attn.wgsl for prefill, and for decode where flash_decode.wgsl's
// blocks do not fit); flash_decode_sg.wgsl's other schedules (key groups of 2 and 1 lanes (the
// default's 16 become 4 on SwiftShader, whose subgroups have 4); 1 to 3 keys per step; head dims
// whose registers do not fit it fall back to flash_decode.wgsl).
struct VariantSpec {
  const char* name;
  bool subgroups;      // false: an adapter without them
  uint32_t storage;    // bytes of workgroup memory (0: the adapter's)
  const char* tuning;  // apply_tuning
};
const VariantSpec kVariants[] = {{"default", true, 0, ""},
                                 {"no subgroups", false, 0, ""},
                                 {"no subgroups, 2 KiB", false, 2048, ""},
                                 {"no subgroups", false, 0, "attn_dec_wg=128,attn_dec_wgs=256"},
                                 {"no subgroups", false, 0, "attn_dec_wg=64,attn_dec_wgs=64"},
                                 {"no subgroups", false, 0, "attn_dec_wg=32"},
                                 {"", true, 0, "attn_dec_u=3,attn_dec_tpk=2,attn_dec_wg=16"},
                                 {"", true, 0, "attn_dec_tpk=1,attn_dec_u=1,attn_dec_wg=8,attn_dec_wgs=64"}};
struct Variant {
  std::string spec;
  std::unique_ptr<LlmOps> ops;
};
// The prefill kernels differ in the first three only.
constexpr size_t kPrefillVariants = 3;
std::vector<Variant>& variants() {
  static std::vector<Variant> v = [] {
    std::vector<Variant> r;
    for (const VariantSpec& s : kVariants) {
      LlmCaps caps = llm_caps(ctx());
      if (!s.subgroups) caps.subgroups = false, caps.subgroup_size = 0;
      if (s.storage) caps.workgroup_storage = std::min(caps.workgroup_storage, s.storage);
      Variant x{std::string(s.name) + " " + s.tuning, std::make_unique<LlmOps>(ctx(), caps)};
      apply_tuning(x.ops->tuning, s.tuning);
      r.push_back(std::move(x));
    }
    return r;
  }();
  return v;
}

// Runs append + attention for tokens [start, start + n) of qkv (all tokens' data) on the cache.
std::vector<float> run_step(const Cfg& c, const KvLayer& cache, const Qkv& all, int start, int n, bool decode,
                            int splits = 0, const LlmOps& o = ops()) {
  const int row = (c.nh + 2 * c.nkv) * c.hd;
  std::vector<float> part(all.fused.begin() + start * row, all.fused.begin() + (start + n) * row);
  auto qkv = make_tensor(ctx(), {int64_t(part.size())}, part);
  auto out = test::poisoned(int64_t(n) * c.nh * c.hd);
  Batch b(ctx());
  ops().kv_append(b, cache, qkv, c.nh * c.hd, qkv, (c.nh + c.nkv) * c.hd, row, start, n);
  AttentionArgs a;
  a.n_tokens = n;
  a.n_heads = c.nh;
  a.start = start;
  a.q_stride = row;
  a.splits = splits;
  if (decode)
    o.attention_decode(b, cache, qkv, out, a);
  else
    o.attention_prefill(b, cache, qkv, out, a);
  b.run();
  return download<float>(ctx(), out);
}

std::vector<float> slice(const std::vector<float>& v, size_t from, size_t n) {
  return {v.begin() + long(from), v.begin() + long(from + n)};
}

// A cache of max_ctx rows filled by one prefill of len random tokens (the rows past them
// poisoned: they must never be read) and the f64 reference attention of every position.
struct FilledCache {
  Qkv all;
  KvCache cache;
  std::vector<float> want;
  // The reference's output row of position pos (causal: it attends to keys 0..pos).
  std::vector<float> want_at(const Cfg& c, int pos) const {
    return slice(want, size_t(pos * c.nh * c.hd), size_t(c.nh * c.hd));
  }
};
FilledCache fill_cache(const Cfg& c, int len, int max_ctx, uint32_t seed) {
  FilledCache f{make_qkv(c, len, seed), make_kv_cache(ctx(), 1, c.nkv, max_ctx, c.hd), {}};
  fill_u32(ctx(), f.cache.k, kPoisonNaN);
  fill_u32(ctx(), f.cache.v, kPoisonNaN);
  run_step(c, f.cache.layer(0), f.all, 0, len, false);
  f.want = ref::attention(f.all.q, f.all.k, f.all.v, len, c.nh, c.nkv, c.hd, 0, 1.f / std::sqrt(float(c.hd)));
  return f;
}

// One decode token of a recorded step: its q|k|v row on the GPU, and the attention arguments
// that read its position from a GPU buffer (start_from), as a replayed step does.
struct GpuPositionStep {
  Tensor qkv, at;
  AttentionArgs args;
};
GpuPositionStep step_at(const Cfg& c, const Qkv& all, int pos) {
  const int row = (c.nh + 2 * c.nkv) * c.hd;
  const std::vector<float> part(all.fused.begin() + pos * row, all.fused.begin() + (pos + 1) * row);
  GpuPositionStep s{make_tensor(ctx(), {int64_t(part.size())}, part), make_tensor(ctx(), {1}, DType::U32), {}};
  const uint32_t p32 = uint32_t(pos);
  upload(ctx(), s.at, std::as_bytes(std::span(&p32, 1)));
  s.args.n_heads = c.nh;
  s.args.start = pos;
  s.args.q_stride = row;
  s.args.start_from = s.at;
  return s;
}

}  // namespace

TEST(LlmAttention, KvAppendWritesTheCacheLayout) {
  const Cfg c{4, 2, 8};
  auto cache = make_kv_cache(ctx(), 2, c.nkv, 16, c.hd);
  fill_u32(ctx(), cache.k, 0);
  fill_u32(ctx(), cache.v, 0);
  auto all = make_qkv(c, 8, 1);  // tokens 5..7 are appended
  run_step(c, cache.layer(1), all, 5, 3, false);
  auto kc = download<float>(ctx(), cache.k), vc = download<float>(ctx(), cache.v);
  const size_t layer = size_t(c.nkv * 16 * c.hd);
  for (int t = 0; t < 3; ++t)
    for (int h = 0; h < c.nkv; ++h)
      for (int d = 0; d < c.hd; ++d) {
        size_t at = layer + size_t((h * 16 + 5 + t) * c.hd + d);
        ASSERT_EQ(kc[at], all.k[size_t(((5 + t) * c.nkv + h) * c.hd + d)]);
        ASSERT_EQ(vc[at], all.v[size_t(((5 + t) * c.nkv + h) * c.hd + d)]);
      }
  EXPECT_EQ(kc[0], 0.f);  // layer 0 untouched
}

TEST(LlmAttention, PrefillMatchesReference) {
  for (const auto& c : kCfgsMore)
    for (int n : {1, 7, 300}) {
      auto cache = make_kv_cache(ctx(), 1, c.nkv, 320, c.hd);
      auto all = make_qkv(c, n, uint32_t(n));
      auto want = ref::attention(all.q, all.k, all.v, n, c.nh, c.nkv, c.hd, 0, 1.f / std::sqrt(float(c.hd)));
      for (size_t i = 0; i < kPrefillVariants; ++i) {
        const auto& v = variants()[i];
        // the other tiled schedules: the GQA-4 shape and the head dims no tile divides (seconds
        // of SwiftShader each)
        if (i >= 2 && (c.hd == 64 || c.hd == 8)) continue;
        auto got = run_step(c, cache.layer(0), all, 0, n, false, 0, *v.ops);
        EXPECT_LE(test::rel_error(got, want), 1e-5)
            << v.spec << ": " << c.nh << "/" << c.nkv << " hd=" << c.hd << " n=" << n;
      }
    }
}

TEST(LlmAttention, PrefillContinuesAfterCachedTokens) {
  for (auto& v : std::span(variants()).first(kPrefillVariants))
    for (const auto& c : kCfgsMore) {
      const int first = 37, second = 21;
      auto cache = make_kv_cache(ctx(), 1, c.nkv, 64, c.hd);
      fill_u32(ctx(), cache.k, kPoisonNaN);  // positions past the tokens must never be read
      fill_u32(ctx(), cache.v, kPoisonNaN);
      auto all = make_qkv(c, first + second, 99);
      auto one = run_step(c, cache.layer(0), all, 0, first, false, 0, *v.ops);
      auto got = run_step(c, cache.layer(0), all, first, second, false, 0, *v.ops);
      auto want =
          ref::attention(all.q, all.k, all.v, first + second, c.nh, c.nkv, c.hd, 0, 1.f / std::sqrt(float(c.hd)));
      EXPECT_LE(test::rel_error(got, slice(want, size_t(first * c.nh * c.hd), size_t(second * c.nh * c.hd))), 1e-5)
          << v.spec << ": " << c.nh << "/" << c.nkv << " hd=" << c.hd;
      // A row's arithmetic does not depend on the rows prefilled with it: the chunks give the
      // same bits as one prefill of all tokens.
      auto whole_cache = make_kv_cache(ctx(), 1, c.nkv, 64, c.hd);
      auto whole = run_step(c, whole_cache.layer(0), all, 0, first + second, false, 0, *v.ops);
      one.insert(one.end(), got.begin(), got.end());
      EXPECT_EQ(one, whole) << v.spec << ": " << c.nh << "/" << c.nkv << " hd=" << c.hd;
    }
}

// Prefill after a cache deeper than a block of 64 keys: several key blocks before the causal
// ones, the new rows' first block partly cached, lengths no tile divides, GQA 4 and 3.
TEST(LlmAttention, PrefillAtDepthMatchesReference) {
  const Cfg cfgs[] = {{8, 2, 128}, {6, 2, 20}};
  for (const auto& c : cfgs) {
    const int start = 141, n = 45;
    auto all = make_qkv(c, start + n, 17);
    auto want = ref::attention(all.q, all.k, all.v, start + n, c.nh, c.nkv, c.hd, 0, 1.f / std::sqrt(float(c.hd)));
    const auto tail = slice(want, size_t(start * c.nh * c.hd), size_t(n * c.nh * c.hd));
    std::vector<std::vector<float>> outs;
    for (auto& v : std::span(variants()).first(kPrefillVariants)) {
      auto cache = make_kv_cache(ctx(), 1, c.nkv, start + n + 11, c.hd);
      fill_u32(ctx(), cache.k, kPoisonNaN);  // positions past the tokens must never be read
      fill_u32(ctx(), cache.v, kPoisonNaN);
      run_step(c, cache.layer(0), all, 0, start, false, 0, *v.ops);
      auto got = run_step(c, cache.layer(0), all, start, n, false, 0, *v.ops);
      EXPECT_LE(test::rel_error(got, tail), 1e-5) << v.spec << ": " << c.nh << "/" << c.nkv << " hd=" << c.hd;
      outs.push_back(std::move(got));
    }
    // flash_attn_tiled_pf.wgsl's row groups through workgroup memory: the same bits as the
    // default (the same sums in the same order)
    EXPECT_EQ(outs[1], outs[0]) << variants()[1].spec;
  }
}

TEST(LlmAttention, DecodeStepsEqualOnePrefill) {
  // the decode kernels against the default prefill (and the first ones against each other); the
  // other prefill schedules meet the reference in the tests above
  for (size_t i = 0; i < variants().size(); ++i) {
    if (i >= 2 && i < kPrefillVariants) continue;
    const auto& v = variants()[i];
    for (const auto& c : kCfgsMore) {
      const int steps = 24, pre = 3;
      auto all = make_qkv(c, steps, 7);
      auto full_cache = make_kv_cache(ctx(), 1, c.nkv, 64, c.hd);
      auto full = run_step(c, full_cache.layer(0), all, 0, steps, false, 0, *v.ops);
      auto cache = make_kv_cache(ctx(), 2, c.nkv, 64, c.hd);  // layer 1: a cache offset
      run_step(c, cache.layer(1), all, 0, pre, false, 0, *v.ops);
      const size_t per = size_t(c.nh * c.hd);
      for (int s = pre; s < steps; ++s) {
        auto got = run_step(c, cache.layer(1), all, s, 1, true, s % 3 == 0 ? 0 : 1 + s % 5, *v.ops);
        ASSERT_LE(test::rel_error(got, slice(full, size_t(s) * per, per)), 1e-5)
            << v.spec << ": " << c.nh << "/" << c.nkv << " hd=" << c.hd << " step " << s;
      }
    }
  }
}

TEST(LlmAttention, DecodeOverALongCacheWithSplits) {
  for (const auto& c : kCfgsMore) {
    const int len = 300;
    auto all = make_qkv(c, len, 5);
    auto cache = make_kv_cache(ctx(), 1, c.nkv, len + 13, c.hd);
    fill_u32(ctx(), cache.k, kPoisonNaN);  // positions past the tokens must never be read
    fill_u32(ctx(), cache.v, kPoisonNaN);
    run_step(c, cache.layer(0), all, 0, len - 1, false);
    auto want = ref::attention(all.q, all.k, all.v, len, c.nh, c.nkv, c.hd, 0, 1.f / std::sqrt(float(c.hd)));
    for (auto& v : variants())
      for (int splits : {0, 1, 7}) {
        auto got = run_step(c, cache.layer(0), all, len - 1, 1, true, splits, *v.ops);
        EXPECT_LE(test::rel_error(got, slice(want, size_t((len - 1) * c.nh * c.hd), size_t(c.nh * c.hd))), 1e-5)
            << v.spec << ": " << c.nh << "/" << c.nkv << " hd=" << c.hd << " splits=" << splits;
      }
  }
}

// A recorded decode step reads its position on the GPU (start_from): the split length follows it.
TEST(LlmAttention, DecodeWithThePositionReadOnTheGpu) {
  for (auto& v : variants())
    for (const auto& c : kCfgsMore) {
      const int len = 150, max_ctx = 200;
      const FilledCache f = fill_cache(c, len, max_ctx, 11);
      for (int pos : {0, 17, len - 1}) {
        const GpuPositionStep s = step_at(c, f.all, pos);
        auto out = test::poisoned(int64_t(c.nh) * c.hd);
        Batch b(ctx());
        v.ops->attention_decode(b, f.cache.layer(0), s.qkv, out, s.args);
        b.run();
        EXPECT_LE(test::rel_error(download<float>(ctx(), out), f.want_at(c, pos)), 1e-5)
            << v.spec << ": " << c.nh << "/" << c.nkv << " hd=" << c.hd << " pos=" << pos;
      }
    }
}

// One token's attention combined inside the o projection (combine_linear): the
// partials of a recorded step (position read on the GPU, the cache's splits, most of them empty
// early on) through an o weight of every float type, against the f64 attention and linear
// references: row range, y offset, plain into poisoned y and accumulating, the rest of y untouched,
// with the columns split into ranges too, and through the kx schedule, over the keyed splits
// (from 8 splits) or all of them; and attention_combine alone against the reference.
TEST(LlmAttention, CombineFoldedIntoTheOProjection) {
  const char* const tunes[] = {
      // (decode workgroups of 16: blocks of 8 keys, 25 splits of the 200 rows, so that the keyed
      // ones are walked)
      "matvec_kx=0,matvec_tpr=8,matvec_rows=2,matvec_unroll=1,attn_dec_wg=16,attn_dec_wgs=1024",
      "matvec_kx=0,matvec_tpr=4,matvec_rows=3,matvec_unroll=2,matvec_split=3,matvec_split_cols=16,attn_dec_wgs=64",
      // the kx schedule (x combined into registers, tiles looping)
      "matvec_kx=2,kx_wg=64,kx_rows=8,kx_groups=2,attn_dec_wg=16,attn_dec_wgs=1024",
      // every split weighed and walked (fewer than 8)
      "matvec_kx=2,kx_wg=64,kx_rows=8,kx_wide_wg=0,attn_dec_wgs=4", "attn_dec_wgs=4"};
  // (a recorded step's splits cover the cache's 200 rows: at position 17 the later ones are empty)
  for (const Cfg& c : {Cfg{8, 2, 128}, Cfg{6, 2, 20}, Cfg{3, 1, 96}}) {
    const int len = 150, max_ctx = 200;
    const int64_t cols = int64_t(c.nh) * c.hd, rows = 45, row0 = 3, nr = 39, yoff = 2;
    const FilledCache f = fill_cache(c, len, max_ctx, 13);
    for (auto t : {TensorType::F32, TensorType::F16, TensorType::BF16}) {
      auto bytes = ref::random_weight(t, rows, cols, 17);
      auto w = upload_weight(ctx(), t, bytes, rows, cols);
      auto deq = ref::dequantize(t, bytes, rows, cols);
      for (const char* spec : tunes) {
        LlmOps o(ctx());
        apply_tuning(o.tuning, spec);
        for (int pos : {17, len - 1}) {
          const std::vector<float> attn = f.want_at(c, pos);
          auto r = ref::linear(deq, cols, attn, 1, row0, nr);
          const GpuPositionStep s = step_at(c, f.all, pos);
          const std::string what = std::string(to_string(t)) + " " + spec + ": " + std::to_string(c.nh) + "/" +
                                   std::to_string(c.nkv) + " hd=" + std::to_string(c.hd) +
                                   " pos=" + std::to_string(pos);
          for (bool plain : {true, false}) {
            const size_t ny = size_t(yoff + nr + 4);
            auto y0 = test::random_floats(ny, 19);
            const test::RowsWant rw = test::rows_want(r, y0, yoff, !plain);
            Tensor y = plain ? test::poisoned(int64_t(ny)) : make_tensor(ctx(), {int64_t(ny)}, y0);
            auto out = test::poisoned(cols);
            Batch b(ctx());
            const DecodePartials dp = o.attention_decode_partials(b, f.cache.layer(0), s.qkv, s.args);
            ASSERT_TRUE(o.fuses_combine(t, dp)) << what;
            ASSERT_GE(dp.splits, 2u) << what;
            LinearOptions lo;
            lo.row0 = row0;
            lo.rows = nr;
            lo.y_offset = yoff;
            lo.accumulate = !plain;
            o.combine_linear(b, dp, w, y, lo);
            o.attention_combine(b, dp, out);
            b.run();
            auto got = download<float>(ctx(), y);
            got.resize(ny);
            test::expect_written_and_gaps(got, rw.want, rw.written, y0, !plain, 1e-4,
                                          what + (plain ? " plain" : " acc"));
            EXPECT_LE(test::rel_error(download<float>(ctx(), out), attn), 1e-5) << what << " attention_combine";
          }
        }
      }
    }
  }
  // The float weight types only; the keyed splits walked from 8 splits.
  LlmOps o(ctx());
  DecodePartials dp;
  dp.part = make_tensor(ctx(), {8 * 8 * 66});
  dp.splits = 1;
  dp.n_heads = 8;
  dp.head_dim = 64;
  EXPECT_TRUE(o.fuses_combine(TensorType::F16, dp));
  EXPECT_FALSE(o.combine_prefix(dp));
  EXPECT_FALSE(o.fuses_combine(TensorType::Q8_0, dp));
  dp.splits = 8;
  EXPECT_TRUE(o.combine_prefix(dp));
  const LlmOps::MatvecFusions f = o.matvec_fusions(TensorType::BF16, 512, &dp);
  EXPECT_TRUE(f.norm && f.combine && f.combine_prefix);
  LlmCaps little = llm_caps(ctx());
  little.workgroup_storage = 1024;  // x and the splits' weights do not fit
  EXPECT_FALSE(LlmOps(ctx(), little).fuses_combine(TensorType::F16, dp));
}

// ---- paged attention (serving) -------------------------------------------------------------------

namespace {

// A pool of n_blocks blocks of `block` tokens, and sequences whose blocks are scattered over it.
struct Pool {
  Cfg c;
  int block, n_blocks;
  KvCache cache;  // one layer, max_ctx = n_blocks * block slots
  Pool(const Cfg& cfg, int blk, int nb) : c(cfg), block(blk), n_blocks(nb) {
    cache = make_kv_cache(ctx(), 1, c.nkv, nb * blk, c.hd);
    fill_u32(ctx(), cache.k, kPoisonNaN);  // unwritten slots must never be read
    fill_u32(ctx(), cache.v, kPoisonNaN);
  }
  // Writes keys/values [len][nkv][hd] of a sequence into its blocks.
  void write(const std::vector<int32_t>& blocks, const std::vector<float>& k, const std::vector<float>& v, int len) {
    auto kc = download<float>(ctx(), cache.k), vc = download<float>(ctx(), cache.v);
    const int slots = n_blocks * block;
    for (int p = 0; p < len; ++p) {
      int row = blocks[size_t(p / block)] * block + p % block;
      for (int h = 0; h < c.nkv; ++h)
        for (int d = 0; d < c.hd; ++d) {
          size_t at = size_t((h * slots + row) * c.hd + d);
          kc[at] = k[size_t((p * c.nkv + h) * c.hd + d)];
          vc[at] = v[size_t((p * c.nkv + h) * c.hd + d)];
        }
    }
    upload(ctx(), cache.k, std::as_bytes(std::span(kc)));
    upload(ctx(), cache.v, std::as_bytes(std::span(vc)));
  }
};

struct Seq {
  int len;    // positions cached after this step
  int n_new;  // of them the new tokens (the last n_new)
  Qkv data;   // all positions' q/k/v
  std::vector<int32_t> blocks;
};

// The plan and the queries of the sequences' new tokens, in one batch.
struct PagedRun {
  PagedAttentionPlan plan;
  Tensor q;
  int tokens = 0;
};
PagedRun plan_paged(const Pool& pool, const std::vector<Seq*>& seqs, int split_len, const LlmOps& o) {
  const Cfg& c = pool.c;
  std::vector<PagedSequence> ps;
  std::vector<float> q;
  int tok = 0;
  for (auto* s : seqs) {
    PagedSequence p;
    p.tok0 = tok;
    p.n_tokens = s->n_new;
    p.pos0 = s->len - s->n_new;
    p.blocks = s->blocks;
    ps.push_back(p);
    q.insert(q.end(), s->data.q.begin() + long(p.pos0) * c.nh * c.hd, s->data.q.begin() + long(s->len) * c.nh * c.hd);
    tok += s->n_new;
  }
  PagedAttentionArgs a;
  a.n_heads = c.nh;
  a.n_kv_heads = c.nkv;
  a.head_dim = c.hd;
  a.block = pool.block;
  a.split_len = split_len;
  PagedRun r;
  r.plan = o.plan_paged_attention(ps, a, pool.n_blocks);
  r.q = make_tensor(ctx(), {int64_t(q.size())}, q);
  r.tokens = tok;
  return r;
}

// Runs paged attention for the sequences' new tokens in one batch; returns [tokens][nh][hd].
std::vector<float> run_paged(const Pool& pool, const std::vector<Seq*>& seqs, int split_len, const LlmOps& o = ops()) {
  const Cfg& c = pool.c;
  PagedRun r = plan_paged(pool, seqs, split_len, o);
  auto out = test::poisoned(int64_t(r.tokens) * c.nh * c.hd);
  Batch b(ctx());
  o.paged_attention(b, pool.cache.layer(0), r.q, out, r.plan);
  b.run();
  return download<float>(ctx(), out);
}

// Scattered blocks (a permutation of the pool) for the sequences, their K/V written.
void place(Pool& pool, std::vector<Seq>& seqs) {
  std::vector<int32_t> free_blocks;
  for (int i = pool.n_blocks - 1; i >= 0; --i) free_blocks.push_back((i * 7) % pool.n_blocks);
  for (size_t i = 0; i < seqs.size(); ++i) {
    auto& s = seqs[i];
    s.data = make_qkv(pool.c, s.len, uint32_t(100 + i));
    for (int b = 0; b < (s.len + pool.block - 1) / pool.block; ++b) {
      s.blocks.push_back(free_blocks.back());
      free_blocks.pop_back();
    }
    pool.write(s.blocks, s.data.k, s.data.v, s.len);
  }
}

}  // namespace

// Sequences of different lengths (decode tokens and prefill chunks in one batch) over scattered
// blocks of one pool, against the f64 reference, with GQA and several splits.
TEST(LlmPagedAttention, MatchesReferenceOverScatteredBlocks) {
  for (const auto& c : kCfgs) {
    const int block = 16, n_blocks = 40;
    Pool pool(c, block, n_blocks);
    std::vector<Seq> seqs = {{1, 1, {}, {}}, {70, 1, {}, {}}, {37, 37, {}, {}}, {300, 23, {}, {}}, {17, 2, {}, {}}};
    place(pool, seqs);
    std::vector<Seq*> all;
    for (auto& s : seqs) all.push_back(&s);
    for (int split : {256, 32}) {
      auto got = run_paged(pool, all, split);
      size_t at = 0;
      for (auto& s : seqs) {
        auto want =
            ref::attention(s.data.q, s.data.k, s.data.v, s.len, c.nh, c.nkv, c.hd, 0, 1.f / std::sqrt(float(c.hd)));
        const size_t per = size_t(c.nh * c.hd);
        EXPECT_LE(test::rel_error(slice(got, at, size_t(s.n_new) * per),
                                  slice(want, size_t(s.len - s.n_new) * per, size_t(s.n_new) * per)),
                  1e-5)
            << c.nh << "/" << c.nkv << " hd=" << c.hd << " len=" << s.len << " split " << split;
        at += size_t(s.n_new) * per;
      }
    }
  }
}

// The combine with its output quantized (paged_attention_q8, the serving engine's fused path):
// the bits of the combine followed by quantize_q8, decode and prefill rows, several splits.
TEST(LlmPagedAttention, QuantizedCombineEqualsCombineThenQuantize) {
  for (const Cfg& c : {kCfgs[0], kCfgs[1]}) {
    Pool pool(c, 16, 40);
    std::vector<Seq> seqs = {{1, 1, {}, {}}, {70, 1, {}, {}}, {37, 37, {}, {}}, {300, 3, {}, {}}, {17, 2, {}, {}}};
    place(pool, seqs);
    std::vector<Seq*> all;
    for (auto& s : seqs) all.push_back(&s);
    PagedRun r = plan_paged(pool, all, 32, ops());
    const int64_t cols = int64_t(c.nh) * c.hd;
    Q8Act want = make_q8_act(ctx(), r.tokens, cols), got = make_q8_act(ctx(), r.tokens, cols);
    fill_u32(ctx(), got.qs, kPoisonNaN);
    fill_u32(ctx(), got.ds, kPoisonNaN);
    auto out = test::poisoned(int64_t(r.tokens) * cols);
    Batch b(ctx());
    ops().paged_attention(b, pool.cache.layer(0), r.q, out, r.plan);
    ops().quantize_q8(b, out, want, r.tokens);
    ops().paged_attention_q8(b, pool.cache.layer(0), r.q, got, r.plan);
    b.run();
    const std::string what = "hd " + std::to_string(c.hd) + " nh " + std::to_string(c.nh);
    EXPECT_EQ(download<uint32_t>(ctx(), got.qs), download<uint32_t>(ctx(), want.qs)) << what << " quants";
    EXPECT_EQ(download<uint32_t>(ctx(), got.ds), download<uint32_t>(ctx(), want.ds)) << what << " scales";
  }
  // head_dim 8: not a whole block of 32
  Pool pool(kCfgs[2], 16, 4);
  std::vector<Seq> seqs = {{5, 1, {}, {}}};
  place(pool, seqs);
  PagedRun r = plan_paged(pool, {&seqs[0]}, 32, ops());
  Q8Act q = make_q8_act(ctx(), 1, 64);
  Batch b(ctx());
  EXPECT_THROW(ops().paged_attention_q8(b, pool.cache.layer(0), r.q, q, r.plan), Error);
}

// A row's result depends only on its position and data: a sequence alone or in a batch, its
// tokens in one prefill chunk or decoded one at a time give bit-identical outputs.
TEST(LlmPagedAttention, RowsDoNotDependOnTheBatch) {
  const Cfg c = kCfgs[1];  // GQA 4
  const int block = 16, n_blocks = 48;
  Pool pool(c, block, n_blocks);
  Seq a{290, 40, make_qkv(c, 290, 1), {}}, other{100, 1, make_qkv(c, 100, 2), {}},
      third{33, 33, make_qkv(c, 33, 3), {}};
  int next = 0;
  for (auto* s : {&a, &other, &third}) {
    for (int b = 0; b < (s->len + block - 1) / block; ++b) s->blocks.push_back(next++);
    pool.write(s->blocks, s->data.k, s->data.v, s->len);
  }
  const size_t per = size_t(c.nh * c.hd);
  auto chunk = run_paged(pool, {&a}, 256);
  auto batched = run_paged(pool, {&other, &a, &third}, 256);
  ASSERT_EQ(std::memcmp(chunk.data(), batched.data() + per, chunk.size() * 4), 0) << "alone vs in a batch";
  for (int t : {0, 17, 39}) {  // the chunk's rows decoded one at a time
    Seq one = a;
    one.len = a.len - 40 + t + 1;
    one.n_new = 1;
    auto got = run_paged(pool, {&third, &one}, 256);
    ASSERT_EQ(std::memcmp(got.data() + 33 * per, chunk.data() + size_t(t) * per, per * 4), 0) << "token " << t;
    // Fewer invocations per decode row (16 on an adapter of 64-invocation workgroups, against the
    // default's 32 for head_dim 128; without the next key block prefetched: it needs 4 x tpq
    // >= head_dim): the same bits.
    LlmCaps small = llm_caps(ctx());
    small.max_invocations = 64;
    LlmOps narrow(ctx(), small);
    auto w = run_paged(pool, {&one, &other}, 256, narrow);
    ASSERT_EQ(std::memcmp(w.data(), chunk.data() + size_t(t) * per, per * 4), 0) << "token " << t << " 64 invocations";
  }
}

// rope_kv_append with cache rows writes each token's K/V to its own row (the paged layout) and
// rotates exactly as with positions.
TEST(LlmPagedAttention, RopeKvAppendToCacheRows) {
  const Cfg c{4, 2, 8};
  const int n = 5, slots = 32;
  auto all = make_qkv(c, n, 9);
  ModelConfig mc;  // theta 10000, no scaling
  mc.head_dim = mc.rope_dim = c.hd;
  auto table = make_rope_table(ctx(), mc.rope_inv_freq(), c.hd, 64);
  std::vector<uint32_t> pos = {3, 4, 40, 41, 7, /* rows: */ 30, 2, 17, 0, 9};
  auto pt = make_tensor(ctx(), {int64_t(pos.size())}, DType::U32, std::as_bytes(std::span(pos)));
  auto run = [&](bool rows, const KvCache& cache) {
    auto qkv = make_tensor(ctx(), {int64_t(all.fused.size())}, all.fused);
    RopeKvArgs a;
    a.n_tokens = n;
    a.n_heads = c.nh;
    a.positions = pt;
    a.cache_rows = rows;
    Batch b(ctx());
    ops().rope_kv_append(b, qkv, table, cache.layer(0), a);
    b.run();
    return download<float>(ctx(), qkv);
  };
  auto paged = make_kv_cache(ctx(), 1, c.nkv, slots, c.hd), plain = make_kv_cache(ctx(), 1, c.nkv, slots, c.hd);
  fill_u32(ctx(), paged.k, 0);
  fill_u32(ctx(), paged.v, 0);
  auto q1 = run(true, paged), q2 = run(false, plain);
  EXPECT_EQ(q1, q2);  // the queries rotate the same
  auto pk = download<float>(ctx(), paged.k), xk = download<float>(ctx(), plain.k);
  auto pv = download<float>(ctx(), paged.v), xv = download<float>(ctx(), plain.v);
  for (int t = 0; t < n; ++t)
    for (int h = 0; h < c.nkv; ++h)
      for (int d = 0; d < c.hd; ++d) {
        size_t at_paged = size_t((h * slots + int(pos[size_t(n + t)])) * c.hd + d),
               at_plain = size_t((h * slots + t) * c.hd + d);
        ASSERT_EQ(pk[at_paged], xk[at_plain]) << t << " " << h << " " << d;
        ASSERT_EQ(pv[at_paged], xv[at_plain]) << t << " " << h << " " << d;
      }
}
