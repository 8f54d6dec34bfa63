#include "cli/command.h"
#include "gpu/context.h"

#include <iostream>

namespace wgc::cli {
namespace {

int info(Args& a) {
  auto g = gpu_flags(a);
  bool json = a.flag("--json");
  a.done();
  Context ctx({parse_backend(g.backend), g.debug});
  std::cout << describe(ctx, json) << (json ? "\n" : "");
  return 0;
}

Register reg{{"info", "[--json] [--backend B]", "adapter, backend, features, limits, subgroup sizes", info}};

}  // namespace
}  // namespace wgc::cli
