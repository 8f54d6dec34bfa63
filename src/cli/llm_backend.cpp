#include "cli/llm_backend.h"

#include "cpu/llm/cpu_features.h"
#include "llm/model/layer_split.h"
#include "util/error.h"

#include <cstdio>
#include <cstdlib>

namespace wgc::cli {

void add_engine_flags(CLI::App& app, EngineFlags& s) {
  add_numbers(app, "--gpus", s.gpus,
              "split the model by layers over these GPUs (adapter indices, e.g. 0,1; wgc info lists them; "
              "0,0 opens one GPU twice)")
      ->type_name("I,J,..");
  add_numbers(app, "--tensor-split", s.proportions,
              "with --gpus: each GPU's share of the layers, e.g. 3,1 (default: by free memory where known, "
              "else equal layer counts)")
      ->type_name("P,Q,..");
  add_text(app, "--cache-type", s.cache_type,
           "KV cache storage: f32 (default), f16 (half the memory) or q8_0 (8 bits per value and a scale per "
           "32; head_dim a multiple of 32); GPU engine only")
      ->type_name("TYPE");
  app.add_flag("--swa-full", s.swa_full,
               "keep every position in the sliding-window layers' KV cache (default: a ring of the window and one "
               "prompt step, whose memory does not grow with the context)");
}

void LlmBackend::apply(llm::EngineOptions& eo) const {
  eo.device = device;
  eo.split_gpus = split_gpus;
  eo.tensor_split = tensor_split;
  eo.cache_type = cache_type;
  eo.swa_full = swa_full;
}

llm::KvType cache_type_flag(const EngineFlags& e, bool cpu_engine) {
  if (!e.cache_type) return llm::KvType::F32;
  llm::KvType t;
  try {
    t = llm::parse_kv_type(*e.cache_type);
  } catch (const OptionError& x) {
    throw UsageError("--cache-type " + x.problem);
  }
  if (cpu_engine && t != llm::KvType::F32)
    throw UsageError("--cache-type " + *e.cache_type + " runs on the GPU engine; --backend cpu keeps an f32 KV cache");
  return t;
}

LlmBackend llm_backend(const GpuFlags& g, int adapter_index, const EngineFlags* split) {
  std::string name = g.backend;
  if (name == "auto")
    if (const char* env = std::getenv("WGC_BACKEND"); env && *env) name = env;
  LlmBackend b;
  if (split) b.cache_type = cache_type_flag(*split, name == "cpu");
  if (split) b.swa_full = split->swa_full;
  if (split && !split->proportions.empty() && split->gpus.size() < 2)
    throw UsageError("--tensor-split needs --gpus with two or more GPUs");
  if (split && !split->gpus.empty()) {
    if (adapter_index >= 0) throw UsageError("--gpu and --gpus: give one of them");
    if (name == "cpu") throw UsageError("--gpus splits the model over GPUs; --backend cpu runs without one");
    if (!split->proportions.empty() && split->proportions.size() != split->gpus.size())
      throw UsageError("--tensor-split has " + std::to_string(split->proportions.size()) + " proportions for " +
                       std::to_string(split->gpus.size()) + " GPUs (--gpus)");
    for (int i : split->gpus)
      if (i < 0 || i > 1024) throw UsageError("--gpus: adapter index " + std::to_string(i) + " (0..1024)");
    for (size_t i = 0; i < split->gpus.size(); ++i) {
      ContextOptions co{parse_backend(name), g.debug};
      co.adapter_index = split->gpus[i];
      if (i == 0)
        b.ctx.emplace(co);
      else
        b.split_gpus.emplace_back(co);
    }
    b.tensor_split = split->proportions;
    b.device = llm::Device::Gpu;  // asked for by name
    return b;
  }
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
  if (!b.split_gpus.empty()) {
    std::vector<Context> devices;
    std::vector<llm::LayerRange> ranges;
    for (const llm::ModelStage& s : m.stages()) {
      devices.push_back(s.ctx);
      ranges.push_back(s.layers);
    }
    return "WebGPU, split over " + std::to_string(devices.size()) + " GPUs: " + llm::describe_split(devices, ranges);
  }
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
