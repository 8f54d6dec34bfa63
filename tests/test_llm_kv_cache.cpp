// The KV cache in 16 and 8 bits (KvType::F16, Q8_0; ops/llm/kv_type.h): the packed appends
// (kv_append, rope_kv_append) against the CPU's packing of the same values, with everything they
// should not write left poisoned; and attention over a packed cache (contiguous: prefill and
// decode, every kernel; paged) against the f64 reference fed the same rounded keys and values, so
// the comparison is as tight as over an f32 cache.
#include "cpu/llm/dequant.h"
#include "llm/formats/model_config.h"
#include "test_llm_util.h"

#include <algorithm>
#include <cmath>
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

constexpr KvType kPacked[] = {KvType::F16, KvType::Q8_0};

// ---- the CPU's packing (the layout ops/llm/kv_type.h describes) ----------------------------------

// Values [n] (n % 32 == 0 for Q8_0) as the packed cache's words: f16 pairs (round to nearest even,
// the lower value in the low half); q8_0 quants then the blocks' f32 scales d = max|x| / 127,
// q = round(x * (1 / d)).
std::vector<uint32_t> pack(KvType t, const std::vector<float>& x) {
  std::vector<uint32_t> w(size_t(kv_words(t, int64_t(x.size()))), 0);
  if (t == KvType::F16) {
    for (size_t i = 0; i < x.size(); i += 2)
      w[i / 2] = uint32_t(f32_to_f16(x[i])) | uint32_t(f32_to_f16(x[i + 1])) << 16;
    return w;
  }
  const size_t scales = x.size() / 4;
  for (size_t b = 0; b < x.size() / 32; ++b) {
    float amax = 0;
    for (size_t j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[b * 32 + j]));
    const float d = amax / 127.f, id = d > 0 ? 1.f / d : 0.f;
    for (size_t j = 0; j < 32; ++j) {
      const int q = std::clamp(int(std::nearbyint(x[b * 32 + j] * id)), -127, 127);
      w[(b * 32 + j) / 4] |= (uint32_t(q) & 0xffu) << (8 * (j % 4));
    }
    std::memcpy(&w[scales + b], &d, 4);
  }
  return w;
}

// The values of a layer's words (as the kernels read them: f16 exactly, q * d as one f32 product).
std::vector<float> unpack(KvType t, std::span<const uint32_t> w, int64_t n) {
  std::vector<float> x(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    if (t == KvType::F16) {
      x[size_t(i)] = f16_to_f32(uint16_t(w[size_t(i / 2)] >> (16 * (i % 2))));
    } else {
      float d;
      std::memcpy(&d, &w[size_t(n / 4 + i / 32)], 4);
      x[size_t(i)] = float(int8_t(uint8_t(w[size_t(i / 4)] >> (8 * (i % 4))))) * d;
    }
  }
  return x;
}

// Layer c's words in tensor t (downloaded).
std::vector<uint32_t> layer_words(const KvLayer& c, const Tensor& t) {
  const auto all = download<uint32_t>(ctx(), t);
  const int64_t unit = c.type == KvType::F32 ? 1 : c.type == KvType::F16 ? 2 : 4, from = int64_t(c.offset) / unit;
  return {all.begin() + from, all.begin() + from + kv_words(c.type, c.values())};
}

// ---- attention inputs ------------------------------------------------------------------------------

// Values [nkv][max_ctx][hd] (the cache's order) as [rows][nkv][hd] (by token).
std::vector<float> to_token_order(const std::vector<float>& x, const Cfg& c, int rows, int max_ctx) {
  std::vector<float> r(size_t(rows) * size_t(c.nkv) * size_t(c.hd));
  for (int p = 0; p < rows; ++p)
    for (int h = 0; h < c.nkv; ++h)
      for (int d = 0; d < c.hd; ++d) r[size_t((p * c.nkv + h) * c.hd + d)] = x[size_t((h * max_ctx + p) * c.hd + d)];
  return r;
}

