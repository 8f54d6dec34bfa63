// wgc bench: GPU vs CPU for every op, version and size; a table, JSON and a PNG chart.
#include "bench/bench.h"
#include "cli/command.h"
#include "io/chart.h"
#include "io/image.h"
#include "util/error.h"
#include "util/format.h"
#include "util/json.h"
#include "util/output_file.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>

#include <unistd.h>

namespace wgc::cli {
namespace {

// Ops about the cost of dispatches (no FLOPs, no bytes) show the time per dispatch instead.
bool per_dispatch(const bench::Result& r) { return r.c.dispatches > 0 && r.c.flops <= 0 && r.c.bytes <= 0; }

std::string rate(const bench::Result& r) {
  if (per_dispatch(r)) return format_number("%.3f us/disp", r.gpu_ms * 1e3 / r.c.dispatches);
  if (r.c.flops > 0) return format_number("%.1f GFLOP/s", r.c.flops / (r.gpu_ms * 1e-3) * 1e-9);
  return format_number("%.1f GB/s", r.c.bytes / (r.gpu_ms * 1e-3) * 1e-9);
}

// Fraction of the hardware limit: FLOPs against the nominal FP32 rate where known, bytes against
// the measured copy bandwidth (of memory: data that stays in the L2 cache can pass 100%).
double peak_fraction(const bench::Result& r, double bw, double flops_peak) {
  double t = r.gpu_ms * 1e-3;
  if (per_dispatch(r)) return -1;
  if (r.c.flops > 0) return flops_peak > 0 ? r.c.flops / t / flops_peak : -1;
  return r.c.bytes / t / bw;
}

// What peak_fraction is a fraction of: "fp32" (the nominal FP32 FLOP/s) or "copy" (the measured
// copy bandwidth).
const char* peak_of(const bench::Result& r) { return r.c.flops > 0 ? "fp32" : "copy"; }

const char* timing_name(bench::Timing t) {
  switch (t) {
    case bench::Timing::Span: return "span";
    case bench::Timing::RoundTrip: return "round-trip";
    default: return "per-dispatch";
  }
}

// The line fit of each op version whose cases count dispatches (bench::fit_dispatches), in the
// order the versions first ran.
std::vector<std::pair<std::string, bench::DispatchFit>> dispatch_fits(const std::vector<bench::Result>& rs) {
  std::vector<std::pair<std::string, std::string>> keys;
  for (const auto& r : rs)
    if (r.c.dispatches > 0 && std::find(keys.begin(), keys.end(), std::pair(r.c.op, r.c.version)) == keys.end())
      keys.emplace_back(r.c.op, r.c.version);
  std::vector<std::pair<std::string, bench::DispatchFit>> fits;
  for (const auto& [op, version] : keys) {
    std::vector<bench::Result> same;
    for (const auto& r : rs)
      if (r.c.op == op && r.c.version == version) same.push_back(r);
    if (auto f = bench::fit_dispatches(same)) fits.emplace_back(op + " " + version, *f);
  }
  return fits;
}

void print_fits(std::FILE* out, const std::vector<std::pair<std::string, bench::DispatchFit>>& fits) {
  if (fits.empty()) return;
  std::fprintf(out, "\nfit t = fixed + dispatches x per dispatch [+ bytes / bandwidth] (least squares, relative):\n");
  for (const auto& [name, f] : fits)
    std::fprintf(out, "  %-32s fixed %8.2f us   per dispatch %7.3f us%s   max residual %.1f%%\n", name.c_str(),
                 f.fixed_us, f.per_dispatch_us,
                 f.bandwidth > 0 ? format_number("   bandwidth %.1f GB/s", f.bandwidth * 1e-9).c_str() : "",
                 100 * f.max_rel_residual);
}

// Every number of the run; versions by their plain names ("default" says which one Auto runs).
json::Value results_json(const Context& ctx, const std::vector<bench::Result>& rs, double bw, double flops_peak) {
  auto finite_or_null = [](double v) { return std::isfinite(v) ? json::Value(v) : json::Value(); };
  auto measured = [](double ms) { return ms >= 0 ? json::Value(ms) : json::Value(); };  // -1: not run
  json::Value o = json::Value::object();
  o.set("device", ctx.adapter().device);
  o.set("adapter_type", ctx.adapter().adapter_type);
  o.set("copy_bandwidth_gbs", bw * 1e-9);
  o.set("nominal_fp32_tflops", flops_peak > 0 ? json::Value(flops_peak * 1e-12) : json::Value());
  json::Value results = json::Value::array();
  for (const auto& r : rs) {
    json::Value x = json::Value::object();
    x.set("op", r.c.op);
    x.set("version", r.c.version);
    x.set("default", r.c.is_default);
    x.set("size", r.c.size);
    x.set("elements", r.c.elements);
    x.set("flops", r.c.flops);
    x.set("bytes", r.c.bytes);
    x.set("dispatches", r.c.dispatches);
    x.set("gpu_ms", r.gpu_ms);
    x.set("gpu_spread", r.gpu_spread);
    x.set("timestamps", r.timestamps);
    x.set("timing", timing_name(r.c.timing));
    x.set("cpu_ms", measured(r.cpu_ms));
    x.set("blas_ms", measured(r.blas_ms));
    x.set("max_rel_error", finite_or_null(r.error));
    x.set("ok", r.error < r.c.tolerance);
    double pf = peak_fraction(r, bw, flops_peak);
    x.set("peak_fraction", pf >= 0 ? finite_or_null(pf) : json::Value());
    x.set("peak_of", peak_of(r));
    results.push_back(std::move(x));
  }
  o.set("results", std::move(results));
  json::Value fits = json::Value::array();
  for (const auto& [name, f] : dispatch_fits(rs)) {
    json::Value x = json::Value::object();
    x.set("case", name);
    x.set("fixed_us", f.fixed_us);
    x.set("per_dispatch_us", f.per_dispatch_us);
    x.set("bandwidth_gbs", f.bandwidth > 0 ? json::Value(f.bandwidth * 1e-9) : json::Value());
    x.set("max_rel_residual", f.max_rel_residual);
    fits.push_back(std::move(x));
  }
  o.set("dispatch_fits", std::move(fits));
  return o;
}

// One log-log chart per op (rate against size, a line per version and for the CPU), stacked into
// one PNG.
void write_chart(const std::string& path, const Context& ctx, const std::vector<bench::Result>& rs,
                 const std::map<std::pair<std::string, std::string>, std::pair<double, double>>& cpu,
                 Overwrite overwrite) {
  std::vector<std::string> ops;
  for (auto& r : rs)
    if (std::find(ops.begin(), ops.end(), r.c.op) == ops.end()) ops.push_back(r.c.op);
  std::vector<Image> charts;
  for (auto& op : ops) {
    std::map<std::string, chart::Series> by_version;
    chart::Series plain{"CPU loop", {}, {}}, blas{"CPU BLAS", {}, {}};
    bool flops = false, dispatches = false;
    std::string x_label;
    for (auto& r : rs) {
      if (r.c.op != op) continue;
      flops = r.c.flops > 0;
      dispatches = per_dispatch(r);
      x_label = r.c.x_label;
      double work = flops ? r.c.flops * 1e-9 : r.c.bytes * 1e-9;  // GFLOP or GB
      auto& s = by_version[r.c.version];
      s.name = "GPU " + r.c.version;
      s.x.push_back(r.c.elements);
      s.y.push_back(dispatches ? r.gpu_ms * 1e3 / r.c.dispatches : work / (r.gpu_ms * 1e-3));
      auto [p, b] = cpu.at({r.c.op, r.c.size});
      if (p > 0 && (plain.x.empty() || plain.x.back() != r.c.elements)) {
        plain.x.push_back(r.c.elements);
        plain.y.push_back(work / (p * 1e-3));
      }
      if (b > 0 && (blas.x.empty() || blas.x.back() != r.c.elements)) {
        blas.x.push_back(r.c.elements);
        blas.y.push_back(work / (b * 1e-3));
      }
    }
    std::vector<chart::Series> series;
    for (auto& [v, s] : by_version) series.push_back(s);
    if (!plain.x.empty()) series.push_back(plain);
    if (!blas.x.empty()) series.push_back(blas);
    chart::ChartOptions co;
    co.log_x = co.log_y = true;
    co.height = 480;
    if (x_label.empty()) x_label = flops ? "n (n x n x n)" : "elements";
    charts.push_back(chart::render_line_chart(op + " on " + ctx.adapter().device, x_label,
                                              dispatches ? "us per dispatch"
                                              : flops    ? "GFLOP/s"
                                                         : "GB/s",
                                              series, co));
  }
  if (charts.empty()) return;
  Image all(charts[0].width, int(charts.size()) * charts[0].height, charts[0].channels);
  for (size_t i = 0; i < charts.size(); ++i)
    std::copy(charts[i].data.begin(), charts[i].data.end(),
              all.data.begin() + std::ptrdiff_t(i * charts[0].data.size()));
  write_image(path, all, 92, overwrite);
}

struct Flags {
  GpuFlags gpu;
  bench::Options o;
  std::vector<std::string> versions;  // empty: all
  OutputFlags out;
};

int bench_cmd(const Flags& f) {
  bench::Options o = f.o;
  for (const auto& s : o.size_names) {  // numbers for most ops; presets or specs for the convolutions
    double v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec == std::errc() && end == s.data() + s.size()) o.sizes.push_back(v);
  }
  // The versions to run: --versions, else WGC_BENCH_VERSIONS (comma-separated; for scripted GPU
  // runs whose command lines are fixed), else all.
  std::vector<std::string> versions = f.versions;
  if (const char* env = std::getenv("WGC_BENCH_VERSIONS"); versions.empty() && env)
    for (std::string_view rest = env; !rest.empty();) {
      const size_t comma = rest.find(',');
      if (rest.substr(0, comma).size()) versions.emplace_back(rest.substr(0, comma));
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    }
  o.versions = versions;
  const auto& png = f.out.png;
  if (o.repeats < 0) throw UsageError("--repeats must be >= 0");
  for (double s : o.sizes)
    if (s < 1) throw UsageError("--sizes expects sizes >= 1, got " + format_number("%g", s));
  const Overwrite overwrite = f.out.overwrite();
  f.out.check();
  Context ctx(f.gpu.context_options());

