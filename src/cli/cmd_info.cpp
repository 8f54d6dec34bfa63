#include "cli/command.h"
#include "cpu/llm/cpu_features.h"
#include "gpu/context.h"
#include "util/json.h"

#include <cstdlib>
#include <iostream>
#include <string>

namespace wgc::cli {
namespace {

// The CPU engine's processor, threads and kernel level (what `--backend cpu` runs on).
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

int info(Args& a) {
  auto g = gpu_flags(a);
  bool json = a.flag("--json");
  a.done();
  std::string backend = g.backend;
  if (backend == "auto")
    if (const char* env = std::getenv("WGC_BACKEND"); env && *env) backend = env;
  if (backend == "cpu") {  // the CPU engine only: no WebGPU adapter is opened
    if (json) {
      json::Value o = json::Value::object();
      o.set("cpu_engine", cpu_json());
      std::cout << o.dump() << "\n";
    } else {
      std::cout << "CPU engine: " << llm::cpu::describe_cpu() << "\n";
    }
    return 0;
  }
  Context ctx({parse_backend(backend), g.debug});
  if (json) {
    json::Value o = json::parse(describe(ctx, true), "wgc info");
    o.set("cpu_engine", cpu_json());
    std::cout << o.dump() << "\n";
  } else {
    std::cout << describe(ctx, false) << "CPU engine: " << llm::cpu::describe_cpu() << "\n";
  }
  return 0;
}

Register reg{{"info", "[--json] [--backend B]",
              "adapter, backend, features, limits, subgroup sizes; the CPU engine's processor, threads and kernels",
              info}};

}  // namespace
}  // namespace wgc::cli
