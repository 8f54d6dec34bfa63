// wgc.run: compile a WGSL compute shader (cached per context) and dispatch it once over tensors.
#include "common.h"

#include "gpu/batch.h"
#include "gpu/kernel.h"
#include "util/error.h"

#include <array>
#include <cstring>

namespace wgc::python {
namespace {

// Storage tensors at @binding(0..n-1) of @group(0) in the order given, then the parameter block
// (4-byte words) as a uniform at @binding(n) when not empty.
void run_kernel(const ContextPtr& ctx, const std::string& wgsl, const std::string& entry, const std::string& label,
                const std::vector<std::pair<std::string, double>>& constants, const std::vector<TensorPtr>& args,
                const py::bytes& params, std::array<int64_t, 3> groups) {
  constexpr const char* fn = "wgc.run";
  const Limits& lim = ctx->ctx().limits();
  for (int64_t g : groups)
    if (g < 1 || g > int64_t(lim.max_compute_workgroups_per_dimension))
      throw py::value_error(std::string(fn) + ": workgroups must be 1.." +
                            std::to_string(lim.max_compute_workgroups_per_dimension) + " in each dimension, got " +
                            std::to_string(g));
  if (args.size() > lim.max_storage_buffers_per_shader_stage)
    throw py::value_error(std::string(fn) + ": " + std::to_string(args.size()) +
                          " buffers are more than the device binds to one shader (" +
                          std::to_string(lim.max_storage_buffers_per_shader_stage) + ")");
  for (const auto& a : args)
    if (a->ctx != ctx) throw py::value_error(std::string(fn) + ": a tensor belongs to another context");
  std::string_view pb = params;
  if (pb.size() % 4) throw py::value_error(std::string(fn) + ": params must be 4-byte words");
  Params p;
  for (size_t i = 0; i < pb.size(); i += 4) {
    uint32_t word;
    std::memcpy(&word, pb.data() + i, 4);
    p.push(word);
  }
  KernelCode code{wgsl, entry, constants, label};
  std::vector<Arg> bound;
  for (const auto& a : args) bound.emplace_back(a->tensor);
  DeviceLock lock(*ctx);
  Kernel k = compile(ctx->ctx(), code);
  run(ctx->ctx(), k, std::move(bound), p, {uint32_t(groups[0]), uint32_t(groups[1]), uint32_t(groups[2])});
}

}  // namespace

void bind_run(py::module_& m) { m.def("run_kernel", &run_kernel); }

}  // namespace wgc::python
