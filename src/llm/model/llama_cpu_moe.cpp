// The CPU engine's mixture-of-experts step (Op::Moe): the router's top-k per token, then the
// tokens grouped by expert, so each expert's gate|up and down are read once per step whatever the
// number of tokens routed to it; the shared expert (Qwen2-MoE) gated by a sigmoid. Every row's
// arithmetic is the linear kernels' (batch-invariant), so a token's result does not depend on
// the others in its step.
#include "llm/model/llama_cpu.h"
#include "util/error.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace wgc::llm {

namespace cpu_moe {

// The top k of n logits (ties: the lower expert; NaN ranks last, weight 0) and their softmax weights,
// renormalised to sum 1 when norm (moe_route.wgsl's rule).
void route(const float* logits, int64_t n, int64_t k, bool norm, int32_t* ids, float* wts) {
  double mx = -INFINITY;
  for (int64_t e = 0; e < n; ++e)
    if (!std::isnan(logits[e])) mx = std::max(mx, double(logits[e]));
  double sum = 0;
  for (int64_t e = 0; e < n; ++e)
    if (!std::isnan(logits[e])) sum += std::exp(double(logits[e]) - mx);
  std::vector<int32_t> order(static_cast<size_t>(n));
  for (int64_t e = 0; e < n; ++e) order[size_t(e)] = int32_t(e);
  auto key = [&](int32_t e) { return std::isnan(logits[e]) ? -INFINITY : double(logits[e]); };
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return key(a) > key(b); });
  double sel = 0;
  for (int64_t j = 0; j < k; ++j) sel += std::exp(key(order[size_t(j)]) - mx);
  for (int64_t j = 0; j < k; ++j) {
    ids[j] = order[size_t(j)];
    wts[j] = float(std::exp(key(ids[j]) - mx) / (norm ? sel : sum));
  }
}

}  // namespace cpu_moe

void CpuForward::moe(const CpuLayer& L, const float* h, float* x, int64_t n) {
  const CpuWeights& W = *w_;
  const CpuMoe& m = *L.moe;
  const int64_t H = W.hidden, E = m.n_experts, k = m.k, F = m.ffn, ls = m.router.rows;
  linear(m.router, h, H, n, moe_logits_.data(), ls, false);
  std::vector<int32_t> ids(size_t(n * k));
  std::vector<float> wts(size_t(n * k));
  for (int64_t t = 0; t < n; ++t)
    cpu_moe::route(moe_logits_.data() + t * ls, E, k, m.norm_topk, ids.data() + t * k, wts.data() + t * k);
  // The pairs (token, slot) of each expert, in token order.
  std::vector<std::vector<int64_t>> pairs(static_cast<size_t>(E));
  for (int64_t q = 0; q < n * k; ++q) pairs[size_t(ids[size_t(q)])].push_back(q);
  for (int64_t e = 0; e < E; ++e) {
    const auto& ps = pairs[size_t(e)];
    const int64_t c = int64_t(ps.size());
    if (c == 0) continue;
    for (int64_t i = 0; i < c; ++i) std::memcpy(moe_x_.data() + i * H, h + (ps[size_t(i)] / k) * H, size_t(H) * 4);
    linear(m.gate_up[size_t(e)], moe_x_.data(), H, c, moe_gu_.data(), 2 * F, false);
    pool_->parallel_for(c, [&](int64_t i, int) {
      const float* g = moe_gu_.data() + i * 2 * F;
      k_.swiglu(g, g + F, moe_act_.data() + i * F, F);
    });
    linear(m.down[size_t(e)], moe_act_.data(), F, c, moe_out_.data(), H, false);
    for (int64_t i = 0; i < c; ++i)
      std::memcpy(moe_y_.data() + ps[size_t(i)] * H, moe_out_.data() + i * H, size_t(H) * 4);
  }
  const int64_t S = m.shared_ffn;
  if (S) {
    linear(L.mat(Mat::GateUp), h, H, n, moe_sgu_.data(), 2 * S, false);
    pool_->parallel_for(n, [&](int64_t t, int) {
      const float* g = moe_sgu_.data() + t * 2 * S;
      k_.swiglu(g, g + S, moe_sact_.data() + t * S, S);
    });
    linear(L.mat(Mat::Down), moe_sact_.data(), S, n, moe_ys_.data(), H, false);
  }
  pool_->parallel_for(n, [&](int64_t t, int) {
    const float gate = S ? 1.f / (1.f + std::exp(-moe_logits_[size_t(t * ls + E)])) : 0.f;
    for (int64_t i = 0; i < H; ++i) {
      float acc = 0;
      for (int64_t j = 0; j < k; ++j) acc += wts[size_t(t * k + j)] * moe_y_[size_t((t * k + j) * H + i)];
      if (S) acc += gate * moe_ys_[size_t(t * H + i)];
      x[t * H + i] += acc;
    }
  });
}

}  // namespace wgc::llm