std::vector<float> slice(const std::vector<float>& v, size_t from, size_t n) {
  return {v.begin() + long(from), v.begin() + long(from + n)};
}

std::string name(KvType t) { return std::string(to_string(t)); }

// Two q8_0 scales (f32 bits) within an ulp: max|x| / 127 on the GPU may round the other way.
bool near_scale(uint32_t a, uint32_t b) { return std::max(a, b) - std::min(a, b) <= 1; }

// RoPE (theta 10000, no scaling) for heads of hd over max_pos positions.
RopeTable rope_table(int hd, int max_pos) {
  ModelConfig mc;
  mc.head_dim = mc.rope_dim = hd;
  return make_rope_table(ctx(), mc.rope_inv_freq(), hd, max_pos);
}

}  // namespace

TEST(LlmKvCache, TypesNamesAndSizes) {
  for (KvType t : kKvTypes) EXPECT_EQ(parse_kv_type(to_string(t)), t);
  EXPECT_THROW(parse_kv_type("q4_0"), OptionError);
  EXPECT_EQ(kv_words(KvType::F32, 64), 64);
  EXPECT_EQ(kv_words(KvType::F16, 64), 32);
  EXPECT_EQ(kv_words(KvType::Q8_0, 64), 16 + 2);
  std::string why;
  EXPECT_FALSE(kv_type_fits(KvType::Q8_0, 48, &why));
  EXPECT_NE(why.find("multiple of 32"), std::string::npos) << why;
  EXPECT_TRUE(kv_type_fits(KvType::F16, 20));
  EXPECT_THROW(make_kv_cache(ctx(), 1, 2, 8, 16, KvType::Q8_0), Error);
  // layers back to back in their words
  const KvCache c = make_kv_cache(ctx(), 3, 2, 8, 32, KvType::Q8_0);
  EXPECT_EQ(c.k.bytes(), 3u * uint64_t(kv_words(KvType::Q8_0, 2 * 8 * 32)) * 4);
  EXPECT_EQ(c.layer(2).offset, 2u * uint32_t(kv_words(KvType::Q8_0, 2 * 8 * 32)) * 4);
  EXPECT_EQ(make_kv_cache(ctx(), 3, 2, 8, 20, KvType::F16).layer(1).offset, uint32_t(2 * 8 * 20));
}

