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

void say_engine_choice(const std::string& reason) {
  if (reason.empty() || verbosity() == Verbosity::Quiet) return;
  std::fprintf(stderr, "wgc: %s (--backend gpu or cpu-vulkan keeps the GPU engine)\n", reason.c_str());
}

}  // namespace wgc::cli