  std::set<std::string> known;
  for (auto& [op, make] : bench::registry()) known.insert(op);
  for (auto& op : o.ops)
    if (!known.count(op)) {
      std::string list;
      for (auto& k : known) list += " " + k;
      throw Error("wgc bench: unknown op '" + op + "' (known:" + list + ")");
    }

  double bw = bench::measured_bandwidth(ctx, o);
  double flops_peak = bench::nominal_flops(ctx);
  std::FILE* out = f.out.table();
  std::fprintf(out, "device: %s (%s)   measured copy bandwidth: %.1f GB/s   nominal FP32: %s\n",
               ctx.adapter().device.c_str(), ctx.adapter().adapter_type.c_str(), bw * 1e-9,
               flops_peak > 0 ? format_number("%.1f TFLOP/s", flops_peak * 1e-12).c_str() : "unknown");

  const bool tty = isatty(2);  // progress on one rewritten line on a terminal, else a line per case
  std::vector<bench::Result> results;
  std::map<std::pair<std::string, std::string>, std::pair<double, double>> cpu;  // (op,size) -> plain, blas
  for (auto& [op, make] : bench::registry()) {
    if (!o.ops.empty() && std::find(o.ops.begin(), o.ops.end(), op) == o.ops.end()) continue;
    auto cases = make(ctx, o);
    if (!versions.empty())
      std::erase_if(cases, [&](const bench::Case& c) {
        // A version also keeps its sweep cases ("VERSION [KNOBS]", e.g. WGC_MATMUL_SWEEP's).
        const std::string base = c.version.substr(0, c.version.find(" ["));
        return std::find(versions.begin(), versions.end(), base) == versions.end();
      });
    for (size_t i = 0; i < cases.size(); ++i) {
      std::fprintf(stderr, "%s[bench] %s %s %s (%zu/%zu)%s", tty ? "\r" : "", op.c_str(), cases[i].version.c_str(),
                   cases[i].size.c_str(), i + 1, cases.size(), tty ? "        " : "\n");
      auto r = bench::run_case(ctx, cases[i], o);
      auto& c = cpu[{r.c.op, r.c.size}];
      if (r.cpu_ms >= 0) c.first = r.cpu_ms;
      if (r.blas_ms >= 0) c.second = r.blas_ms;
      results.push_back(std::move(r));
    }
  }
  if (tty) std::fprintf(stderr, "\r%70s\r", "");