// kv_append of 3 tokens at positions 5..7 into layer 1 of a two-layer packed cache: the CPU's
// packing of those rows, the other rows, the other layer and (q8_0) the other blocks' scales
// still poisoned.
TEST(LlmKvCache, PackedAppendWritesTheCpuPacking) {
  for (KvType t : kPacked)
    for (const Cfg& c : {Cfg{4, 2, 64}, Cfg{3, 1, 32}}) {
      const int max_ctx = 16, n = 3, pos0 = 5;
      const std::string what = name(t) + " hd=" + std::to_string(c.hd);
      KvCache cache = make_kv_cache(ctx(), 2, c.nkv, max_ctx, c.hd, t);
      fill_u32(ctx(), cache.k, kPoisonNaN);
      fill_u32(ctx(), cache.v, kPoisonNaN);
      const Qkv all = make_qkv(c, pos0 + n, 3);
      const int row = (c.nh + 2 * c.nkv) * c.hd;
      const std::vector<float> part(all.fused.begin() + pos0 * row, all.fused.end());
      auto qkv = make_tensor(ctx(), {int64_t(part.size())}, part);
      const KvLayer layer = cache.layer(1);
      Batch b(ctx());
      ops().kv_append(b, layer, qkv, c.nh * c.hd, qkv, (c.nh + c.nkv) * c.hd, row, pos0, n);
      b.run();
      for (int kv = 0; kv < 2; ++kv) {
        const auto got = layer_words(layer, kv == 0 ? cache.k : cache.v);
        // the rows written, in the cache's order (the others: zero here, poison there)
        std::vector<float> rows(size_t(c.nkv * max_ctx * c.hd), 0.f);
        for (int p = pos0; p < pos0 + n; ++p)
          for (int h = 0; h < c.nkv; ++h)
            for (int d = 0; d < c.hd; ++d)
              rows[size_t((h * max_ctx + p) * c.hd + d)] =
                  (kv == 0 ? all.k : all.v)[size_t((p * c.nkv + h) * c.hd + d)];
        const auto want = pack(t, rows);
        ASSERT_EQ(got.size(), want.size());
        const int64_t per_word = t == KvType::F16 ? 2 : 4, scales = int64_t(rows.size()) / 4;
        size_t near = 0;
        for (size_t i = 0; i < got.size(); ++i) {
          // the value (or, past the quants, the block) this word holds, and its position
          const int64_t v0 =
              int64_t(i) < scales || t == KvType::F16 ? int64_t(i) * per_word : (int64_t(i) - scales) * 32;
          const int p = int(v0 / c.hd % max_ctx);
          if (p < pos0 || p >= pos0 + n) {
            ASSERT_EQ(got[i], kPoisonNaN) << what << " word " << i << " (position " << p << ") written";
            continue;
          }
          if (got[i] == want[i]) continue;
          ASSERT_EQ(t, KvType::Q8_0) << what << " word " << i;
          if (int64_t(i) >= scales) {
            ASSERT_TRUE(near_scale(got[i], want[i])) << what << " scale word " << i;
            continue;
          }
          // q8_0: 1 / d on the GPU may round differently: a quant off by one (rarely)
          for (int j = 0; j < 4; ++j) {
            const int g = int8_t(uint8_t(got[i] >> (8 * j))), w = int8_t(uint8_t(want[i] >> (8 * j)));
            ASSERT_LE(std::abs(g - w), 1) << what << " word " << i;
            near += g != w;
          }
        }
        EXPECT_LE(near, rows.size() / 100) << what;
      }
      // layer 0 untouched
      const auto k0 = download<uint32_t>(ctx(), cache.k);
      EXPECT_TRUE(std::all_of(k0.begin(), k0.begin() + kv_words(t, layer.values()), [](uint32_t w) {
        return w == kPoisonNaN;
      })) << what;
    }
}

// rope_kv_append into a packed cache: the query heads bit-identical to the f32 append's, and the
// key and value rows the CPU's packing of the f32 append's (the same rotation, then rounded);
// neox and interleaved pairs, positions and cache rows from the positions buffer.
TEST(LlmKvCache, PackedRopeAppendIsTheF32AppendPacked) {
  const Cfg c{4, 2, 64};
  const int n = 3, max_ctx = 12;
  const int row = (c.nh + 2 * c.nkv) * c.hd;
  const RopeTable table = rope_table(c.hd, 64);
  const auto src = test::random_floats(size_t(n * row), 11, -2.f, 2.f);
  // token t at position 20 + 3t, in cache row 9 - 4t
  const std::vector<uint32_t> pos = {20, 23, 26, 9, 5, 1};
  auto positions = make_tensor(ctx(), {int64_t(pos.size())}, DType::U32, std::as_bytes(std::span(pos)));
  for (bool interleaved : {false, true}) {
    RopeKvArgs a;
    a.n_tokens = n;
    a.n_heads = c.nh;
    a.interleaved = interleaved;
    a.positions = positions;
    a.cache_rows = true;
    auto run = [&](KvType t) {
      auto qkv = make_tensor(ctx(), {int64_t(src.size())}, src);
      KvCache cache = make_kv_cache(ctx(), 2, c.nkv, max_ctx, c.hd, t);
      fill_u32(ctx(), cache.k, kPoisonNaN);
      fill_u32(ctx(), cache.v, kPoisonNaN);
      Batch b(ctx());
      ops().rope_kv_append(b, qkv, table, cache.layer(1), a);
      b.run();
      return std::array<std::vector<uint32_t>, 3>{download<uint32_t>(ctx(), qkv), layer_words(cache.layer(1), cache.k),
                                                  layer_words(cache.layer(1), cache.v)};
    };
    const auto f32 = run(KvType::F32);
    for (KvType t : kPacked) {
      const std::string what = name(t) + (interleaved ? " interleaved" : " neox");
      const auto got = run(t);
      EXPECT_EQ(got[0], f32[0]) << what << ": the rotated queries";
      for (int kv = 1; kv <= 2; ++kv) {
        // the f32 append's rows (poison where it wrote nothing: those rows must stay poisoned)
        std::vector<float> rows(f32[size_t(kv)].size());
        std::memcpy(rows.data(), f32[size_t(kv)].data(), rows.size() * 4);
        std::vector<bool> written(rows.size());
        for (size_t i = 0; i < rows.size(); ++i) {
          written[i] = f32[size_t(kv)][i] != kPoisonNaN;
          if (!written[i]) rows[i] = 0.f;
        }
        const auto want = pack(t, rows);
        const auto& g = got[size_t(kv)];
        ASSERT_EQ(g.size(), want.size());
        const int64_t scales = int64_t(rows.size()) / 4;
        for (size_t i = 0; i < g.size(); ++i) {
          const size_t v0 = t == KvType::F16 ? 2 * i : int64_t(i) < scales ? 4 * i : size_t(int64_t(i) - scales) * 32;
          if (!written[v0]) {
            ASSERT_EQ(g[i], kPoisonNaN) << what << " word " << i;
            continue;
          }
          if (t == KvType::F16) {
            ASSERT_EQ(g[i], want[i]) << what << (kv == 1 ? " k" : " v") << " word " << i;
          } else if (int64_t(i) >= scales) {
            ASSERT_TRUE(near_scale(g[i], want[i])) << what << " scale word " << i;
          } else {
            for (int j = 0; j < 4; ++j)
              ASSERT_LE(std::abs(int(int8_t(uint8_t(g[i] >> (8 * j)))) - int(int8_t(uint8_t(want[i] >> (8 * j))))), 1)
                  << what << " word " << i;
          }
        }
      }
    }
  }
}

