// Shared by the tests/test_llm_*.cpp files.
#pragma once

#include "cpu/llm/llm_ref.h"
#include "llm/generate/default_model.h"
#include "ops/llm/llm_ops.h"
#include "test_util.h"

#include <array>
#include <functional>
#include <string>
#include <vector>

namespace wgc::test {

// The built-in model file (models/wgc-tiny-dict-q8_0.gguf) as the library looks for it: where
// $WGC_DEFAULT_MODEL says (scripts/device_run.sh points it at the checkout's models/, since the
// GPU machine has no source tree at the build's path), else the source tree's models/.
inline std::filesystem::path default_model() { return llm::default_model_candidates().at(0); }

inline llm::LlmOps& ops() {
  static llm::LlmOps o(ctx());
  return o;
}

// Attention's shape: query heads, key/value heads, head size.
struct Cfg {
  int nh, nkv, hd;
};

// A fused QKV activation [n][(nh + 2 nkv) hd] and the same split into q [n][nh][hd], k, v [n][nkv][hd].
struct Qkv {
  std::vector<float> fused, q, k, v;
};
inline Qkv make_qkv(const Cfg& c, int n, uint32_t seed) {
  Qkv r;
  const int row = (c.nh + 2 * c.nkv) * c.hd;
  r.fused = random_floats(size_t(n * row), seed, -2.f, 2.f);
  for (int t = 0; t < n; ++t) {
    const float* p = &r.fused[size_t(t * row)];
    r.q.insert(r.q.end(), p, p + c.nh * c.hd);
    r.k.insert(r.k.end(), p + c.nh * c.hd, p + (c.nh + c.nkv) * c.hd);
    r.v.insert(r.v.end(), p + (c.nh + c.nkv) * c.hd, p + row);
  }
  return r;
}

inline Tensor poisoned(int64_t n, DType t = DType::F32) {
  auto x = make_tensor(ctx(), {n}, t);
  fill_u32(ctx(), x, kPoisonNaN);
  return x;
}

inline std::vector<float> to_float(const std::vector<double>& v) { return {v.begin(), v.end()}; }

// One token's rows r (a reference's, for y[yoff ..]) as a y of y0.size() elements expects them:
// r, or y0 + r when accumulating, elsewhere y0 (unwritten: test::expect_written_and_gaps).
struct RowsWant {
  std::vector<float> want;
  std::vector<bool> written;
};
inline RowsWant rows_want(const std::vector<double>& r, const std::vector<float>& y0, int64_t yoff, bool accumulate) {
  RowsWant w{y0, std::vector<bool>(y0.size(), false)};
  for (size_t i = 0; i < r.size(); ++i) {
    const size_t yi = size_t(yoff) + i;
    w.want[yi] = float(r[i] + (accumulate ? double(y0[yi]) : 0.0));
    w.written[yi] = true;
  }
  return w;
}

// The versions of a matvec/matmul this adapter runs.
inline std::vector<llm::LinearVersion> linear_versions() {
  std::vector<llm::LinearVersion> v;
  for (auto lv : llm::kLinearVersions)
    if (ops().supports(lv, {})) v.push_back(lv);
  return v;
}

// One token at position 6 (cache row 6), or with positions given, at the position and cache row
// read from them on the GPU.
inline llm::RopeKvArgs qkv_rope_args(int n_heads, bool interleaved, const Tensor* positions) {
  llm::RopeKvArgs a;
  a.n_heads = n_heads;
  a.pos0 = 6;
  a.interleaved = interleaved;
  if (positions) {
    a.positions = *positions;
    a.cache_rows = true;
  }
  return a;
}

// A one-token QKV step with RoPE and the KV-cache append, recorded by `record` into qkv (rows
// floats) and layer 1 of a two-layer cache, all poisoned first: qkv and the k and v caches as bits.
using QkvRopeRecord = std::function<void(Batch&, const Tensor& qkv, const llm::KvLayer& layer)>;
inline std::array<std::vector<uint32_t>, 3> qkv_rope_outputs(int64_t rows, int n_kv, int max_ctx, int head_dim,
                                                             const QkvRopeRecord& record) {
  auto qkv = poisoned(rows);
  auto cache = llm::make_kv_cache(ctx(), 2, n_kv, max_ctx, head_dim);
  fill_u32(ctx(), cache.k, kPoisonNaN);
  fill_u32(ctx(), cache.v, kPoisonNaN);
  Batch b(ctx());
  record(b, qkv, cache.layer(1));
  b.run();
  return {download<uint32_t>(ctx(), qkv), download<uint32_t>(ctx(), cache.k), download<uint32_t>(ctx(), cache.v)};
}

// A fused step's outputs bit-identical to its two passes', which wrote every qkv row and one cache
// row of each kv head (and left the rest poisoned).
inline void expect_same_qkv_rope(const std::array<std::vector<uint32_t>, 3>& fused,
                                 const std::array<std::vector<uint32_t>, 3>& two, int64_t rows, int64_t kv_row_elems,
                                 const std::string& what) {
  EXPECT_EQ(fused[0], two[0]) << what << ": qkv";
  EXPECT_EQ(fused[1], two[1]) << what << ": k cache";
  EXPECT_EQ(fused[2], two[2]) << what << ": v cache";
  for (size_t i = 0; i < 3; ++i) {
    size_t written = 0;
    for (uint32_t v : two[i]) written += v != kPoisonNaN;
    EXPECT_EQ(written, size_t(i == 0 ? rows : kv_row_elems)) << what << " part " << i;
  }
}

}  // namespace wgc::test
