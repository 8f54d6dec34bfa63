#include "cpu/fused_attention.h"

#include "util/error.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace wgc {

uint64_t FusedAttentionDims::batches() const {
  uint64_t n = 1;
  for (uint32_t i = 0; i < rank; ++i) n *= batch[i];
  return n;
}

namespace {
uint64_t span_of(const FusedAttentionDims& d, const std::array<uint32_t, 4>& st, uint64_t inner) {
  uint64_t hi = 0;
  for (uint32_t i = 0; i < d.rank; ++i)
    if (d.batch[i]) hi += uint64_t(st[i]) * (d.batch[i] - 1);
  return hi + inner;
}
}  // namespace

uint64_t FusedAttentionDims::q_span() const { return span_of(*this, q_strides, uint64_t(lq) * d); }
uint64_t FusedAttentionDims::k_span() const { return span_of(*this, k_strides, uint64_t(d) * lk); }
uint64_t FusedAttentionDims::v_span() const { return span_of(*this, v_strides, uint64_t(lk) * dv); }
uint64_t FusedAttentionDims::m_span() const {
  if (!mask) return 0;
  uint64_t inner = 1 + uint64_t(m_row) * (lq ? lq - 1 : 0) + uint64_t(m_col) * (lk ? lk - 1 : 0);
  return span_of(*this, m_strides, inner);
}

void check(const FusedAttentionDims& d) {
  if (d.rank > FusedAttentionDims::kMaxBatchRank)
    throw Error("wgc: fused attention: " + std::to_string(d.rank) + " batch dims (at most 4)");
  if (d.lk == 0 || d.d == 0) throw Error("wgc: fused attention: no keys or an empty head dimension");
  for (uint64_t n : {d.out_count(), d.q_span(), d.k_span(), d.v_span(), d.m_span()})
    if (n >= (uint64_t(1) << 32)) throw Error("wgc: fused attention: more than 2^32 elements in one operand");
}

namespace cpu {

void fused_attention(std::span<const float> q, std::span<const float> kt, std::span<const float> v,
                     std::span<const float> mask, std::span<float> out, const FusedAttentionDims& d) {
  check(d);
  if (q.size() < d.q_span() || kt.size() < d.k_span() || v.size() < d.v_span() || mask.size() < d.m_span() ||
      out.size() < d.out_count())
    throw Error("wgc: fused attention: buffers smaller than the dims");
  std::vector<double> s(d.lk);
  uint64_t nb = d.batches();
  for (uint64_t b = 0; b < nb; ++b) {
    uint64_t qo = 0, ko = 0, vo = 0, mo = 0, rest = b;
    for (uint32_t i = d.rank; i-- > 0;) {
      uint64_t c = rest % d.batch[i];
      rest /= d.batch[i];
      qo += c * d.q_strides[i], ko += c * d.k_strides[i], vo += c * d.v_strides[i], mo += c * d.m_strides[i];
    }
    for (uint32_t i = 0; i < d.lq; ++i) {
      double mx = -std::numeric_limits<double>::infinity();
      for (uint32_t j = 0; j < d.lk; ++j) {
        double acc = 0;
        for (uint32_t k = 0; k < d.d; ++k)
          acc += double(q[qo + uint64_t(i) * d.d + k]) * kt[ko + uint64_t(k) * d.lk + j];
        acc *= d.scale;
        if (d.mask) acc += mask[mo + uint64_t(i) * d.m_row + uint64_t(j) * d.m_col];
        s[j] = acc;
        mx = std::max(mx, acc);
      }
      double sum = 0;
      for (uint32_t j = 0; j < d.lk; ++j) sum += (s[j] = std::exp(s[j] - mx));
      float* o = out.data() + (b * d.lq + i) * d.dv;
      for (uint32_t c = 0; c < d.dv; ++c) {
        double acc = 0;
        for (uint32_t j = 0; j < d.lk; ++j) acc += s[j] * v[vo + uint64_t(j) * d.dv + c];
        o[c] = float(acc / sum);
      }
    }
  }
}

}  // namespace cpu
}  // namespace wgc
