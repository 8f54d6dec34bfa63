#include "cli/command.h"

#include "gpu/context.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <sstream>
#include <type_traits>

namespace wgc::cli {

std::map<std::string, Command>& commands() {
  static std::map<std::string, Command> all;
  return all;
}

namespace {

// "-n,--n-predict" -> "-n": the name messages use (the first one listed).
std::string display_name(const std::string& flags) { return flags.substr(0, flags.find(',')); }

template <class T>
const char* type_name() {
  if constexpr (std::is_floating_point_v<T>) return "FLOAT";
  if constexpr (std::is_unsigned_v<T>) return "UINT";
  return "INT";
}

template <class T>
std::string format(T v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

}  // namespace

template <class T>
T parse_number(std::string_view flag, std::string_view text) {
  T v{};
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, v);
  std::string what = std::is_floating_point_v<T> ? "a number"
                     : std::is_unsigned_v<T>     ? "a non-negative integer"
                                                 : "an integer";
  if (ec == std::errc::result_out_of_range)
    throw UsageError(std::string(flag) + " expects " + what + " from " + format(std::numeric_limits<T>::lowest()) +
                     " to " + format(std::numeric_limits<T>::max()) + ", got '" + std::string(text) + "'");
  if (text.empty() || ec != std::errc() || ptr != end)
    throw UsageError(std::string(flag) + " expects " + what + ", got '" + std::string(text) + "'");
  if constexpr (std::is_floating_point_v<T>)
    if (!std::isfinite(v))
      throw UsageError(std::string(flag) + " expects a finite number, got '" + std::string(text) + "'");
  return v;
}

template <class T>
CLI::Option* add_number(CLI::App& app, const std::string& flag, T& value, const std::string& help, bool show_default) {
  std::string name = display_name(flag);
  auto* o = app.add_option_function<std::string>(
      flag, [&value, name](const std::string& s) { value = parse_number<T>(name, s); }, help);
  o->type_name(type_name<T>());
  if (show_default) o->default_str(format(value));
  return o;
}

template <class T>
CLI::Option* add_number(CLI::App& app, const std::string& flag, std::optional<T>& value, const std::string& help) {
  std::string name = display_name(flag);
  return app
      .add_option_function<std::string>(
          flag, [&value, name](const std::string& s) { value = parse_number<T>(name, s); }, help)
      ->type_name(type_name<T>());
}

template <class T>
CLI::Option* add_numbers(CLI::App& app, const std::string& flag, std::vector<T>& values, const std::string& help) {
  std::string name = display_name(flag);
  auto* o = app.add_option_function<std::vector<std::string>>(
      flag,
      [&values, name](const std::vector<std::string>& items) {
        values.clear();
        for (const auto& s : items) values.push_back(parse_number<T>(name, s));
      },
      help);
  o->delimiter(',')->allow_extra_args(false)->type_name(std::string(type_name<T>()) + ",...");
  if (!values.empty()) {
    std::string d;
    for (T v : values) d += (d.empty() ? "" : ",") + format(v);
    o->default_str(d);
  }
  return o;
}

#define WGC_NUMBER_TYPES(X) X(int) X(int64_t) X(uint32_t) X(uint64_t) X(float) X(double)
#define WGC_INSTANTIATE(T)                                                                                   \
  template T parse_number<T>(std::string_view, std::string_view);                                            \
  template CLI::Option* add_number<T>(CLI::App&, const std::string&, T&, const std::string&, bool);          \
  template CLI::Option* add_number<T>(CLI::App&, const std::string&, std::optional<T>&, const std::string&); \
  template CLI::Option* add_numbers<T>(CLI::App&, const std::string&, std::vector<T>&, const std::string&);
WGC_NUMBER_TYPES(WGC_INSTANTIATE)
#undef WGC_INSTANTIATE
#undef WGC_NUMBER_TYPES

CLI::Option* add_text(CLI::App& app, const std::string& flag, std::optional<std::string>& value,
                      const std::string& help) {
  return app
      .add_option_function<std::string>(
          flag, [&value](const std::string& s) { value = s; }, help)
      ->type_name("TEXT");
}

CLI::Option* add_list(CLI::App& app, const std::string& flag, std::vector<std::string>& values,
                      const std::string& help) {
  auto* o = app.add_option_function<std::vector<std::string>>(
      flag,
      [&values](const std::vector<std::string>& items) {
        values.clear();
        for (const auto& s : items)
          if (!s.empty()) values.push_back(s);
      },
      help);
  return o->delimiter(',')->allow_extra_args(false)->type_name("TEXT,...")->default_str("");
}

namespace {
std::map<const CLI::App*, std::vector<std::string>*>& rest_args() {
  static std::map<const CLI::App*, std::vector<std::string>*> all;
  return all;
}
}  // namespace

void add_rest(CLI::App& app, std::vector<std::string>& words, const std::string& name, const std::string& help) {
  rest_args()[&app] = &words;
  std::string line = "Positionals:\n  " + name;
  line += std::string(line.size() < 34 + 15 ? 34 + 15 - line.size() : 1, ' ') + help;  // the flags' column
  app.footer(app.get_footer().empty() ? line : line + "\n\n" + app.get_footer());
}

std::vector<std::string>* rest_of(const CLI::App& app) {
  auto it = rest_args().find(&app);
  return it == rest_args().end() ? nullptr : it->second;
}

CLI::Option* add_force(CLI::App& app, bool& force) {
  return app.add_flag("--force", force, "overwrite output files that exist (otherwise refused)");
}

void OutputFlags::check(const std::vector<std::filesystem::path>& more) const {
  if (json && !json_to_stdout()) check_output(*json, overwrite());
  if (png) check_output(*png, overwrite());
  for (const auto& p : more) check_output(p, overwrite());
}

void OutputFlags::write_json(std::string_view text) const {
  if (!json) return;
  std::string doc = std::string(text) + "\n";
  if (json_to_stdout()) {
    std::fwrite(doc.data(), 1, doc.size(), stdout);
    std::fflush(stdout);
  } else {
    write_file(*json, doc, overwrite());
  }
}

void add_output_flags(CLI::App& app, OutputFlags& o, const std::string& json_help, const std::string& png_help) {
  add_text(app, "--json", o.json, "write " + json_help + " to this file ('-': stdout, the tables then to stderr)")
      ->type_name("FILE");
  add_text(app, "--png", o.png, "write " + png_help + " to this PNG file")->type_name("FILE");
  add_force(app, o.force);
}

ContextOptions GpuFlags::context_options() const {
  ContextOptions o;
  o.backend = parse_backend(backend);
  o.debug = debug;
  return o;
}

void add_gpu_flags(CLI::App& app, GpuFlags& g) {
  app.add_option_function<std::string>(
         "--backend",
         [&g](const std::string& s) {
           try {
             (void)parse_backend(s);
           } catch (const Error& e) {
             throw UsageError(std::string("--backend: ") + e.what());
           }
           g.backend = s;
         },
         "the Vulkan adapter: auto (a GPU, else SwiftShader), gpu, cpu-vulkan (or WGC_BACKEND); language-model "
         "commands also take cpu: the CPU engine, which auto picks when the only adapter is a CPU")
      ->type_name("NAME")
      ->default_str(g.backend);
  app.add_flag("--debug", g.debug, "Dawn's validation on, performance toggles off (or WGC_DEBUG=1)");
}

// --- verbosity ---------------------------------------------------------------------------------

namespace {
Verbosity g_verbosity = Verbosity::Normal;
}

Verbosity verbosity() { return g_verbosity; }
void set_verbosity(Verbosity v) {
  g_verbosity = v;
  if (v == Verbosity::Quiet) setenv("WGC_PROGRESS", "0", 1);  // util/progress.h's switch
}
void warn(const std::string& line) {
  if (g_verbosity != Verbosity::Quiet) std::fprintf(stderr, "wgc: warning: %s\n", line.c_str());
}
void info(const std::string& line) {
  if (g_verbosity == Verbosity::Verbose) std::fprintf(stderr, "wgc: %s\n", line.c_str());
}

// --- suggestions ---------------------------------------------------------------------------------

namespace {

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

}  // namespace

bool looks_like_flag(const std::string& s) {
  if (s.size() < 2 || s[0] != '-' || s[1] == ' ') return false;
  double d = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), d);
  return ec != std::errc() || p != s.data() + s.size();  // "-5" and "-0.5" are values
}

