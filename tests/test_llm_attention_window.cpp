// Sliding-window attention (Mistral, Gemma, Phi-3) and Gemma 2's soft-capped scores: every attention
// kernel with AttentionArgs::window / softcap (and PagedAttentionArgs') against the f64 reference
// (ref::attention with the window and the cap), windows of one key, smaller than a key block, one tiled block (64) and
// past the sequence, and over a sliding-window layer's ring cache; prefill (every prefill kernel; chunks giving the
// same bits as one pass), decode (every decode kernel and schedule, fixed and GPU-read positions, several splits) and
// paged attention (scattered blocks; a row's bits the same alone, in a batch, or decoded one by one). The caches are
// poisoned past the written rows; keys before the window are written (they must be skipped, not just absent).
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

// GQA 4 at head_dim 128, head dims no tile divides (20, 96) with GQA 3, GQA 8 at head_dim 8.
const Cfg kCfgs[] = {{8, 2, 128}, {6, 2, 20}, {3, 1, 96}, {8, 1, 8}};
const int kWindows[] = {1, 5, 64, 1000};

float scale_of(const Cfg& c) { return 1.f / std::sqrt(float(c.hd)); }

// The kernels: flash_attn_tiled_pf.wgsl (subgroup rows) / flash_decode_sg.wgsl; without subgroups
// (the tiled kernel's rows through workgroup memory; flash_decode.wgsl); with 2 KiB of workgroup
// memory (flash_attn.wgsl for both); flash_decode_sg.wgsl with 1-lane key groups.
struct VariantSpec {
  bool subgroups;
  uint32_t storage;
  const char* tuning;
};
const VariantSpec kVariants[] = {{true, 0, ""},
                                 {false, 0, ""},
                                 {false, 2048, ""},
                                 {true, 0, "attn_dec_tpk=1,attn_dec_u=1,attn_dec_wg=8,attn_dec_wgs=64"}};
const LlmOps& variant(size_t i) {
  static std::vector<std::unique_ptr<LlmOps>> v = [] {
    std::vector<std::unique_ptr<LlmOps>> r;
    for (const VariantSpec& s : kVariants) {
      LlmCaps caps = llm_caps(ctx());
      if (!s.subgroups) caps.subgroups = false, caps.subgroup_size = 0;
      if (s.storage) caps.workgroup_storage = std::min(caps.workgroup_storage, s.storage);
      r.push_back(std::make_unique<LlmOps>(ctx(), caps));
      apply_tuning(r.back()->tuning, s.tuning);
    }
    return r;
  }();
  return *v.at(i);
}
std::string variant_name(size_t i) {
  return std::string(kVariants[i].subgroups ? "subgroups" : "no subgroups") + (kVariants[i].storage ? " 2 KiB " : " ") +
         kVariants[i].tuning;
}

std::vector<float> slice(const std::vector<float>& v, size_t from, size_t n) {
  return {v.begin() + long(from), v.begin() + long(from + n)};
}

// Appends tokens [start, start + n) of `all` and runs their attention (prefill, or one decode
// token with `splits`; `gpu_pos`: its position read from a GPU buffer, as a recorded step).
std::vector<float> run_step(const LlmOps& o, const Cfg& c, const KvLayer& cache, const Qkv& all, int start, int n,
                            int window, bool decode, int splits = 0, bool gpu_pos = false, float softcap = 0) {
  const int row = (c.nh + 2 * c.nkv) * c.hd;
  std::vector<float> part(all.fused.begin() + start * row, all.fused.begin() + (start + n) * row);
  auto qkv = make_tensor(ctx(), {int64_t(part.size())}, part);
  auto out = test::poisoned(int64_t(n) * c.nh * c.hd);
  Batch b(ctx());
  o.kv_append(b, cache, qkv, c.nh * c.hd, qkv, (c.nh + c.nkv) * c.hd, row, start, n);
  AttentionArgs a;
  a.n_tokens = n;
  a.n_heads = c.nh;
  a.start = start;
  a.q_stride = row;
  a.splits = splits;
  a.window = window;
  a.softcap = softcap;
  Tensor at;
  if (gpu_pos) {
    at = make_tensor(ctx(), {1}, DType::U32);
    const uint32_t p32 = uint32_t(start);
    upload(ctx(), at, std::as_bytes(std::span(&p32, 1)));
    a.start_from = at;
  }
  if (decode)
    o.attention_decode(b, cache, qkv, out, a);
  else
    o.attention_prefill(b, cache, qkv, out, a);
  b.run();
  return download<float>(ctx(), out);
}

