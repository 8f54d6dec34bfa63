// The wgc command-line tool: each subcommand lives in its own cmd_*.cpp and registers itself with
// CLI11 (Debian's libcli11-dev):
//
//   struct Flags { std::string model; int n = 128; bool json = false; };
//   int run(const Flags& f) { ...; return 0; }
//   Register reg{{"name", "one line of what it does", [](CLI::App& app) {
//     auto f = std::make_shared<Flags>();
//     app.add_option("--model", f->model, "the model file");
//     add_number(app, "-n", f->n, "tokens to generate");
//     app.add_flag("--json", f->json, "print JSON");
//     return [f] { return run(*f); };
//   }}};
//
// main() builds the app from the registered commands, parses, and calls what setup returned.
#pragma once

#include "util/error.h"
#include "util/output_file.h"

#include <CLI/CLI.hpp>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace wgc {
struct ContextOptions;
}

namespace wgc::cli {

using Run = std::function<int()>;

struct Command {
  std::string name;
  std::string summary;  // one line, shown by `wgc --help` and above the command's own help
  // Adds the command's flags and positionals to `app`; returns what runs once they are parsed.
  std::function<Run(CLI::App& app)> setup;
};

std::map<std::string, Command>& commands();

struct Register {
  Register(Command c) { commands().emplace(c.name, std::move(c)); }  // NOLINT
};

// A mistake on the command line (a missing or conflicting flag): exit status 2, with a pointer to
// the command's --help.
struct UsageError : Error {
  using Error::Error;
};

// --- flags -------------------------------------------------------------------------------------

// Numbers parsed strictly: the whole text, base 10, finite, within T's range. A bad value fails
// the parse with a message naming the flag ("--sizes expects a number, got 'abc'"). The help shows
// the default (the variable's value when the flag is added) unless `show_default` is false.
template <class T>
CLI::Option* add_number(CLI::App& app, const std::string& flag, T& value, const std::string& help,
                        bool show_default = true);
// A number that may be absent (nullopt unless given).
template <class T>
CLI::Option* add_number(CLI::App& app, const std::string& flag, std::optional<T>& value, const std::string& help);
// Comma-separated numbers ("--sizes 256,1024"); the flag may also be repeated.
template <class T>
CLI::Option* add_numbers(CLI::App& app, const std::string& flag, std::vector<T>& values, const std::string& help);
// A text value that may be absent (--prompt): nullopt unless given.
CLI::Option* add_text(CLI::App& app, const std::string& flag, std::optional<std::string>& value,
                      const std::string& help);
// Comma-separated texts ("--ops matmul,copy"); the flag may also be repeated.
CLI::Option* add_list(CLI::App& app, const std::string& flag, std::vector<std::string>& values,
                      const std::string& help);

// Free text given as positional arguments (tokenize's TEXT, classify's IMAGE...): every argument
// that is not a flag of the command, byte for byte (CLI11's own positionals would read "[a,b]" as
// a list), and everything after "--" even where it looks like a flag. `name` and `help` go into
// the command's help. Filled before the command runs.
void add_rest(CLI::App& app, std::vector<std::string>& words, const std::string& name, const std::string& help);
// The words add_rest registered for `app`, or nullptr.
std::vector<std::string>* rest_of(const CLI::App& app);

// The number in `text`, parsed as add_number does; `flag` names it in the error.
template <class T>
T parse_number(std::string_view flag, std::string_view text);

// Output files (util/output_file.h): refused when they exist unless --force is given (main says
// so for a FileExistsError); commands call check_output(path, overwrite_rule(force)) before their
// work and write with the same rule.
CLI::Option* add_force(CLI::App& app, bool& force);
inline Overwrite overwrite_rule(bool force) { return force ? Overwrite::Yes : Overwrite::No; }

// The benchmarks' result files: --json FILE ('-': stdout), --png FILE and --force, added by
// add_output_flags. check() refuses files that exist before the run, not after it; with --json -
// the JSON alone goes to stdout, so the command prints its tables to table() (stderr then).
struct OutputFlags {
  std::optional<std::string> json, png;
  bool force = false;

  Overwrite overwrite() const { return overwrite_rule(force); }
  bool json_to_stdout() const { return json && *json == "-"; }
  std::FILE* table() const { return json_to_stdout() ? stderr : stdout; }
  // Checks --json and --png, and `more`: other files the command writes (beside --png).
  void check(const std::vector<std::filesystem::path>& more = {}) const;
  // Writes `text` (a JSON document) and a newline to --json, if given.
  void write_json(std::string_view text) const;
};
// `json_help` / `png_help` say what goes into each file ("the results as JSON").
void add_output_flags(CLI::App& app, OutputFlags& o, const std::string& json_help, const std::string& png_help);

// Common to commands that touch the GPU: --backend, --debug.
struct GpuFlags {
  std::string backend = "auto";
  bool debug = false;
  ContextOptions context_options() const;
};
void add_gpu_flags(CLI::App& app, GpuFlags& g);

// --- what commands print besides their results -------------------------------------------------

// Every command takes --verbose (-v) and --quiet (-q); --quiet also turns progress bars off.
enum class Verbosity { Quiet, Normal, Verbose };
Verbosity verbosity();
void set_verbosity(Verbosity v);
void warn(const std::string& line);  // "wgc: warning: ..." on stderr, unless --quiet
void info(const std::string& line);  // "wgc: ..." on stderr, with --verbose only

// Whether an argument is meant as a flag: "-x", "--xy", not "-", "-5", "-0.5" or "- item".
bool looks_like_flag(const std::string& s);

// What is wrong with the arguments CLI11 left over (`extras`): the unknown flags, each with the
// nearest known flag of `app` ("unknown flag --promt (did you mean --prompt?)"), else the first
// unexpected argument.
std::string unknown_flags_message(const CLI::App& app, const std::vector<std::string>& extras);
// The closest of `known` to `word` (edit distance, or `word` a prefix of it), "" when none is close.
std::string nearest(std::string_view word, const std::vector<std::string>& known);
// The flag of `app` nearest to an unknown `flag`: long flags first ("-temp" and "--temperature"
// find --temp); a single letter ("-x") gets a suggestion only from a long flag it begins ("--xyz"),
// never another letter. "" when none is close.
std::string nearest_flag(const CLI::App& app, std::string_view flag);

// llama.cpp's spellings that CLI11 cannot declare (several letters after one dash) and flags that
// wgc does not need, rewritten before parsing: `-ngl N` (every layer runs on the GPU; -ngl 0: the
// CPU engine, where the command has --backend), `-np N` (--parallel). `args` are the command's
// arguments (after its name); the notes to print are returned.
std::vector<std::string> rewrite_llama_flags(const CLI::App& app, std::vector<std::string>& args);

}  // namespace wgc::cli