std::string nearest(std::string_view word, const std::vector<std::string>& known) {
  std::string best;
  size_t best_d = std::string::npos;
  for (const auto& k : known) {
    size_t d = edit_distance(word, k);
    // One name a prefix of the other ("--temperature" for "--temp", "--pro" for "--prompt") is close.
    const auto& [shorter, longer] =
        k.size() < word.size() ? std::pair(std::string_view(k), word) : std::pair(word, std::string_view(k));
    if (shorter.size() >= 4 && longer.starts_with(shorter)) d = std::min<size_t>(d, 1);
    if (d < best_d) {
      best_d = d;
      best = k;
    }
  }
  size_t limit = std::max<size_t>(2, word.size() / 3);
  return best_d <= limit ? best : "";
}

std::string nearest_flag(const CLI::App& app, std::string_view flag) {
  std::vector<std::string> longs, shorts;
  for (const CLI::Option* o : app.get_options()) {
    for (const auto& l : o->get_lnames()) longs.push_back("--" + l);
    for (const auto& s : o->get_snames()) shorts.push_back("-" + s);
  }
  if (flag.size() == 2) {  // "-x": another letter is no hint; a long flag beginning with it may be
    std::string only;
    for (const auto& l : longs)
      if (l[2] == flag[1]) {
        if (!only.empty()) return "";
        only = l;
      }
    return only;
  }
  // "-temp" (llama.cpp writes several letters after one dash) reads as "--temp".
  std::string as_long(flag);
  if (!flag.starts_with("--")) as_long.insert(as_long.begin(), '-');
  if (auto n = nearest(as_long, longs); !n.empty()) return n;
  return nearest(flag, shorts);
}

