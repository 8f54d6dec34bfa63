// libFuzzer target: the ONNX loader and everything a model goes through before the GPU: parse,
// load-time fusion, a plan for the declared input shapes (shape arithmetic and constant folding run
// here, on the CPU references), and for small plans (4 MB, 1 MFLOP: many runs per second) a run
// of the CPU path. Any input must give a
// result or a wgc::Error, never a crash, a sanitizer report, a hang or a huge allocation.
#include "cnn/fuse.h"
#include "cnn/onnx.h"
#include "cnn/plan.h"
#include "util/error.h"

#include <cstddef>
#include <cstdint>

using namespace wgc;
using namespace wgc::cnn;

namespace {

// Declared input shapes with unknown dims set to 1; empty when one is unusable or large.
std::vector<HostTensor> inputs_for(const Graph& g) {
  std::vector<HostTensor> xs;
  for (const auto& in : g.inputs) {
    HostTensor x;
    int64_t n = 1;
    for (int64_t d : in.dims) {
      x.shape.push_back(d < 0 ? 1 : d);
      n *= std::max<int64_t>(x.shape.back(), 1);
      if (n > (1 << 16)) return {};
    }
    if (in.elem_type == 7 || in.elem_type == 6) {
      x.integer = true;
      x.i.assign(size_t(element_count(x.shape)), 1);
    } else {
      x.f.assign(size_t(element_count(x.shape)), 0.5f);
    }
    xs.push_back(std::move(x));
  }
  return xs;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  try {
    Graph g = parse_onnx(bytes, "fuzz.onnx");
    fuse(g);
    std::vector<HostTensor> xs = inputs_for(g);
    if (xs.size() != g.inputs.size()) return 0;
    std::vector<InputSpec> specs;
    for (const auto& x : xs) specs.push_back({x.shape, x.integer ? std::make_shared<HostTensor>(x) : nullptr});
    Plan p = make_plan(g, specs);
    if (p.slot_bytes() > (4u << 20) || p.flops() > 1e6) return 0;
    std::vector<std::vector<float>> slots;
    run_plan_cpu(p, slots);
  } catch (const Error&) {
  }
  return 0;
}
