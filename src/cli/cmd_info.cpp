// wgc info: the adapter wgc runs on.
#include "cli/command.h"
#include "gpu/context.h"

#include <iostream>

namespace wgc::cli {
namespace {

struct Flags {
  GpuFlags gpu;
  bool json = false;
};

int info(const Flags& f) {
  Context ctx(f.gpu.context_options());
  std::cout << describe(ctx, f.json) << (f.json ? "\n" : "");
  return 0;
}

Register reg{{"info", "adapter, backend, features, limits, subgroup sizes", [](CLI::App& app) {
                auto f = std::make_shared<Flags>();
                app.add_flag("--json", f->json, "print JSON instead of text");
                add_gpu_flags(app, f->gpu);
                return [f] { return info(*f); };
              }}};

}  // namespace
}  // namespace wgc::cli