KvCache poisoned_cache(const Cfg& c, int max_ctx) {
  KvCache k = make_kv_cache(ctx(), 1, c.nkv, max_ctx, c.hd);
  fill_u32(ctx(), k.k, kPoisonNaN);
  fill_u32(ctx(), k.v, kPoisonNaN);
  return k;
}

}  // namespace

TEST(LlmAttentionWindow, PrefillMatchesReferenceAndChunksGiveTheSameBits) {
  const int len = 150, first = 77;
  for (const Cfg& c : kCfgs) {
    const Qkv all = make_qkv(c, len, 3);
    for (int window : kWindows) {
      const auto want = ref::attention(all.q, all.k, all.v, len, c.nh, c.nkv, c.hd, 0, scale_of(c), window);
      for (size_t i = 0; i < 3; ++i) {
        // (the other kernels at GQA 4 and head_dim 20 only: seconds of SwiftShader each)
        if (i > 0 && (c.hd == 96 || c.hd == 8 || window == 1000)) continue;
        const std::string what = variant_name(i) + ": " + std::to_string(c.nh) + "/" + std::to_string(c.nkv) +
                                 " hd=" + std::to_string(c.hd) + " window " + std::to_string(window);
        KvCache whole_cache = poisoned_cache(c, len + 5);
        const auto whole = run_step(variant(i), c, whole_cache.layer(0), all, 0, len, window, false);
        EXPECT_LE(test::rel_error(whole, want), 1e-5) << what;
        // in two chunks (the second's first rows see keys of the first): the same bits
        KvCache cache = poisoned_cache(c, len + 5);
        auto got = run_step(variant(i), c, cache.layer(0), all, 0, first, window, false);
        const auto second = run_step(variant(i), c, cache.layer(0), all, first, len - first, window, false);
        got.insert(got.end(), second.begin(), second.end());
        EXPECT_EQ(got, whole) << what;
      }
    }
  }
}

TEST(LlmAttentionWindow, DecodeMatchesReference) {
  const int len = 150;
  for (const Cfg& c : kCfgs) {
    const Qkv all = make_qkv(c, len, 5);
    KvCache cache = poisoned_cache(c, len + 50);  // 200 rows: a GPU-read position splits all of them
    run_step(ops(), c, cache.layer(0), all, 0, len, 0, false);
    for (int window : kWindows) {
      const auto want = ref::attention(all.q, all.k, all.v, len, c.nh, c.nkv, c.hd, 0, scale_of(c), window);
      const size_t per = size_t(c.nh * c.hd);
      for (size_t i = 0; i < std::size(kVariants); ++i)
        for (int pos : {3, 70, len - 1})
          for (int splits : {0, 1, 7})
            for (bool gpu_pos : {false, true}) {
              if ((gpu_pos && splits == 1) || (pos == 3 && splits != 0)) continue;
              const auto got = run_step(variant(i), c, cache.layer(0), all, pos, 1, window, true, splits, gpu_pos);
              EXPECT_LE(test::rel_error(got, slice(want, size_t(pos) * per, per)), 1e-5)
                  << variant_name(i) << ": " << c.nh << "/" << c.nkv << " hd=" << c.hd << " window " << window
                  << " pos " << pos << " splits " << splits << (gpu_pos ? " position on the GPU" : "");
            }
    }
  }
}

// Gemma 2's soft-capped scores (cap 1.5: the random scores reach +-10, so it binds) in every
// prefill and decode kernel, with and without a window.
TEST(LlmAttentionWindow, SoftCappedScores) {
  const int len = 70;
  const float cap = 1.5f;
  for (const Cfg& c : {kCfgs[0], kCfgs[1]}) {
    const Qkv all = make_qkv(c, len, 9);
    const size_t per = size_t(c.nh * c.hd);
    for (int window : {0, 5}) {
      const auto want = ref::attention(all.q, all.k, all.v, len, c.nh, c.nkv, c.hd, 0, scale_of(c), window, cap);
      ASSERT_GT(
          test::rel_error(want, ref::attention(all.q, all.k, all.v, len, c.nh, c.nkv, c.hd, 0, scale_of(c), window)),
          1e-2);  // the cap binds
      for (size_t i = 0; i < std::size(kVariants); ++i) {
        const std::string what = variant_name(i) + ": hd=" + std::to_string(c.hd) + " window " + std::to_string(window);
        KvCache cache = poisoned_cache(c, len + 10);
        if (i < 3)
          EXPECT_LE(
              test::rel_error(run_step(variant(i), c, cache.layer(0), all, 0, len, window, false, 0, false, cap), want),
              1e-5)
              << what << " prefill";
        else
          run_step(variant(i), c, cache.layer(0), all, 0, len, window, false);
        for (int splits : {0, 3}) {
          const auto got = run_step(variant(i), c, cache.layer(0), all, len - 1, 1, window, true, splits, false, cap);
          EXPECT_LE(test::rel_error(got, slice(want, size_t(len - 1) * per, per)), 1e-5)
              << what << " decode, splits " << splits;
        }
      }
    }
  }
}

