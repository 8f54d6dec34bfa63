// `wgc bench --ops llm.moe`: the routed experts' linear (moe_linear.wgsl) at Qwen3-30B-A3B's expert
// shapes (128 experts, 8 per token: gate|up 1536 x 2048 and down 2048 x 768 per expert) for one
// token (decode: the rate is the bytes of the 8 experts it reads) and 512 tokens (prefill: every
// expert's rows once; rate in FLOPs), the routing (moe_route.wgsl) recorded
// once before. --quick: 16 experts of 64 x 256. --sizes N: N experts. Checked against the CPU
// reference (double precision) on the first pairs.
#include "bench/bench.h"
#include "cpu/llm/llm_ref.h"
#include "llm/formats/gguf.h"
#include "ops/llm/llm_ops.h"
#include "ops/llm/weights.h"

#include <cmath>
#include <memory>
#include <string>

namespace wgc::bench {
namespace {

using llm::TensorType;

constexpr int kCheckedPairs = 4;

struct MoeWeight {
  llm::GpuWeight w;
  std::vector<std::byte> bytes;
};
struct MoeData {
  std::shared_ptr<llm::LlmOps> ops;
  std::shared_ptr<MoeWeight> mw;
  llm::MoeRouting r;
  std::vector<float> x;
  Tensor xt, y;
};

std::vector<Case> moe_cases(const Context& ctx, const Options& o) {
  std::vector<Case> out;
  auto ops = std::make_shared<llm::LlmOps>(ctx);
  const int k = o.quick ? 4 : 8;
  const int E = !o.sizes.empty() ? int(o.sizes[0]) : o.quick ? 16 : 128;
  const int64_t hidden = o.quick ? 256 : 2048, ffn = o.quick ? 64 : 768;
  struct Shape {
    const char* name;
    int64_t rows, cols;
  };
  for (Shape sh : {Shape{"gate_up", 2 * ffn, hidden}, Shape{"down", hidden, ffn}}) {
    for (TensorType t : {TensorType::Q4_0, TensorType::Q8_0}) {
      auto mw = std::make_shared<MoeWeight>();
      mw->bytes = llm::ref::random_weight(t, int64_t(E) * sh.rows, sh.cols, 5);
      mw->w = llm::upload_weight(ctx, t, mw->bytes, int64_t(E) * sh.rows, sh.cols);
      for (int n : {1, o.quick ? 16 : 512}) {
        auto d = std::make_shared<MoeData>();
        d->ops = ops;
        d->mw = mw;
        d->r = llm::make_moe_routing(ctx, n, E, k);
        std::vector<float> logits(size_t(n) * size_t(E));
        for (size_t i = 0; i < logits.size(); ++i) logits[i] = float(std::sin(double(i) * 1.7));
        {
          const Tensor lt = make_tensor(ctx, {int64_t(logits.size())}, logits);
          Batch b(ctx);
          ops->moe_route(b, lt, E, n, true, d->r);
          b.run();
        }
        d->x.resize(size_t(n) * size_t(sh.cols));
        for (size_t i = 0; i < d->x.size(); ++i) d->x[i] = float(std::sin(double(i) * 0.37));
        d->xt = make_tensor(ctx, {int64_t(d->x.size())}, d->x);
        d->y = make_tensor(ctx, {int64_t(n) * k * sh.rows});
        Case c;
        c.op = "llm.moe";
        c.version = std::string(llm::to_string(t)) + "/" + sh.name;
        c.is_default = true;
        c.size =
            std::to_string(E) + "x" + std::to_string(sh.rows) + "x" + std::to_string(sh.cols) + "x" + std::to_string(n);
        c.elements = double(n) * k * double(sh.rows) * double(sh.cols);
        const double expert_bytes = double(d->mw->w.gpu_bytes()) / E;
        c.bytes = expert_bytes * std::min<double>(E, double(n) * k) + 4.0 * double(n) * double(sh.cols) +
                  4.0 * double(n) * k * double(sh.rows);
        if (n > 1) c.flops = 2.0 * double(n) * k * double(sh.rows) * double(sh.cols);
        const int64_t rows = sh.rows, cols = sh.cols;
        c.record = [d, n, rows, cols](Batch& b) {
          d->ops->moe_linear(b, d->mw->w, rows, d->xt, cols, false, d->y, rows, 0, n, d->r);
        };
        c.check = [d, n, k, E, t, rows, cols, ctx] {
          Batch b(ctx);
          d->ops->moe_linear(b, d->mw->w, rows, d->xt, cols, false, d->y, rows, 0, n, d->r);
          b.run();
          const auto y = download<float>(ctx, d->y);
          const auto ids = download<uint32_t>(ctx, d->r.ids);
          const uint64_t per = llm::ggml_bytes(t, rows, cols);
          std::vector<float> got;
          std::vector<double> want;
          for (int q = 0; q < std::min(kCheckedPairs, n * k); ++q) {
            const auto wd = llm::ref::dequantize(
                t, std::span(d->mw->bytes).subspan(size_t(ids[size_t(q)] % uint32_t(E)) * per, per), rows, cols);
            const float* xr = d->x.data() + (q / k) * cols;
            for (int64_t i = 0; i < rows; ++i) {
              double s = 0;
              for (int64_t c2 = 0; c2 < cols; ++c2) s += wd[size_t(i * cols + c2)] * xr[c2];
              want.push_back(s);
              got.push_back(y[size_t(q * rows + i)]);
            }
          }
          return cpu::max_rel_error(std::span<const float>(got), std::span<const double>(want));
        };
        out.push_back(std::move(c));
      }
    }
  }
  return out;
}

Register moe_reg("llm.moe", moe_cases);

}  // namespace
}  // namespace wgc::bench
