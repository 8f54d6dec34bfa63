// The benchmark harness behind `wgc bench`: each op contributes cases (one version at one size);
// the harness times them on the GPU (timestamp queries, median of repeats), times the CPU, checks
// the result against the CPU reference, and reports rates against the device's limits.
#pragma once

#include "cpu/compare.h"
#include "gpu/batch.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace wgc::bench {

// How run_case times one run of a case.
enum class Timing {
  PerDispatch,  // a timed batch: each dispatch in a pass of its own, their GPU times summed
  Span,         // one pair of timestamps around the whole batch, its dispatches in one pass
  RoundTrip,    // the host's wall clock from submit to the end of the wait (recorded and encoded before)
};

struct Case {
  std::string op;                      // "matmul"
  std::string version;                 // "regtile-vec4"
  bool is_default = false;             // the version Auto runs at this size (the table marks it *)
  std::string size;                    // "4096x4096x4096"
  double elements = 0;                 // the size as one number, for charts
  std::string x_label;                 // what `elements` counts, for the chart (empty: n, or elements)
  double flops = 0;                    // per run (0 if the op is about bytes)
  double bytes = 0;                    // bytes the op must move per run (reads + writes, each once)
  std::function<void(Batch&)> record;  // records one run
  std::function<double()> check;       // runs once, returns max relative error vs the CPU reference
  double tolerance = 1e-4;             // the check passes under this error
  std::function<void()> cpu;           // the plain CPU loop (empty: too slow at this size)
  std::function<void()> cpu_blas;      // an optimised CPU library, where one exists
  Timing timing = Timing::PerDispatch;
  double dispatches = 0;  // dispatches per run, for ops about their cost (the table then shows us per dispatch)
};

struct Options {
  std::vector<std::string> ops;  // empty: all
  std::vector<double> sizes;     // empty: the op's defaults
  // The --sizes entries as given: ops with named sizes (the convolutions' presets and specs) read
  // these; numeric ops read `sizes`, which holds the entries that are numbers.
  std::vector<std::string> size_names;
  bool quick = false;  // small sizes, few repeats (CI, SwiftShader)
  int repeats = 0;     // 0: 5 quick, 20 otherwise
  // The versions to run (empty: all): ops may skip building cases of other versions.
  std::vector<std::string> versions;
  // --tuning: kernel knob sets separated by ';' for the ops that take them (the llm.* benches:
  // llm::split_tuning_sets; empty: WGC_LLM_TUNING).
  std::string tuning;
};

// Each op's cases for a context (sizes already chosen).
using CaseMaker = std::function<std::vector<Case>(const Context&, const Options&)>;
std::vector<std::pair<std::string, CaseMaker>>& registry();
struct Register {
  Register(std::string op, CaseMaker make) { registry().emplace_back(std::move(op), std::move(make)); }
};

struct Result {
  Case c;
  double gpu_ms = 0;      // median GPU time of one run
  double gpu_spread = 0;  // (max - min) / median over the repeats
  double cpu_ms = -1;     // -1: not run
  double blas_ms = -1;
  double error = 0;
  bool timestamps = false;  // false: wall-clock of repeated submits instead
};

Result run_case(const Context& ctx, const Case& c, const Options& o);

// One op version's runs as a line, t = fixed + dispatches * per_dispatch + bytes / bandwidth, fitted
// by least squares on the relative error (short and long runs weigh alike). A term whose column is
// zero in every result (no bytes) is left out and stays 0.
struct DispatchFit {
  double fixed_us = 0;
  double per_dispatch_us = 0;
  double bandwidth = 0;  // bytes/s (0: not fitted)
  double max_rel_residual = 0;
};
// Empty when the results cannot determine the terms (fewer distinct points than terms).
std::optional<DispatchFit> fit_dispatches(std::span<const Result> rs);

// The device's measured copy bandwidth (bytes/s), from a large buffer copy kernel; cached.
double measured_bandwidth(const Context& ctx, const Options& o);
// Nominal FP32 rate (FLOP/s) where wgc knows the device, else 0.
double nominal_flops(const Context& ctx);

// Sizes to use: the option's, else defaults (quick / CPU adapter / GPU).
std::vector<double> sizes_or(const Options& o, const Context& ctx, std::vector<double> quick,
                             std::vector<double> cpu_adapter, std::vector<double> gpu);

}  // namespace wgc::bench
