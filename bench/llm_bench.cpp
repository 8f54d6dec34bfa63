// `wgc bench --ops llm.matvec,llm.matmul`: every version of the LLM linear kernels for the main
// weight types at an 8B model's square projection (4096 x 4096 by default; --sizes sets the side):
// matvec = one token (rate: the bytes it must read), matmul = prefill of 512 tokens (FLOPs).
// Checked against the CPU reference (double precision) on the first tokens.
#include "bench/bench.h"
#include "cpu/llm/llm_ref.h"
#include "ops/llm/llm_ops.h"

#include <algorithm>
#include <cmath>
#include <memory>

namespace wgc::bench {
namespace {

using llm::LinearVersion;
using llm::TensorType;

constexpr int kPrefillTokens = 512;
constexpr int kCheckedTokens = 2;  // tokens compared with the CPU reference

struct LinearData {
  llm::GpuWeight w;
  std::vector<double> deq;  // the weights as the reference sees them
  std::vector<float> x;
  Tensor xt, y;
};

std::vector<Case> linear_cases(const Context& ctx, const Options& o, bool prefill) {
  auto ops = std::make_shared<llm::LlmOps>(ctx);
  const int n = prefill ? (o.quick ? 7 : kPrefillTokens) : 1;
  std::vector<std::pair<LinearVersion, std::string>> versions;
  if (prefill) {
    versions = {{LinearVersion::Shared, "tiled"}, {LinearVersion::RegTile, "regtile"}};
  } else {
    versions = {{LinearVersion::Naive, "naive"}, {LinearVersion::Shared, "shared"}};
    if (ctx.features().subgroups) versions.push_back({LinearVersion::Subgroup, "subgroup"});
  }
  std::vector<Case> out;
  for (double s : sizes_or(o, ctx, {256}, {256}, {4096})) {
    const auto side = static_cast<int64_t>(s);
    for (TensorType t : {TensorType::F16, TensorType::Q8_0, TensorType::Q4_0}) {
      auto d = std::make_shared<LinearData>();
      auto bytes = llm::ref::random_weight(t, side, side, 7);
      d->w = llm::upload_weight(ctx, t, bytes, side, side);
      d->deq = llm::ref::dequantize(t, bytes, side, side);
      d->x.resize(size_t(n) * size_t(side));
      for (size_t i = 0; i < d->x.size(); ++i) d->x[i] = float(std::sin(double(i) * 0.37));
      d->xt = make_tensor(ctx, {int64_t(d->x.size())}, d->x);
      d->y = make_tensor(ctx, {int64_t(n) * side});
      for (auto& [v, vname] : versions) {
        Case c;
        c.op = prefill ? "llm.matmul" : "llm.matvec";
        c.version = std::string(llm::to_string(t)) + "/" + vname;
        c.size = std::to_string(side) + "x" + std::to_string(side) + (prefill ? "x" + std::to_string(n) : "");
        c.elements = double(side) * double(side);
        c.bytes = double(d->w.gpu_bytes()) + 4.0 * double(n) * double(2 * side);
        if (prefill) c.flops = 2.0 * double(n) * double(side) * double(side);
        c.record = [ops, d, v, n](Batch& b) { ops->linear(b, d->w, d->xt, d->y, n, {}, v); };
        c.check = [ops, d, v, n, side, &ctx] {
          fill_u32(ctx, d->y, kPoisonNaN);
          Batch b(ctx);
          ops->linear(b, d->w, d->xt, d->y, n, {}, v);
          b.run();
          auto got = download<float>(ctx, d->y);
          const int k = std::min(n, kCheckedTokens);
          std::vector<float> xk(d->x.begin(), d->x.begin() + std::ptrdiff_t(k * side));
          auto want = llm::ref::linear(d->deq, side, xk, k, 0, side);
          return cpu::max_rel_error(std::span<const float>(got), std::span<const double>(want));
        };
        c.tolerance = 1e-4;
        out.push_back(std::move(c));
      }
    }
  }
  return out;
}

Register matvec_reg("llm.matvec", [](const Context& c, const Options& o) { return linear_cases(c, o, false); });
Register matmul_reg("llm.matmul", [](const Context& c, const Options& o) { return linear_cases(c, o, true); });

}  // namespace
}  // namespace wgc::bench