  // Columns as wide as their longest entry ("regtile-vec4-grouped", "4096x4096x512"); the
  // version Auto runs is marked * (in the table only).
  auto label = [](const bench::Result& r) { return r.c.version + (r.c.is_default ? "*" : ""); };
  int wop = 8, wver = 14, wsize = 12;
  for (auto& r : results) {
    wop = std::max(wop, int(r.c.op.size()));
    wver = std::max(wver, int(label(r).size()));
    wsize = std::max(wsize, int(r.c.size.size()));
  }
  std::fprintf(out, "\n%-*s %-*s %-*s %10s %16s %12s %10s %10s %8s %10s %s\n", wop, "op", wver, "version", wsize,
               "size", "GPU ms", "rate", "of limit", "CPU ms", "BLAS ms", "speedup", "max err", "check");
  bool all_ok = true;
  for (auto& r : results) {
    auto [plain, blas] = cpu[{r.c.op, r.c.size}];
    double best_cpu = plain > 0 && blas > 0 ? std::min(plain, blas) : std::max(plain, blas);
    double pf = peak_fraction(r, bw, flops_peak);
    bool ok = r.error < r.c.tolerance;
    all_ok &= ok;
    std::fprintf(out, "%-*s %-*s %-*s %10.4f %16s %12s %10s %10s %8s %10.2e %s\n", wop, r.c.op.c_str(), wver,
                 label(r).c_str(), wsize, r.c.size.c_str(), r.gpu_ms, rate(r).c_str(),
                 pf >= 0 ? (format_number("%.1f%% ", 100 * pf) + peak_of(r)).c_str() : "-",
                 plain > 0 ? format_number("%.3f", plain).c_str() : "-",
                 blas > 0 ? format_number("%.3f", blas).c_str() : "-",
                 best_cpu > 0 ? format_number("%.3gx", best_cpu / r.gpu_ms).c_str() : "-", r.error, ok ? "ok" : "FAIL");
  }
  std::fprintf(out,
               "\nGPU ms: median of %s; speedup against the faster of the plain CPU loop and BLAS; *: the version "
               "Auto runs.\n"
               "of limit: fp32 = of the nominal FP32 rate; copy = of the measured copy bandwidth of memory (data\n"
               "that fits in the GPU's L2 cache, e.g. small sizes or an 8B model's 4096x4096 F16 matrix, can\n"
               "pass 100%%). The JSON says the same per result (\"peak_fraction\", \"peak_of\").\n",
               results.empty() || results[0].timestamps ? "timestamp-query times" : "wall-clock times");
  if (std::any_of(results.begin(), results.end(), [](auto& r) { return r.c.timing != bench::Timing::PerDispatch; }))
    std::fprintf(out,
                 "gpu.*: one pair of timestamps around the whole batch (its dispatches in one pass); submit-wait: the\n"
                 "host's wall clock from submit to the end of the wait.\n");
  print_fits(out, dispatch_fits(results));
  if (f.out.json) f.out.write_json(results_json(ctx, results, bw, flops_peak).dump(1));
  if (png) write_chart(*png, ctx, results, cpu, overwrite);
  return all_ok ? 0 : 3;
}

Register reg{{"bench", "GPU vs CPU for every op, kernel version and size: table, JSON, PNG chart", [](CLI::App& app) {
                auto f = std::make_shared<Flags>();
                add_list(app, "--ops", f->o.ops, "the ops to run (default: all; an unknown one lists them)");
                add_list(app, "--sizes", f->o.size_names,
                         "sizes to run instead of the ops' defaults: numbers, or presets and specs for conv ops");
                add_list(app, "--versions", f->versions,
                         "only these kernel versions (default: all, or those in WGC_BENCH_VERSIONS)");
                app.add_flag("--quick", f->o.quick, "small sizes, few repeats (CI, SwiftShader)");
                app.add_option(
                    "--tuning", f->o.tuning,
                    "llm.* kernel knobs knob=v,knob=v (src/ops/llm/tuning.h); sets separated by ';' each time "
                    "every case (default: WGC_LLM_TUNING)");
                add_number(app, "--repeats", f->o.repeats, "timed runs per case; 0: 5 with --quick, else 20");
                add_output_flags(app, f->out, "the results as JSON", "a chart per op");
                add_gpu_flags(app, f->gpu);
                return [f] { return bench_cmd(*f); };
              }}};

}  // namespace
}  // namespace wgc::cli
