// LlmOps::linear with f32 activations: the version choice, and the kernels of many tokens (naive,
// the 64 x 64 tiled matmul, the register-tiled matmul); one token goes to the matvecs (matvec.cpp),
// the serving versions to linear_batched.cpp.
#include "ops/llm/llm_ops.h"
#include "ops/llm/op_checks.h"
#include "util/error.h"

namespace wgc::llm {

namespace {

using detail::need;
using detail::need_elems;
using detail::round16;
using detail::str;
using detail::u32;

constexpr uint32_t kNaiveWG = 64;
// matmul_regtile.wgsl: weight rows per invocation (8 x 4 outputs; session 6: 4 beat 8 by 27%, 8B F16 pp512).
constexpr uint32_t kRegTileTn = 4;

// matmul_regtile.wgsl's variant: the tile (tokens x weight rows x k step) for one weight type, its
// sizes as constants in the source and each invocation loading its share of the next tile into
// registers before this tile's math (RT_PREFETCH).
struct RegTileVariant {
  TensorType type = TensorType::F32;
  uint32_t bm = 0, bn = 0, bk = 0;
  uint32_t invocations() const { return bm * bn / (8 * kRegTileTn); }

  KernelSpec spec() const {
    const uint32_t nt = invocations();
    auto decl = [&](const char* name, uint32_t val) {
      return std::string("const ") + name + ": u32 = " + std::to_string(val) + "u;\n";
    };
    KernelSpec s;
    s.key = "llm/regtile/" + str(type) + "/" + std::to_string(bm) + "x" + std::to_string(bn) + "x" +
            std::to_string(bk) + "/8x4/prefetch";
    s.files = {"llm/common.wgsl", "llm/weights/" + str(type) + ".wgsl", "llm/matmul_regtile.wgsl"};
    s.prelude = decl("BM", bm) + decl("BN", bn) + decl("BK", bk) + decl("NT", nt) + decl("KQ", bk / 4) +
                decl("AS", bk * bm / 4) + decl("BS", bk * bn / 4) + decl("RT_TN", kRegTileTn) +
                "const RT_DB: bool = false;\nconst RT_PREFETCH: bool = true;\nconst RT_WPT: u32 = " +
                std::to_string(ceil_div(bn * bk / 4, nt)) +
                "u;\nconst RT_XPT: u32 = " + std::to_string(ceil_div(bm * bk / 4, nt)) + "u;\n";
    return s;
  }
};

}  // namespace

Kernel LlmOps::linear_kernel(const std::string& kind, TensorType t) const {
  if (kind == "naive")
    return kernel({"llm/naive/" + str(t),
                   {"llm/common.wgsl", "llm/weights/" + str(t) + ".wgsl", "llm/linear_naive.wgsl"},
                   "",
                   {{"WG", kNaiveWG}}});
  if (kind == "matmul")
    return kernel(
        {"llm/matmul/" + str(t), {"llm/common.wgsl", "llm/weights/" + str(t) + ".wgsl", "llm/matmul_tiled.wgsl"}});
  if (kind == "regtile") {
    const RegTileVariant rv{t, tuning.matmul_bm, tuning.matmul_bn, tuning.matmul_bk};
    const std::string op = "linear regtile";
    need(rv.bm > 0 && rv.bn > 0 && rv.bm % 8 == 0 && rv.bn % 8 == 0, op,
         "tile " + std::to_string(rv.bm) + "x" + std::to_string(rv.bn) + ": both must be multiples of 8");
    need(rv.bk > 0 && rv.bk % 4 == 0, op, "BK " + std::to_string(rv.bk) + " is not a multiple of 4");
    need(
        rv.invocations() <= max_wg_, op,
        std::to_string(rv.invocations()) + " invocations per workgroup, the adapter allows " + std::to_string(max_wg_));
    const uint64_t shared = uint64_t(rv.bk) * (rv.bm + rv.bn) * 4;
    need(shared <= caps_.workgroup_storage, op,
         std::to_string(shared) + " bytes of workgroup memory, the adapter allows " +
             std::to_string(caps_.workgroup_storage));
    return kernel(rv.spec());
  }
  throw Error("wgc: llm: no kernel kind '" + kind + "'");
}

void LlmOps::linear(Batch& b, const GpuWeight& w, const Tensor& x, const Tensor& y, int n_tokens,
                    const LinearOptions& o, LinearVersion v) const {
  const std::string op = "linear " + str(w.type);
  const int64_t rows = o.rows < 0 ? w.rows - o.row0 : o.rows;
  const int64_t xs = o.x_stride < 0 ? w.cols : o.x_stride;
  const int64_t ys = o.y_stride < 0 ? rows : o.y_stride;
  need(n_tokens > 0, op, "no tokens");
  need(o.row0 >= 0 && rows > 0 && o.row0 + rows <= w.rows, op,
       "rows " + std::to_string(o.row0) + "+" + std::to_string(rows) + " of a " + std::to_string(w.rows) +
           "-row weight");
  need_elems(x, (n_tokens - 1) * xs + w.cols, op, "x");
  need_elems(y, (n_tokens - 1) * ys + o.y_offset + rows, op, "y");
  if (o.bias) need_elems(o.bias, o.row0 + rows, op, "bias");
  uint32_t flags = (o.bias ? 1u : 0u) | (o.accumulate ? 2u : 0u);
  Params prm(u32(n_tokens), u32(rows), u32(w.cols), u32(o.row0), u32(xs), u32(ys), u32(o.y_offset), flags);
  const Tensor& bias = o.bias ? o.bias : x;
  const LinearDims d{n_tokens, rows, w.cols, w.type};
  if (v == LinearVersion::Auto) v = choose_linear(d);
  need(supports(v, d), op,
       v == LinearVersion::BatchedQ8 ? "batched-q8 reads Q4_0 and Q8_0 weights only"
                                     : "this adapter has no usable subgroups");
  if (v == LinearVersion::Batched) return linear_batched(b, w, x, y, n_tokens, prm, bias, rows);
  if (v == LinearVersion::BatchedQ8) return linear_batched_q8(b, w, x, xs, y, n_tokens, prm, bias, rows);
  if (v == LinearVersion::Naive) {
    Kernel k = linear_kernel("naive", w.type);
    b.dispatch(k, {w.data, w.scales, x, bias, y}, prm,
               groups_1d(ctx_, ceil_div(uint64_t(n_tokens) * uint64_t(rows), kNaiveWG)));
  } else if (v == LinearVersion::RegTile) {
    Kernel k = linear_kernel("regtile", w.type);
    b.dispatch(k, {w.data, w.scales, Arg(x, 0, x.capacity()), bias, y}, prm,
               {ceil_div(uint64_t(rows), tuning.matmul_bn), ceil_div(uint64_t(n_tokens), tuning.matmul_bm), 1});
  } else if (n_tokens == 1) {
    need(round16(x.bytes()) <= x.capacity(), op, "x buffer too small");
    matvec(b, w, Arg(x, 0, round16(x.bytes())), bias, y, rows, o, flags, v);
  } else {
    Kernel k = linear_kernel("matmul", w.type);
    b.dispatch(k, {w.data, w.scales, x, bias, y}, prm,
               {ceil_div(uint64_t(rows), 64), ceil_div(uint64_t(n_tokens), 64), 1});
  }
}

}  // namespace wgc::llm
