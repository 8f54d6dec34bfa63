// `wgc bench --ops sobel,blur`: every stencil version on square images, against the CPU reference.
#include "bench/bench.h"
#include "ops/stencil.h"

#include <cmath>
#include <memory>

namespace wgc::bench {
namespace {

std::vector<Case> make_cases(const Context& ctx, const Options& o, StencilOp op) {
  std::vector<Case> out;
  const bool sobel = op == StencilOp::Sobel;
  for (double s : sizes_or(o, ctx, {65, 257}, {256, 512}, {1024, 4096, 8192})) {
    StencilDims p{op, int(s), int(s), sobel ? 1 : 4, 2.f};
    std::shared_ptr<std::vector<float>> want;
    for (const auto& v : stencil_variants()) {
      if (v.op != op || !v.supports(ctx, p)) continue;
      auto call = std::make_shared<StencilCall>(v.prepare(ctx, p));
      if (!want) want = std::make_shared<std::vector<float>>(stencil_cpu(p, call->host_input));
      Case c;
      c.op = sobel ? "sobel" : "blur";
      c.version = v.name.substr(v.name.find('/') + 1);
      c.size = std::to_string(p.width) + "x" + std::to_string(p.height) + "x" + std::to_string(p.channels);
      c.elements = double(p.width) * p.height;
      c.bytes = double(stencil_bytes_moved(p));
      c.record = [call](Batch& b) { call->record(b); };
      c.check = [call, want, &ctx] {
        fill_u32(ctx, call->output, kPoisonNaN);
        Batch b(ctx);
        call->record(b);
        b.run();
        auto got = download<float>(ctx, call->output);
        return cpu::max_rel_error(std::span<const float>(got), std::span<const float>(*want));
      };
      c.tolerance = 1e-5;
      if (out.empty() || out.back().size != c.size) c.cpu = [p, call] { stencil_cpu(p, call->host_input); };
      out.push_back(std::move(c));
    }
  }
  return out;
}

Register sobel_reg("sobel", [](const Context& c, const Options& o) { return make_cases(c, o, StencilOp::Sobel); });
Register blur_reg("blur", [](const Context& c, const Options& o) { return make_cases(c, o, StencilOp::GaussianBlur); });

}  // namespace
}  // namespace wgc::bench
