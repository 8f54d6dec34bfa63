#include "cli/command.h"

#include "util/error.h"

#include <cstdlib>

namespace wgc::cli {

std::map<std::string, Command>& commands() {
  static std::map<std::string, Command> all;
  return all;
}

bool Args::flag(std::string_view name) {
  for (auto it = argv_.begin(); it != argv_.end(); ++it)
    if (*it == name) {
      argv_.erase(it);
      return true;
    }
  return false;
}

std::optional<std::string> Args::option(std::string_view name) {
  for (auto it = argv_.begin(); it != argv_.end(); ++it) {
    if (*it == name) {
      if (it + 1 == argv_.end()) throw Error("wgc: " + std::string(name) + " needs a value");
      std::string v = *(it + 1);
      argv_.erase(it, it + 2);
      return v;
    }
    if (it->size() > name.size() + 1 && it->starts_with(name) && (*it)[name.size()] == '=') {
      std::string v = it->substr(name.size() + 1);
      argv_.erase(it);
      return v;
    }
  }
  return std::nullopt;
}

std::string Args::option_or(std::string_view name, std::string fallback) {
  auto v = option(name);
  return v ? *v : fallback;
}

double Args::number_or(std::string_view name, double fallback) {
  auto v = option(name);
  if (!v) return fallback;
  char* end = nullptr;
  double d = std::strtod(v->c_str(), &end);
  if (v->empty() || *end) throw Error("wgc: " + std::string(name) + " expects a number, got '" + *v + "'");
  return d;
}

std::vector<std::string> Args::list(std::string_view name) {
  std::vector<std::string> out;
  auto v = option(name);
  if (!v) return out;
  size_t pos = 0;
  while (pos <= v->size()) {
    size_t c = v->find(',', pos);
    if (c == std::string::npos) c = v->size();
    if (c > pos) out.push_back(v->substr(pos, c - pos));
    pos = c + 1;
  }
  return out;
}

std::vector<std::string> Args::positionals() {
  for (auto& a : argv_)
    if (a.size() > 1 && a[0] == '-' && a != "-" && !(a[1] >= '0' && a[1] <= '9'))
      throw Error("wgc: unknown option '" + a + "'");
  auto out = std::move(argv_);
  argv_.clear();
  return out;
}

void Args::done() {
  if (!argv_.empty()) throw Error("wgc: unexpected argument '" + argv_.front() + "'");
}

GpuFlags gpu_flags(Args& a) {
  GpuFlags f;
  f.backend = a.option_or("--backend", "auto");
  f.debug = a.flag("--debug");
  return f;
}

}  // namespace wgc::cli