// Attention over a packed cache filled by kv_append: prefill (every prefill kernel: the tiled one,
// through workgroup memory, flash_attn.wgsl) and decode (every decode kernel) against the f64
// reference over the cache's own values read back (the rounding is the cache's; the attention
// adds none beyond f32's).
TEST(LlmKvCache, AttentionOverAPackedCacheMatchesTheReferenceOnItsValues) {
  struct V {
    const char* name;
    bool subgroups;
    uint32_t storage;
  };
  std::vector<std::pair<std::string, std::unique_ptr<LlmOps>>> variants;
  for (const V& v : {V{"default", true, 0}, V{"no subgroups", false, 0}, V{"no subgroups, 2 KiB", false, 2048}}) {
    LlmCaps caps = llm_caps(ctx());
    if (!v.subgroups) caps.subgroups = false, caps.subgroup_size = 0;
    if (v.storage) caps.workgroup_storage = std::min(caps.workgroup_storage, v.storage);
    variants.emplace_back(v.name, std::make_unique<LlmOps>(ctx(), caps));
  }
  for (KvType t : kPacked)
    for (const Cfg& c : {Cfg{8, 2, 64}, Cfg{4, 4, 32}, Cfg{6, 2, 20}}) {
      if (!kv_type_fits(t, c.hd)) continue;
      const int len = 45, max_ctx = 53;
      const std::string what =
          name(t) + " " + std::to_string(c.nh) + "/" + std::to_string(c.nkv) + " hd=" + std::to_string(c.hd);
      const Qkv all = make_qkv(c, len, 5);
      const int row = (c.nh + 2 * c.nkv) * c.hd;
      KvCache cache = make_kv_cache(ctx(), 2, c.nkv, max_ctx, c.hd, t);
      fill_u32(ctx(), cache.k, kPoisonNaN);  // rows past the tokens must never be read
      fill_u32(ctx(), cache.v, kPoisonNaN);
      const KvLayer layer = cache.layer(1);
      auto qkv = make_tensor(ctx(), {int64_t(all.fused.size())}, all.fused);
      {
        Batch b(ctx());
        ops().kv_append(b, layer, qkv, c.nh * c.hd, qkv, (c.nh + c.nkv) * c.hd, row, 0, len);
        b.run();
      }
      // the reference on the cache's values
      auto values = [&](const Tensor& tt) {
        auto w = layer_words(layer, tt);
        // (poisoned rows decode to NaN or garbage: cut to the tokens)
        return to_token_order(unpack(t, w, layer.values()), c, len, max_ctx);
      };
      const auto kr = values(cache.k), vr = values(cache.v);
      EXPECT_LT(test::rel_error(kr, all.k), t == KvType::F16 ? 1e-3 : 2e-2) << what << ": the rounding itself";
      const float scale = 1.f / std::sqrt(float(c.hd));
      const auto want = ref::attention(all.q, kr, vr, len, c.nh, c.nkv, c.hd, 0, scale);
      const size_t per = size_t(c.nh * c.hd);
      for (const auto& [vname, o] : variants) {
        AttentionArgs a;
        a.n_tokens = len;
        a.n_heads = c.nh;
        a.q_stride = row;
        auto out = test::poisoned(int64_t(len) * c.nh * c.hd);
        Batch b(ctx());
        o->attention_prefill(b, layer, qkv, out, a);
        b.run();
        EXPECT_LE(test::rel_error(download<float>(ctx(), out), want), 1e-5) << what << " prefill, " << vname;
        // decode: the last token over all keys, in one split and in several
        for (int splits : {1, 4}) {
          AttentionArgs d = a;
          d.n_tokens = 1;
          d.start = len - 1;
          d.splits = splits;
          d.q_offset = int64_t(len - 1) * row;
          auto out1 = test::poisoned(c.nh * c.hd);
          Batch b1(ctx());
          o->attention_decode(b1, layer, qkv, out1, d);
          b1.run();
          EXPECT_LE(test::rel_error(download<float>(ctx(), out1), slice(want, (len - 1) * per, per)), 1e-5)
              << what << " decode, " << vname << ", " << splits << " splits";
        }
      }
    }
}

