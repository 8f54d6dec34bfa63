// wgc chart: a grouped bar chart as PNG from numbers on the command line, for sweeps whose figures
// come from several runs (docs/benchmarks.md draws its charts with it).
#include "cli/command.h"
#include "io/chart.h"
#include "util/error.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace wgc::cli {
namespace {

// "NAME=v1,v2,..." (a value "-" leaves that bar out).
chart::BarSeries parse_series(const std::string& s, size_t n_categories) {
  auto eq = s.find('=');
  if (eq == std::string::npos || eq == 0) throw Error("wgc chart: --series expects NAME=v1,v2,..., got '" + s + "'");
  chart::BarSeries b{s.substr(0, eq), {}};
  std::string rest = s.substr(eq + 1);
  for (size_t at = 0; at <= rest.size();) {
    size_t end = rest.find(',', at);
    if (end == std::string::npos) end = rest.size();
    std::string v = rest.substr(at, end - at);
    char* stop = nullptr;
    double x = v == "-" ? NAN : std::strtod(v.c_str(), &stop);
    if (v != "-" && (v.empty() || *stop || !std::isfinite(x)))
      throw Error("wgc chart: series '" + b.name + "': '" + v + "' is not a number");
    b.values.push_back(x);
    at = end + 1;
  }
  if (b.values.size() != n_categories)
    throw Error("wgc chart: series '" + b.name + "' has " + std::to_string(b.values.size()) + " values for " +
                std::to_string(n_categories) + " categories");
  return b;
}

int chart_cmd(Args& a) {
  auto out = a.option("--out");
  bool force = a.flag("--force");
  std::string title = a.option_or("--title", "");
  std::string y_label = a.option_or("--y-label", "");
  auto categories = a.list("--categories");
  std::vector<std::string> specs;
  while (auto s = a.option("--series")) specs.push_back(*s);
  a.done();
  if (!out) throw Error("wgc chart: --out FILE.png is required");
  if (categories.empty()) throw Error("wgc chart: --categories a,b,... is required");
  if (specs.empty()) throw Error("wgc chart: at least one --series NAME=v1,v2,... is required");
  if (!force && std::filesystem::exists(*out))
    throw Error("wgc chart: '" + *out + "' exists (use --force to overwrite)");
  std::vector<chart::BarSeries> series;
  for (auto& s : specs) series.push_back(parse_series(s, categories.size()));
  chart::write_bar_chart(*out, title, y_label, categories, series);
  return 0;
}

Register reg{{"chart",
              "--out F.png --categories A,B,.. --series NAME=v1,v2,.. [--series ..] [--title T] [--y-label L] "
              "[--force]",
              "a grouped bar chart (PNG) of numbers given on the command line", chart_cmd}};

}  // namespace
}  // namespace wgc::cli
