// The wgc command-line tool: each subcommand lives in its own cmd_*.cpp and registers itself.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace wgc::cli {

// Arguments of one subcommand: flags (--json), options (--model X or --model=X), positionals.
class Args {
 public:
  Args(std::vector<std::string> argv) : argv_(std::move(argv)) {}  // NOLINT

  bool flag(std::string_view name);                          // consumes it
  std::optional<std::string> option(std::string_view name);  // consumes it and its value
  std::string option_or(std::string_view name, std::string fallback);
  double number_or(std::string_view name, double fallback);  // throws on a non-number
  std::vector<std::string> list(std::string_view name);      // comma-separated values
  std::vector<std::string> positionals();                    // what is left; throws on unknown --x
  void done();                                               // throws if anything is left

 private:
  std::vector<std::string> argv_;
};

struct Command {
  std::string name;
  std::string usage;  // one line: arguments
  std::string summary;
  std::function<int(Args&)> run;
};

std::map<std::string, Command>& commands();

struct Register {
  Register(Command c) { commands().emplace(c.name, std::move(c)); }  // NOLINT
};

// Common to commands that touch the GPU: --backend, --debug.
struct GpuFlags {
  std::string backend = "auto";
  bool debug = false;
};
GpuFlags gpu_flags(Args& a);

}  // namespace wgc::cli