// Paged attention (serving) over a packed pool: sequences over scattered blocks, decode tokens and
// a prefill chunk in one batch, written by the CPU's packing; against the reference on the packed
// values.
TEST(LlmKvCache, PagedAttentionOverAPackedPoolMatchesTheReferenceOnItsValues) {
  for (KvType t : kPacked)
    for (const Cfg& c : {Cfg{8, 2, 64}, Cfg{4, 1, 32}}) {
      const int block = 16, n_blocks = 12, slots = block * n_blocks;
      const std::string what = name(t) + " " + std::to_string(c.nh) + "/" + std::to_string(c.nkv);
      KvLayer pool = make_kv_layer(ctx(), c.nkv, slots, c.hd, t);
      struct S {
        int len, n_new;
        Qkv data;
        std::vector<int32_t> blocks;
      };
      std::vector<S> seqs = {{1, 1, {}, {}}, {70, 1, {}, {}}, {37, 9, {}, {}}};
      // every slot's value in the pool's order [nkv][slots][hd]; unused slots stay 0
      std::vector<float> kall(size_t(c.nkv * slots * c.hd), 0.f), vall(kall.size(), 0.f);
      int next = 0;
      for (size_t i = 0; i < seqs.size(); ++i) {
        S& s = seqs[i];
        s.data = make_qkv(c, s.len, uint32_t(40 + i));
        for (int b = 0; b < (s.len + block - 1) / block; ++b) s.blocks.push_back((next++ * 7 + 2) % n_blocks);
        for (int p = 0; p < s.len; ++p)
          for (int h = 0; h < c.nkv; ++h)
            for (int d = 0; d < c.hd; ++d) {
              const size_t at = size_t((h * slots + s.blocks[size_t(p / block)] * block + p % block) * c.hd + d);
              kall[at] = s.data.k[size_t((p * c.nkv + h) * c.hd + d)];
              vall[at] = s.data.v[size_t((p * c.nkv + h) * c.hd + d)];
            }
      }
      const auto kw = pack(t, kall), vw = pack(t, vall);
      upload(ctx(), pool.k, std::as_bytes(std::span(kw)));
      upload(ctx(), pool.v, std::as_bytes(std::span(vw)));
      const auto kr = unpack(t, kw, int64_t(kall.size())), vr = unpack(t, vw, int64_t(vall.size()));

      std::vector<PagedSequence> ps;
      std::vector<float> q;
      int tok = 0;
      for (auto& s : seqs) {
        PagedSequence p;
        p.tok0 = tok;
        p.n_tokens = s.n_new;
        p.pos0 = s.len - s.n_new;
        p.blocks = s.blocks;
        ps.push_back(p);
        q.insert(q.end(), s.data.q.begin() + long(p.pos0) * c.nh * c.hd, s.data.q.begin() + long(s.len) * c.nh * c.hd);
        tok += s.n_new;
      }
      PagedAttentionArgs a;
      a.n_heads = c.nh;
      a.n_kv_heads = c.nkv;
      a.head_dim = c.hd;
      a.block = block;
      a.split_len = 32;
      const PagedAttentionPlan plan = ops().plan_paged_attention(ps, a, n_blocks);
      auto qt = make_tensor(ctx(), {int64_t(q.size())}, q);
      auto out = test::poisoned(int64_t(tok) * c.nh * c.hd);
      Batch b(ctx());
      ops().paged_attention(b, pool, qt, out, plan);
      b.run();
      const auto got = download<float>(ctx(), out);
      size_t at = 0;
      const size_t per = size_t(c.nh * c.hd);
      for (auto& s : seqs) {
        // the sequence's packed keys and values, by position
        std::vector<float> k, v;
        for (int p = 0; p < s.len; ++p)
          for (int h = 0; h < c.nkv; ++h) {
            const size_t from = size_t((h * slots + s.blocks[size_t(p / block)] * block + p % block) * c.hd);
            k.insert(k.end(), kr.begin() + long(from), kr.begin() + long(from) + c.hd);
            v.insert(v.end(), vr.begin() + long(from), vr.begin() + long(from) + c.hd);
          }
        const auto want = ref::attention(s.data.q, k, v, s.len, c.nh, c.nkv, c.hd, 0, 1.f / std::sqrt(float(c.hd)));
        EXPECT_LE(test::rel_error(slice(got, at, size_t(s.n_new) * per),
                                  slice(want, size_t(s.len - s.n_new) * per, size_t(s.n_new) * per)),
                  1e-5)
            << what << " len=" << s.len;
        at += size_t(s.n_new) * per;
      }
    }
}

