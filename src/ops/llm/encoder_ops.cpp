#include "ops/llm/encoder_ops.h"

#include "ops/dense_common.h"

namespace wgc::llm {

void encoder_attention(Batch& b, const Tensor& qkv, const Tensor& ranges, std::span<const uint32_t> ranges_host,
                       const Tensor& out, const EncoderAttnDims& d) {
  const char* op = "encoder_attention";
  detail::check_words(qkv, 1, "qkv", op);
  detail::check_words(out, 1, "out", op);
  detail::check_words(ranges, 2 * uint64_t(d.n_tokens), "ranges", op);
  check_encoder_attention(d, ranges_host, qkv.bytes() / 4, out.bytes() / 4, op);
  const uint64_t rows = uint64_t(d.n_tokens) * d.n_heads;
  detail::check_index_range(rows, op);
  if (rows == 0) return;
  Kernel k = detail::dense_kernel(b.context(), "encoder/attention.wgsl", {});
  Params p(d.n_tokens, d.n_heads, d.n_kv_heads, d.head_dim, d.stride, d.q_off, d.k_off, d.v_off, d.o_stride, d.o_off,
           d.scale, 0u);
  b.dispatch(k, {qkv, ranges, out}, p, groups_1d(b.context(), rows));
}

}  // namespace wgc::llm
