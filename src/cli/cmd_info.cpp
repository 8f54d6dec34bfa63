// wgc info: the adapter wgc runs on, and the CPU engine's processor, threads and kernel level.
#include "cli/command.h"
#include "cpu/llm/cpu_features.h"
#include "gpu/context.h"
#include "util/json.h"

#include <cstdlib>
#include <iostream>
#include <string>

namespace wgc::cli {
namespace {

struct Flags {
  GpuFlags gpu;
  bool json = false;
};

int info(const Flags& f) {
  std::string backend = f.gpu.backend;
  if (backend == "auto")
    if (const char* env = std::getenv("WGC_BACKEND"); env && *env) backend = env;
  if (backend == "cpu") {  // the CPU engine only: no WebGPU adapter is opened
    if (f.json) {
      json::Value o = json::Value::object();
      o.set("cpu_engine", llm::cpu::describe_cpu_json());
      std::cout << o.dump() << "\n";
    } else {
      std::cout << "CPU engine: " << llm::cpu::describe_cpu() << "\n";
    }
    return 0;
  }
  Context ctx(f.gpu.context_options());
  if (f.json) {
    json::Value o = json::parse(describe(ctx, true), "wgc info");
    o.set("cpu_engine", llm::cpu::describe_cpu_json());
    std::cout << o.dump() << "\n";
  } else {
    std::cout << describe(ctx, false) << "CPU engine: " << llm::cpu::describe_cpu() << "\n";
  }
  return 0;
}

Register reg{{"info", "adapter, backend, features, limits, subgroup sizes; the CPU engine's processor and kernels",
              [](CLI::App& app) {
                auto f = std::make_shared<Flags>();
                app.add_flag("--json", f->json, "print JSON instead of text");
                add_gpu_flags(app, f->gpu);
                return [f] { return info(*f); };
              }}};

}  // namespace
}  // namespace wgc::cli