// The fused RoPE epilogues store f32 only: asked to write a packed cache they refuse, naming it.
TEST(LlmKvCache, FusedRopeEpiloguesRefuseAPackedCache) {
  const int hd = 32, nh = 2, nkv = 1;
  KvCache cache = make_kv_cache(ctx(), 1, nkv, 8, hd, KvType::F16);
  const RopeTable table = rope_table(hd, 8);
  const int64_t rows = (nh + 2 * nkv) * hd, cols = 64;
  const auto wdata = test::random_floats(size_t(rows * cols), 1, -1.f, 1.f);
  const GpuWeight w = upload_weight(ctx(), TensorType::F32, std::as_bytes(std::span(wdata)), rows, cols);
  auto x = make_tensor(ctx(), {cols}, test::random_floats(size_t(cols), 2, -1.f, 1.f));
  auto nw = make_tensor(ctx(), {cols}, std::vector<float>(size_t(cols), 1.f));
  auto qkv = test::poisoned(rows);
  RopeKvArgs a;
  a.n_heads = nh;
  Batch b(ctx());
  try {
    ops().rms_norm_qkv_rope(b, x, nw, 1e-5f, w, qkv, table, cache.layer(0), a);
    ADD_FAILURE() << "rms_norm_qkv_rope wrote a packed cache";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("f32 KV cache only"), std::string::npos) << e.what();
  }
}
