// wgc: the command-line tool. Subcommands register themselves in cli/cmd_*.cpp.
#include "cli/command.h"

#include <cstdio>
#include <exception>

int main(int argc, char** argv) {
  auto& cmds = wgc::cli::commands();
  std::string name = argc > 1 ? argv[1] : "help";
  if (name == "help" || name == "--help" || name == "-h" || !cmds.count(name)) {
    bool unknown = !cmds.count(name) && name != "help" && name != "--help" && name != "-h";
    if (unknown) std::fprintf(stderr, "wgc: unknown command '%s'\n\n", name.c_str());
    std::FILE* out = unknown ? stderr : stdout;
    std::fprintf(out, "wgc: WebGPU Compute\n\nusage: wgc COMMAND [ARGS]\n\ncommands:\n");
    for (auto& [n, c] : cmds) std::fprintf(out, "  %-12s %s\n", n.c_str(), c.summary.c_str());
    std::fprintf(out,
                 "\nGPU commands take --backend auto|gpu|cpu-vulkan (or WGC_BACKEND) and --debug. The language-model\n"
                 "commands (generate, chat, score, serve, bench-llm, bench-batched) also take --backend cpu: the CPU\n"
                 "engine, which auto picks when the only adapter is a CPU or the model does not fit the GPU.\n");
    return unknown ? 2 : 0;
  }
  try {
    wgc::cli::Args args(std::vector<std::string>(argv + 2, argv + argc));
    if (args.flag("--help")) {
      std::printf("usage: wgc %s %s\n\n%s\n", name.c_str(), cmds[name].usage.c_str(), cmds[name].summary.c_str());
      return 0;
    }
    return cmds[name].run(args);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
