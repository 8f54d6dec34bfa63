// wgc: the command-line tool. Subcommands register themselves in cli/cmd_*.cpp (see command.h).
#include "cli/command.h"
#include "util/version.h"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>

namespace wgc::cli {
namespace {

std::string version_text() {
  return "wgc " + std::string(version()) + " (git " + std::string(git_revision()) +
         ")\nDawn: " + std::string(dawn_package());
}

struct Common {
  bool verbose = false, quiet = false;
};

// The app with every registered command as a subcommand; runs[name] is what runs after parsing.
void build(CLI::App& app, std::map<std::string, Run>& runs, Common& common) {
  app.option_defaults()->always_capture_default();
  app.get_formatter()->column_width(34);
  app.set_version_flag("--version", version_text(), "print wgc's version, the Dawn package and the git revision");
  for (auto& [name, c] : commands()) {
    CLI::App* sub = app.add_subcommand(name, c.summary);
    sub->allow_extras();  // unknown flags are reported by run_main, with the nearest known flag
    runs[name] = c.setup(*sub);
    const char* g = "Output";
    auto* v = sub->add_flag("-v,--verbose", common.verbose, "say more on stderr: model notes, settings")->group(g);
    sub->add_flag("-q,--quiet", common.quiet, "print only results and errors: no warnings, timings or progress")
        ->group(g)
        ->excludes(v);
  }
  app.footer(  // after the subcommands: they would inherit it
      "wgc help COMMAND (or wgc COMMAND --help) lists a command's flags with their defaults.\n"
      "GPU commands take --backend auto|gpu|cpu-vulkan (or WGC_BACKEND) and --debug (or WGC_DEBUG=1).");
}

std::vector<std::string> command_names() {
  std::vector<std::string> out;
  for (auto& [name, c] : commands()) out.push_back(name);
  out.push_back("help");
  return out;
}

int unknown_command(const std::string& name) {
  std::string hint;
  if (auto n = nearest(name, command_names()); !n.empty()) hint = " (did you mean " + n + "?)";
  std::fprintf(stderr, "wgc: unknown command '%s'%s\nwgc --help lists the commands.\n", name.c_str(), hint.c_str());
  return 2;
}

int usage_error(const std::string& cmd, const std::string& what) {
  std::fprintf(stderr, "wgc %s: %s\nwgc %s --help lists its flags.\n", cmd.c_str(), what.c_str(), cmd.c_str());
  return 2;
}

int run_main(int argc, char** argv) {
  CLI::App app("wgc: WebGPU Compute: WGSL kernels, image filters and Llama-family language models on WebGPU", "wgc");
  std::map<std::string, Run> runs;
  Common common;
  build(app, runs, common);

  std::string first = argc > 1 ? argv[1] : "";
  if (argc < 2) {  // no command: the overview, as an error
    std::fputs(app.help().c_str(), stderr);
    return 2;
  }
  if (first == "help") {  // wgc help [COMMAND]
    if (argc == 2) {
      std::fputs(app.help().c_str(), stdout);
      return 0;
    }
    std::string name = argv[2];
    if (!runs.count(name)) return unknown_command(name);
    std::fputs(app.get_subcommand(name)->help("wgc").c_str(), stdout);
    return 0;
  }
  if (!first.starts_with("-") && !runs.count(first)) return unknown_command(first);

  // The command's arguments: llama.cpp's spellings rewritten, and what follows "--" kept aside as
  // text (CLI11 would hand it to the root app).
  std::vector<std::string> args(argv + 1, argv + argc), after_dashes, notes;
  try {
    if (runs.count(first)) {
      std::vector<std::string> rest(args.begin() + 1, args.end());
      notes = rewrite_llama_flags(*app.get_subcommand(first), rest);
      auto dashes = std::find(rest.begin(), rest.end(), "--");
      if (dashes != rest.end()) {
        after_dashes.assign(dashes + 1, rest.end());
        rest.erase(dashes, rest.end());
      }
      args.resize(1);
      args.insert(args.end(), rest.begin(), rest.end());
    }
  } catch (const UsageError& e) {
    return usage_error(first, e.what());
  }
  std::vector<char*> parse_argv{argv[0]};
  for (auto& a : args) parse_argv.push_back(a.data());

  try {
    app.parse(int(parse_argv.size()), parse_argv.data());
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    if (runs.count(first)) return usage_error(first, e.what());
    std::fprintf(stderr, "wgc: %s\nwgc --help lists the commands.\n", e.what());
    return 2;
  } catch (const UsageError& e) {  // a flag's value that does not parse
    return usage_error(first, e.what());
  }
  if (!runs.count(first)) {  // only root flags
    std::fputs(app.help().c_str(), stderr);
    return 2;
  }
  set_verbosity(common.quiet ? Verbosity::Quiet : common.verbose ? Verbosity::Verbose : Verbosity::Normal);
  CLI::App* sub = app.get_subcommand(first);
  auto extras = sub->remaining();
  if (std::vector<std::string>* words = rest_of(*sub)) {  // free text, byte for byte
    std::vector<std::string> flags;
    for (const auto& e : extras)
      if (looks_like_flag(e)) flags.push_back(e);
    if (!flags.empty())
      return usage_error(first, unknown_flags_message(*sub, flags) + " (text after -- is taken as is)");
    *words = extras;
    words->insert(words->end(), after_dashes.begin(), after_dashes.end());
  } else {
    extras.insert(extras.end(), after_dashes.begin(), after_dashes.end());
    if (!extras.empty()) return usage_error(first, unknown_flags_message(*sub, extras));
  }
  for (const auto& n : notes)
    if (verbosity() != Verbosity::Quiet) std::fprintf(stderr, "wgc: note: %s\n", n.c_str());

  try {
    return runs[first]();
  } catch (const UsageError& e) {
    return usage_error(first, e.what());
  } catch (const FileExistsError& e) {  // one rule for every file wgc writes
    std::fprintf(stderr, "wgc %s: %s exists; give --force to overwrite it\n", first.c_str(), e.path.c_str());
    return 1;
  } catch (const DeviceLost& e) {  // not the command's fault: running it again may well succeed
    std::fprintf(stderr, "%s\nwgc %s: the GPU was lost while the command ran; run it again\n", e.what(), first.c_str());
    return 75;  // EX_TEMPFAIL
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}

}  // namespace
}  // namespace wgc::cli

int main(int argc, char** argv) { return wgc::cli::run_main(argc, argv); }
