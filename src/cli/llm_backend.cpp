#include "cli/llm_backend.h"

#include "cpu/llm/cpu_features.h"
#include "util/error.h"

#include <cstdio>
#include <cstdlib>

namespace wgc::cli {

LlmBackend llm_backend(const GpuFlags& g, int adapter_index) {
  std::string name = g.backend;
  if (name == "auto")
    if (const char* env = std::getenv("WGC_BACKEND"); env && *env) name = env;
  LlmBackend b;
  if (name == "cpu") {
    if (adapter_index >= 0) throw UsageError("--gpu picks a GPU adapter; --backend cpu runs without one");
    b.device = llm::Device::Cpu;
    return b;
  }
  // Explicit, so that the context does not read WGC_BACKEND again.
  ContextOptions co{parse_backend(name), g.debug};
  co.adapter_index = adapter_index;
  b.ctx.emplace(co);
  b.device = name == "auto" ? llm::Device::Auto : llm::Device::Gpu;
  return b;
}

std::string engine_name(const llm::LlamaModel& m, const LlmBackend& b) {
  if (m.device() == llm::Device::Cpu) return "CPU engine: " + llm::cpu::describe_cpu(m.threads());
  return "WebGPU " + b.ctx->adapter().device + " (" + b.ctx->adapter().adapter_type + ")";
}

std::string engine_choice_line(const std::string& reason) {
  // llm::choose_device says "the only WebGPU adapter is a CPU (NAME): ..." or "<what does not fit>: ...".
  const bool cpu_adapter = reason.find("adapter is a CPU") != std::string::npos;
  std::string line = cpu_adapter ? "wgc: CPU engine (the only GPU is emulated on the CPU; -v says more)"
                                 : "wgc: CPU engine (the model does not fit the GPU; -v says why)";
  return line.substr(0, 80);
}

void say_engine_choice(const std::string& reason) {
  if (reason.empty() || verbosity() == Verbosity::Quiet) return;
  std::fprintf(stderr, "%s\n", engine_choice_line(reason).c_str());
  info(reason + " (--backend gpu or cpu-vulkan keeps the GPU engine)");
}

}  // namespace wgc::cli