// A sliding-window layer's ring (KvLayer::ring: window + chunk rows, position p in row p % rows):
// a sequence several rings long appended and attended in chunks that straddle the wraps (every
// prefill kernel), then decode steps past more wraps (every decode kernel, fixed and GPU-read
// positions, several splits), against the reference over the whole sequence; rows poisoned first.
// A pass whose window and tokens do not fit the ring is refused.
TEST(LlmAttentionWindow, RingCache) {
  const int len = 120, decode = 5;
  for (const Cfg& c : {kCfgs[1], kCfgs[3]}) {
    const Qkv all = make_qkv(c, len + decode, 11);
    const size_t per = size_t(c.nh * c.hd);
    for (int window : {5, 64}) {
      const int chunk = window == 5 ? 13 : 16, rows = window + chunk;  // rings of 18 and 80 rows
      const auto want = ref::attention(all.q, all.k, all.v, len + decode, c.nh, c.nkv, c.hd, 0, scale_of(c), window);
      for (size_t i = 0; i < std::size(kVariants); ++i) {
        const std::string what = variant_name(i) + ": hd=" + std::to_string(c.hd) + " window " +
                                 std::to_string(window) + " ring of " + std::to_string(rows);
        const int layer_rows[] = {rows};
        KvCache k = make_kv_cache(ctx(), 1, c.nkv, len + decode, c.hd, KvType::F32, layer_rows);
        fill_u32(ctx(), k.k, kPoisonNaN);
        fill_u32(ctx(), k.v, kPoisonNaN);
        const KvLayer cache = k.layer(0);
        ASSERT_TRUE(cache.ring);
        ASSERT_EQ(cache.max_ctx, rows);
        for (int start = 0; start < len; start += chunk) {
          const int n = std::min(chunk, len - start);
          const auto got = run_step(variant(i < 3 ? i : 0), c, cache, all, start, n, window, false);
          EXPECT_LE(test::rel_error(got, slice(want, size_t(start) * per, size_t(n) * per)), 1e-5)
              << what << " prefill at " << start;
        }
        for (int pos = len; pos < len + decode; ++pos) {
          const int splits = pos % 3 == 0 ? 0 : pos % 3 == 1 ? 1 : 3;
          const auto got = run_step(variant(i), c, cache, all, pos, 1, window, true, splits, pos % 2 == 0);
          EXPECT_LE(test::rel_error(got, slice(want, size_t(pos) * per, per)), 1e-5) << what << " decode at " << pos;
        }
        auto q = test::poisoned(int64_t(chunk + 2) * c.nh * c.hd),
             out = test::poisoned(int64_t(chunk + 2) * c.nh * c.hd);
        AttentionArgs a;
        a.n_tokens = chunk + 2;  // window + chunk + 1 keys
        a.n_heads = c.nh;
        a.start = len;
        a.window = window;
        Batch b(ctx());
        EXPECT_THROW(variant(i).attention_prefill(b, cache, q, out, a), Error) << what;
        a.n_tokens = chunk + 1;  // window + chunk keys: fits
        EXPECT_NO_THROW(variant(i).attention_prefill(b, cache, q, out, a)) << what;
      }
    }
  }
}

TEST(LlmAttentionWindow, ArgumentsAreChecked) {
  const Cfg c{4, 2, 8};
  KvCache cache = poisoned_cache(c, 16);
  auto q = test::poisoned(64);
  AttentionArgs a;
  a.n_heads = c.nh;
  a.window = -1;
  Batch b(ctx());
  EXPECT_THROW(ops().attention_decode(b, cache.layer(0), q, q, a), Error);
  PagedAttentionArgs pa;
  pa.n_heads = c.nh;
  pa.n_kv_heads = c.nkv;
  pa.head_dim = c.hd;
  pa.window = -3;
  PagedSequence s;
  s.blocks = {0};
  EXPECT_THROW(ops().plan_paged_attention({s}, pa, 1), Error);
}

// ---- paged attention (serving) --------------------------------------------------------------------