std::string unknown_flags_message(const CLI::App& app, const std::vector<std::string>& extras) {
  std::string msg;
  for (const auto& e : extras)
    if (looks_like_flag(e)) {
      std::string name = e.substr(0, e.find('='));
      msg += (msg.empty() ? "" : "; ") + std::string("unknown flag ") + name;
      if (auto n = nearest_flag(app, name); !n.empty()) msg += " (did you mean " + n + "?)";
    }
  if (msg.empty() && !extras.empty()) msg = "unexpected argument '" + extras.front() + "'";
  return msg;
}

namespace {
bool has_flag(const CLI::App& app, const std::string& name) {
  for (const CLI::Option* o : app.get_options())
    if (o->check_name(name)) return true;
  return false;
}
}  // namespace

std::vector<std::string> rewrite_llama_flags(const CLI::App& app, std::vector<std::string>& args) {
  std::vector<std::string> notes, out;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {  // the rest is text
      out.insert(out.end(), args.begin() + long(i), args.end());
      break;
    }
    std::string name = a.substr(0, a.find('=')), value;
    const bool inline_value = name.size() < a.size();
    auto take_value = [&]() -> bool {
      if (inline_value) {
        value = a.substr(name.size() + 1);
        return true;
      }
      if (i + 1 >= args.size()) return false;
      value = args[++i];
      return true;
    };
    if (name == "-ngl" || name == "--n-gpu-layers" || name == "--gpu-layers") {
      if (!take_value()) throw UsageError(name + " expects a number of layers");
      const int64_t layers = parse_number<int64_t>(name, value);
      if (layers == 0 && has_flag(app, "--backend")) {
        notes.push_back(name + " 0: the CPU engine (wgc's spelling: --backend cpu)");
        out.insert(out.end(), {"--backend", "cpu"});
      } else {
        notes.push_back(name + " is not needed: wgc runs every layer on the GPU (--backend cpu: the CPU engine)");
      }
      continue;
    }
    // "-temp", "-ctx-size": llama.cpp's one-dash spelling of a long flag wgc has (CLI11 would read
    // "-temp" as -t "emp").
    if (name.size() > 2 && name[0] == '-' && name[1] != '-' && looks_like_flag(name) && !has_flag(app, name) &&
        has_flag(app, std::string(1, '-').append(name))) {
      out.push_back(std::string(1, '-').append(a));
      continue;
    }
    if (name == "-np" && has_flag(app, "--parallel")) {
      if (!take_value()) throw UsageError("-np expects a count of parallel sequences");
      out.insert(out.end(), {"--parallel", value});
      continue;
    }
    out.push_back(a);
  }
  args = std::move(out);
  return notes;
}

}  // namespace wgc::cli
