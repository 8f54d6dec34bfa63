#include "cpu/llm/encoder_attention.h"

#include "util/error.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace wgc::llm {

void check_encoder_attention(const EncoderAttnDims& d, std::span<const uint32_t> ranges, uint64_t qkv_elems,
                             uint64_t out_elems, const char* op) {
  auto fail = [&](const std::string& what) { throw Error(std::string("wgc: ") + op + ": " + what); };
  if (d.n_heads == 0 || d.n_kv_heads == 0 || d.head_dim == 0) fail("n_heads, n_kv_heads and head_dim must be > 0");
  if (d.n_heads % d.n_kv_heads)
    fail(std::to_string(d.n_heads) + " heads are not a multiple of " + std::to_string(d.n_kv_heads) + " kv heads");
  if (d.head_dim > 256) fail("head_dim " + std::to_string(d.head_dim) + " exceeds 256");
  if (ranges.size() < 2 * uint64_t(d.n_tokens))
    fail("ranges holds " + std::to_string(ranges.size()) + " entries for " + std::to_string(d.n_tokens) + " tokens");
  const uint64_t q_end = uint64_t(d.q_off) + uint64_t(d.n_heads) * d.head_dim;
  const uint64_t kv_end = std::max(d.k_off, d.v_off) + uint64_t(d.n_kv_heads) * d.head_dim;
  if (std::max(q_end, kv_end) > d.stride) fail("q, k or v heads reach past the row stride " + std::to_string(d.stride));
  uint64_t rows = 0;
  for (uint32_t t = 0; t < d.n_tokens; ++t) {
    const uint32_t b = ranges[2 * size_t(t)], e = ranges[2 * size_t(t) + 1];
    if (b >= e)
      fail("token " + std::to_string(t) + " attends to no rows (" + std::to_string(b) + ".." + std::to_string(e) + ")");
    rows = std::max<uint64_t>({rows, e, uint64_t(t) + 1});
  }
  if (rows * d.stride > qkv_elems)
    fail("qkv holds " + std::to_string(qkv_elems) + " elements, rows up to " + std::to_string(rows) + " need " +
         std::to_string(rows * d.stride));
  if (d.n_tokens && (uint64_t(d.n_tokens) - 1) * d.o_stride + d.o_off + uint64_t(d.n_heads) * d.head_dim > out_elems)
    fail("out holds " + std::to_string(out_elems) + " elements, too few for " + std::to_string(d.n_tokens) + " tokens");
}

namespace cpu {

void encoder_attention(std::span<const float> qkv, std::span<const uint32_t> ranges, std::span<float> out,
                       const EncoderAttnDims& d, uint64_t r0, uint64_t r1) {
  const uint32_t hd = d.head_dim, group = d.n_heads / d.n_kv_heads;
  std::vector<double> s, acc(hd);
  for (uint64_t r = r0; r < r1; ++r) {
    const uint64_t t = r / d.n_heads, h = r % d.n_heads, g = h / group;
    const uint32_t k0 = ranges[2 * t], k1 = ranges[2 * t + 1];
    const float* q = &qkv[t * d.stride + d.q_off + h * hd];
    s.assign(k1 - k0, 0.0);
    double mx = -INFINITY;
    for (uint32_t j = k0; j < k1; ++j) {
      const float* k = &qkv[uint64_t(j) * d.stride + d.k_off + g * hd];
      double dot = 0;
      for (uint32_t i = 0; i < hd; ++i) dot += double(q[i]) * double(k[i]);
      s[j - k0] = dot * double(d.scale);
      mx = std::max(mx, s[j - k0]);
    }
    double sum = 0;
    for (double& e : s) sum += e = std::exp(e - mx);
    std::fill(acc.begin(), acc.end(), 0.0);
    for (uint32_t j = k0; j < k1; ++j) {
      const float* v = &qkv[uint64_t(j) * d.stride + d.v_off + g * hd];
      const double pj = s[j - k0];
      for (uint32_t i = 0; i < hd; ++i) acc[i] += pj * double(v[i]);
    }
    float* o = &out[t * d.o_stride + d.o_off + h * hd];
    for (uint32_t i = 0; i < hd; ++i) o[i] = float(acc[i] / sum);
  }
}

void encoder_attention(std::span<const float> qkv, std::span<const uint32_t> ranges, std::span<float> out,
                       const EncoderAttnDims& d) {
  check_encoder_attention(d, ranges, qkv.size(), out.size(), "encoder_attention (cpu)");
  encoder_attention(qkv, ranges, out, d, 0, uint64_t(d.n_tokens) * d.n_heads);
}

}  // namespace cpu
}  // namespace wgc::llm