namespace {

struct Seq {
  int len, n_new;  // positions cached after this step; of them the new tokens (the last n_new)
  Qkv data;
  std::vector<int32_t> blocks;
};

// A pool of blocks with the sequences' K/V written into scattered blocks of it.
struct Pool {
  Cfg c;
  int block, n_blocks;
  KvCache cache;
  Pool(const Cfg& cfg, int blk, int nb, std::vector<Seq>& seqs) : c(cfg), block(blk), n_blocks(nb) {
    cache = poisoned_cache(c, nb * blk);
    auto kc = download<float>(ctx(), cache.k), vc = download<float>(ctx(), cache.v);
    int next = 0;
    for (size_t i = 0; i < seqs.size(); ++i) {
      Seq& s = seqs[i];
      s.data = make_qkv(c, s.len, uint32_t(200 + i));
      for (int b = 0; b < (s.len + block - 1) / block; ++b) s.blocks.push_back((next++ * 7) % n_blocks);
      for (int p = 0; p < s.len; ++p) {
        const int row = s.blocks[size_t(p / block)] * block + p % block;
        for (int h = 0; h < c.nkv; ++h)
          for (int d = 0; d < c.hd; ++d) {
            const size_t at = size_t((h * n_blocks * block + row) * c.hd + d);
            kc[at] = s.data.k[size_t((p * c.nkv + h) * c.hd + d)];
            vc[at] = s.data.v[size_t((p * c.nkv + h) * c.hd + d)];
          }
      }
    }
    upload(ctx(), cache.k, std::as_bytes(std::span(kc)));
    upload(ctx(), cache.v, std::as_bytes(std::span(vc)));
  }
  // The new tokens' attention of `seqs` in one batch: [tokens][nh][hd].
  std::vector<float> run(const std::vector<const Seq*>& seqs, int split_len, int window, float softcap = 0) const {
    std::vector<PagedSequence> ps;
    std::vector<float> q;
    int tok = 0;
    for (const Seq* s : seqs) {
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
    a.block = block;
    a.split_len = split_len;
    a.window = window;
    a.softcap = softcap;
    const PagedAttentionPlan plan = ops().plan_paged_attention(ps, a, n_blocks);
    auto qt = make_tensor(ctx(), {int64_t(q.size())}, q);
    auto out = test::poisoned(int64_t(tok) * c.nh * c.hd);
    Batch b(ctx());
    ops().paged_attention(b, cache.layer(0), qt, out, plan);
    b.run();
    return download<float>(ctx(), out);
  }
};

}  // namespace

TEST(LlmAttentionWindow, PagedMatchesReference) {
  for (const Cfg& c : {kCfgs[0], kCfgs[3]}) {
    std::vector<Seq> seqs = {{1, 1, {}, {}}, {70, 1, {}, {}}, {37, 37, {}, {}}, {300, 23, {}, {}}, {17, 2, {}, {}}};
    const Pool pool(c, 16, 40, seqs);
    std::vector<const Seq*> all;
    for (const Seq& s : seqs) all.push_back(&s);
    for (int window : {1, 5, 40, 1000})
      for (int split : {256, 32}) {
        const float cap = window == 40 ? 1.5f : 0.f;  // with Gemma 2's soft-cap too
        const auto got = pool.run(all, split, window, cap);
        size_t at = 0;
        const size_t per = size_t(c.nh * c.hd);
        for (const Seq& s : seqs) {
          const auto want =
              ref::attention(s.data.q, s.data.k, s.data.v, s.len, c.nh, c.nkv, c.hd, 0, scale_of(c), window, cap);
          EXPECT_LE(test::rel_error(slice(got, at, size_t(s.n_new) * per),
                                    slice(want, size_t(s.len - s.n_new) * per, size_t(s.n_new) * per)),
                    1e-5)
              << c.nh << "/" << c.nkv << " hd=" << c.hd << " len " << s.len << " window " << window << " split "
              << split;
          at += size_t(s.n_new) * per;
        }
      }
  }
}

// A row's bits depend only on its position and data, with a window too: alone, in a batch, or
// decoded one token at a time.
TEST(LlmAttentionWindow, PagedRowsDoNotDependOnTheBatch) {
  const Cfg c = kCfgs[0];
  std::vector<Seq> seqs = {{290, 40, {}, {}}, {100, 1, {}, {}}, {33, 33, {}, {}}};
  const Pool pool(c, 16, 48, seqs);
  const Seq &a = seqs[0], &other = seqs[1], &third = seqs[2];
  const size_t per = size_t(c.nh * c.hd);
  for (int window : {7, 50}) {
    const auto chunk = pool.run({&a}, 256, window);
    const auto batched = pool.run({&other, &a, &third}, 256, window);
    ASSERT_EQ(std::memcmp(chunk.data(), batched.data() + per, chunk.size() * 4), 0) << "window " << window;
    for (int t : {0, 17, 39}) {
      Seq one = a;
      one.len = a.len - 40 + t + 1;
      one.n_new = 1;
      const auto got = pool.run({&third, &one}, 256, window);
      ASSERT_EQ(std::memcmp(got.data() + 33 * per, chunk.data() + size_t(t) * per, per * 4), 0)
          << "window " << window << " token " << t;
    }
  }
}
