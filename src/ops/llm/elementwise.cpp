// LlmOps' elementwise ops: SwiGLU of separate gate and up rows, y += x, y *= s.
#include "ops/llm/llm_ops.h"
#include "ops/llm/op_checks.h"

namespace wgc::llm {

using detail::need;
using detail::need_elems;
using detail::u32;

void LlmOps::swiglu(Batch& b, const Tensor& gate, int64_t g_stride, int64_t g_off, const Tensor& up, int64_t u_stride,
                    int64_t u_off, const Tensor& out, int n_tokens, int n, int64_t out_stride, bool gelu,
                    bool exact_gelu) const {
  const std::string op = gelu ? "geglu" : "swiglu";
  const int act = gelu ? (exact_gelu ? 2 : 1) : 0;
  if (out_stride < 0) out_stride = n;
  need(n_tokens > 0 && n > 0, op, "empty");
  need_elems(gate, (n_tokens - 1) * g_stride + g_off + n, op, "gate");
  need_elems(up, (n_tokens - 1) * u_stride + u_off + n, op, "up");
  need_elems(out, (n_tokens - 1) * out_stride + n, op, "out");
  static const char* const kNames[] = {"llm/swiglu", "llm/swiglu/gelu", "llm/swiglu/gelu_erf"};
  Kernel k = kernel({kNames[act], {"llm/common.wgsl", "llm/swiglu.wgsl"}, "", {{"GELU", act}}});
  b.dispatch(k, {gate, up, out},
             Params(u32(n_tokens), u32(n), u32(g_stride), u32(g_off), u32(u_stride), u32(u_off), u32(out_stride)),
             groups_1d(ctx_, ceil_div(uint64_t(n_tokens) * uint64_t(n), 256)));
}

void LlmOps::add(Batch& b, const Tensor& x, const Tensor& y, int64_t n) const {
  need_elems(x, n, "add", "x");
  need_elems(y, n, "add", "y");
  Kernel k = kernel({"llm/axpby", {"llm/common.wgsl", "llm/axpby.wgsl"}});
  b.dispatch(k, {x, y}, Params(u32(n), 1.f, 1.f), groups_1d(ctx_, ceil_div(uint64_t(n), 256)));
}

void LlmOps::softcap(Batch& b, const Tensor& y, int64_t n, float cap) const {
  need_elems(y, n, "softcap", "y");
  need(cap > 0 && std::isfinite(cap), "softcap", "cap " + std::to_string(cap));
  Kernel k = kernel({"llm/softcap", {"llm/common.wgsl", "llm/softcap.wgsl"}});
  b.dispatch(k, {y}, Params(u32(n), cap), groups_1d(ctx_, ceil_div(uint64_t(n), 256)));
}

void LlmOps::scale(Batch& b, const Tensor& y, int64_t n, float s) const {
  need_elems(y, n, "scale", "y");
  Kernel k = kernel({"llm/axpby", {"llm/common.wgsl", "llm/axpby.wgsl"}});
  b.dispatch(k, {dummy_, y}, Params(u32(n), s, 0.f), groups_1d(ctx_, ceil_div(uint64_t(n), 256)));
}
}  // namespace wgc::llm
