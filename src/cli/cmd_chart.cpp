// wgc chart: a grouped bar chart as PNG from numbers on the command line, for sweeps whose figures
// come from several runs (docs/benchmarks.md and docs/history/ draw their charts with it).
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

struct Flags {
  std::optional<std::string> out;
  bool force = false;
  std::string title, y_label;
  std::vector<std::string> categories, series;
};

int chart_cmd(const Flags& f) {
  const auto& out = f.out;
  const auto& categories = f.categories;
  if (!out) throw UsageError("--out FILE.png is required");
  if (categories.empty()) throw UsageError("--categories a,b,... is required");
  if (f.series.empty()) throw UsageError("at least one --series NAME=v1,v2,... is required");
  check_output(*out, overwrite_rule(f.force));
  std::vector<chart::BarSeries> series;
  for (auto& s : f.series) series.push_back(parse_series(s, categories.size()));
  chart::write_bar_chart(*out, f.title, f.y_label, categories, series, {}, overwrite_rule(f.force));
  return 0;
}

Register reg{{"chart", "a grouped bar chart (PNG) of numbers given on the command line", [](CLI::App& app) {
                auto f = std::make_shared<Flags>();
                add_text(app, "--out", f->out, "the .png file to write (required)")->type_name("FILE");
                add_force(app, f->force);
                app.add_option("--title", f->title, "the chart's title");
                app.add_option("--y-label", f->y_label, "the y axis' label");
                add_list(app, "--categories", f->categories, "the groups along the x axis (comma-separated)");
                app.add_option("--series", f->series, "NAME=v1,v2,...: one bar per category ('-': none); repeatable")
                    ->type_name("NAME=V,...")
                    ->allow_extra_args(false)
                    ->default_str("");
                return [f] { return chart_cmd(*f); };
              }}};

}  // namespace
}  // namespace wgc::cli
