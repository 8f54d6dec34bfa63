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

// What `--backend cpu` runs language models on.
json::Value cpu_json() {
  const llm::cpu::CpuFeatures& f = llm::cpu::cpu_features();
  json::Value o = json::Value::object();
  o.set("model", f.model);
  o.set("threads", f.threads);
  o.set("kernels", std::string(llm::cpu::to_string(llm::cpu::default_isa())));
  json::Value feats = json::Value::object();
  feats.set("avx2", f.avx2);
  feats.set("fma", f.fma);
  feats.set("f16c", f.f16c);
  feats.set("avx512f", f.avx512f);
  feats.set("avx512bw", f.avx512bw);
  feats.set("avx512vl", f.avx512vl);
  feats.set("avx512vnni", f.avx512vnni);
  o.set("features", std::move(feats));
  return o;
}

int info(const Flags& f) {
  std::string backend = f.gpu.backend;
  if (backend == "auto")
    if (const char* env = std::getenv("WGC_BACKEND"); env && *env) backend = env;
  if (backend == "cpu") {  // the CPU engine only: no WebGPU adapter is opened
    if (f.json) {
      json::Value o = json::Value::object();
      o.set("cpu_engine", cpu_json());
      std::cout << o.dump() << "\n";
    } else {
      std::cout << "CPU engine: " << llm::cpu::describe_cpu() << "\n";
    }
    return 0;
  }
  Context ctx(f.gpu.context_options());
  if (f.json) {
    json::Value o = json::parse(describe(ctx, true), "wgc info");
    o.set("cpu_engine", cpu_json());
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
