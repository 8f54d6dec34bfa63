// wgc bench-llm: llama-bench's pp/tg tests for LlamaModel (bench/llm_speed.h): the flags are parsed
// into a plan, the plan runs, and the result is reported as a Markdown table, JSON and a PNG chart.
#include "bench/llm_speed.h"
#include "cli/command.h"
#include "cli/llm_backend.h"
#include "cli/llm_flags.h"
#include "io/chart.h"
#include "ops/llm/llm_ops.h"
#include "util/error.h"
#include "util/format.h"
#include "util/json.h"

#include <algorithm>
#include <cstdio>

#include <unistd.h>

namespace wgc::cli {
namespace {

using bench::LlmSpeedPlan;
using bench::LlmSpeedResult;

// --- parse ---------------------------------------------------------------------------------------

struct Flags {
  GpuFlags gpu;
  EngineFlags split;
  LlmSpeedPlan plan;
  OutputFlags out;
  std::optional<std::string> model, matmul, tuning, draft_model;
  std::optional<double> bandwidth;
  bool no_warmup = false, no_q8 = false;
};

// --matmul's names of the prefill kernels (LlmTuning::matmul); "auto" is the default, not an option.
constexpr std::pair<const char*, llm::LinearVersion> kPrefillKernels[] = {{"auto", llm::LinearVersion::Auto},
                                                                          {"naive", llm::LinearVersion::Naive},
                                                                          {"tiled", llm::LinearVersion::Shared},
                                                                          {"regtile", llm::LinearVersion::RegTile}};

const char* prefill_kernel_name(llm::LinearVersion v) {
  for (auto [name, version] : kPrefillKernels)
    if (version == v) return name;
  return "?";
}

// The plan the flags describe; UsageError for what does not make sense.
LlmSpeedPlan parse(const Flags& f) {
  LlmSpeedPlan p = f.plan;
  p.warmup = !f.no_warmup;
  if (!f.model) throw UsageError("--model FILE.gguf (or a Hugging Face folder) is required");
  p.model = model_path(f.model).string();
  for (int v : p.prompt_sizes)
    if (v < 0 || v > 1 << 20) throw UsageError("-p expects token counts from 0 to 1048576, got " + std::to_string(v));
  for (int v : p.generate_sizes)
    if (v < 0 || v > 1 << 20) throw UsageError("-n expects token counts from 0 to 1048576, got " + std::to_string(v));
  if (std::all_of(p.prompt_sizes.begin(), p.prompt_sizes.end(), [](int v) { return v == 0; }) &&
      std::all_of(p.generate_sizes.begin(), p.generate_sizes.end(), [](int v) { return v == 0; }))
    throw UsageError("nothing to run (-p 0 and -n 0)");
  for (int v : p.depths)
    if (v < 0 || v > 1 << 20) throw UsageError("-d expects token counts from 0 to 1048576, got " + std::to_string(v));
  if (p.depths.empty()) p.depths = {0};
  p.q8_activations = !f.no_q8;
  if (f.tuning) {  // sets separated by ';', each "knob=v,knob=v"
    try {
      p.tuning_sets = llm::split_tuning_sets(*f.tuning);
    } catch (const Error& e) {
      throw UsageError(std::string("--tuning: ") + e.what());
    }
  }
  if (f.draft_model) p.draft_model = model_path(f.draft_model).string();
  check_draft_sweep(p.draft_tokens, p.draft_acceptance);
  if (p.draft_tokens.empty()) p.draft_tokens = {llm::SpeculativeOptions{}.draft_tokens};
  if (!f.draft_model && !p.draft_acceptance.empty()) throw UsageError("--draft-acceptance needs --draft-model");
  if (f.draft_model && std::all_of(p.generate_sizes.begin(), p.generate_sizes.end(), [](int v) { return v == 0; }))
    throw UsageError("--draft-model measures decode: give -n");
  if (p.repeats < 1) throw UsageError("-r must be at least 1");
  if (p.batch < 1) throw UsageError("--batch must be at least 1");
  if (p.decode_ahead < 1) throw UsageError("--decode-ahead must be at least 1");
  if (p.threads < 0 || p.threads > 4096) throw UsageError("--threads must be 0 (every processor) to 4096");
  if (f.bandwidth) {
    if (*f.bandwidth < 0) throw UsageError("--bandwidth expects GB/s >= 0 (0: none)");
    p.bandwidth_gbs = *f.bandwidth;
  }
  if (f.matmul) {
    auto k = std::find_if(std::begin(kPrefillKernels) + 1, std::end(kPrefillKernels),
                          [&](const auto& e) { return *f.matmul == e.first; });
    if (k == std::end(kPrefillKernels))
      throw UsageError("--matmul expects naive, tiled or regtile, got '" + *f.matmul + "'");
    p.tuning.matmul = k->second;
  }
  return p;
}

// --- report --------------------------------------------------------------------------------------

std::string params_str(int64_t params) {
  double p = double(params);
  return p >= 1e9 ? format_number("%.2f B", p / 1e9) : format_number("%.2f M", p / 1e6);
}
std::string gib_str(uint64_t bytes) {
  double b = double(bytes);
  return b >= double(1ull << 30) ? format_number("%.2f GiB", b / double(1ull << 30))
                                 : format_number("%.2f MiB", b / double(1ull << 20));
}
std::string gb_str(uint64_t bytes) {
  double b = double(bytes);
  return b >= 1e9   ? format_number("%.2f GB", b / 1e9)
         : b >= 1e6 ? format_number("%.2f MB", b / 1e6)
                    : format_number("%.1f KB", b / 1e3);
}

// A Markdown table (as llama-bench prints): columns sized to their widest cell, `right` aligned.
void print_table(std::FILE* out, const std::vector<std::string>& head, const std::vector<bool>& right,
                 const std::vector<std::vector<std::string>>& rows) {
  // Display width: count UTF-8 lead bytes only (the table has "±").
  auto width = [](const std::string& s) {
    size_t n = 0;
    for (unsigned char c : s) n += (c & 0xC0) != 0x80;
    return n;
  };
  std::vector<size_t> w(head.size());
  for (size_t c = 0; c < head.size(); ++c) {
    w[c] = width(head[c]);
    for (const auto& r : rows) w[c] = std::max(w[c], width(r[c]));
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string s = "|";
    for (size_t c = 0; c < cells.size(); ++c) {
      std::string pad(w[c] - width(cells[c]), ' ');
      s += ' ';
      if (right[c]) s += pad;
      s += cells[c];
      if (!right[c]) s += pad;
      s += " |";
    }
    std::fprintf(out, "%s\n", s.c_str());
  };
  line(head);
  std::string sep = "|";
  for (size_t c = 0; c < head.size(); ++c) {
    sep += ' ';
    sep.append(w[c] - (right[c] ? 1 : 0), '-');
    if (right[c]) sep += ':';
    sep += " |";
  }
  std::fprintf(out, "%s\n", sep.c_str());
  for (const auto& r : rows) line(r);
}

// The KV cache's bytes per position ("128.0 KiB"): the keys and values of every layer that keeps
// every position ("+ 1.5 MiB fixed" after it where sliding-window layers keep a ring instead).
std::string kv_per_token(const LlmSpeedResult& r) {
  std::string s = format_number("%.1f KiB per token", r.kv_per_token / 1024);
  if (r.kv_fixed > 0) s += " + " + gb_str(r.kv_fixed) + " fixed (sliding-window rings)";
  return s;
}

void print_report(std::FILE* out, const LlmSpeedPlan& p, const LlmSpeedResult& r) {
  const auto& t = p.tuning;
  const bool gpu = r.engine == llm::Device::Gpu;
  std::fprintf(out, "device: %s   bandwidth: %s\n",
               (gpu ? r.device + " (" + r.adapter.adapter_type + ")" : "CPU engine: " + r.device).c_str(),
               r.bandwidth > 0
                   ? (format_number("%.1f GB/s", r.bandwidth * 1e-9) + " (" + r.bandwidth_source + ")").c_str()
                   : "none");
  std::fprintf(out, "model: %s   weights %s: %s, read per decoded token: %s\n", p.model.c_str(),
               gpu ? "on the GPU" : "mapped", gb_str(r.weight_bytes).c_str(), gb_str(r.bytes_per_token).c_str());
  std::fprintf(out, "KV cache: %s, %s for %d positions, %s\n", std::string(to_string(p.cache_type)).c_str(),
               gb_str(r.kv_bytes).c_str(), r.max_ctx, kv_per_token(r).c_str());
  if (!p.draft_model.empty())
    std::fprintf(out, "draft: %s (%s); tg NAME draftK [aP]: K tokens proposed per round, kept %s\n",
                 p.draft_model.c_str(), r.draft_name.c_str(),
                 p.draft_acceptance.empty() ? "where they equal the target's argmax"
                                            : "each with probability P (forced: not the target's output)");
  if (gpu) {
    std::string sets;
    for (const auto& set : p.tuning_sets) sets += (sets.empty() ? "" : "; ") + (set.empty() ? "(defaults)" : set);
    std::fprintf(out, "kernel tuning: %s; prefill matmul: %s\n", sets.empty() ? "the defaults" : sets.c_str(),
                 prefill_kernel_name(t.matmul));
    if (!p.q8_activations) std::fprintf(out, "f32 activations throughout (--no-q8)\n");
  }
  std::fprintf(out, "\n");
  const std::string backend = gpu ? "WebGPU " + r.device : "CPU " + std::to_string(r.threads) + " threads";
  std::vector<std::vector<std::string>> rows;
  for (const auto& x : r.tests)
    rows.push_back({r.name, gib_str(r.file_bytes), params_str(r.params), backend, x.name,
                    format_number("%.2f", x.t.median) + " ± " + format_number("%.2f", x.t.stddev),
                    x.gbs >= 0 ? format_number(x.gbs >= 10 ? "%.1f" : "%.3f", x.gbs) : "",
                    x.bw_frac >= 0 ? format_number("%.1f%%", 100 * x.bw_frac) : ""});
  print_table(out, {"model", "size", "params", "backend", "test", "t/s", "GB/s", "% bw"},
              {false, true, true, false, true, true, true, true}, rows);
  for (const auto& x : r.tests)
    if (!x.host_ms.empty())
      std::fprintf(out,
                   "\n%s: host time recording a step: %.3f ms per token, waiting for the token: %.3f ms (medians); "
                   "%d step(s) in flight",
                   x.name.c_str(), bench::stats(x.host_ms).median, bench::stats(x.wait_ms).median, p.decode_ahead);
  for (const auto& x : r.tests)
    if (x.draft_tokens > 0)
      std::fprintf(out,
                   "\n%s: %.1f%% of the drafted tokens kept, %.2f tokens per target pass, the draft %.1f%% of the time",
                   x.name.c_str(), 100 * x.acceptance, x.tokens_per_pass, 100 * x.draft_share);
  if (!r.profile.empty()) {
    std::fprintf(out, "\n\nGPU time of one decode step by kernel (timestamps around each dispatch): %.3f ms\n\n",
                 r.profile_ms);
    std::vector<std::vector<std::string>> prow;
    for (const auto& k : r.profile)
      prow.push_back({k.kernel, std::to_string(k.dispatches), format_number("%.1f", k.ms * 1e3),
                      format_number("%.1f", k.ms * 1e3 / k.dispatches),
                      format_number("%.1f%%", 100 * k.ms / r.profile_ms)});
    print_table(out, {"kernel", "dispatches", "total us", "us each", "share"}, {false, true, true, true, true}, prow);
  }
  std::fprintf(out,
               "\nt/s: median ± standard deviation of %d runs (after warm-up runs of at least 1 s); pp: prefill of p "
               "random tokens\n"
               "from an empty cache to the last position's logits; tg: n greedy single-token steps from an empty\n"
               "cache (each step's token id read back; with --decode-ahead %d the host records step t+1 while the\n"
               "GPU runs step t). GB/s: weight bytes read per token x t/s; %% bw: of the %s.\n",
               p.repeats, p.decode_ahead,
               r.bandwidth_source == "given"      ? "given bandwidth"
               : r.bandwidth_source == "measured" ? "measured copy bandwidth"
                                                  : "bandwidth (none with --bandwidth 0)");
}

json::Value report_json(const LlmSpeedPlan& p, const LlmSpeedResult& r) {
  using json::Value;
  auto numbers = [](const std::vector<double>& v) {
    Value a = Value::array();
    for (double x : v) a.push_back(x);
    return a;
  };
  auto positive = [](double v) { return v >= 0 ? Value(v) : Value(); };
  Value o = Value::object();
  o.set("model", p.model);
  o.set("name", r.name);
  o.set("architecture", r.architecture);
  o.set("type", r.type);
  o.set("size_bytes", r.file_bytes);
  o.set("params", r.params);
  o.set("weight_bytes", r.weight_bytes);
  o.set("bytes_per_token", r.bytes_per_token);
  o.set("cache_type", std::string(to_string(p.cache_type)));
  o.set("kv_bytes", r.kv_bytes);
  o.set("kv_bytes_per_token", uint64_t(r.kv_per_token));
  o.set("kv_fixed_bytes", r.kv_fixed);
  const bool gpu = r.engine == llm::Device::Gpu;
  o.set("engine", std::string(to_string(r.engine)));
  o.set("device", r.device);
  o.set("adapter_type", gpu ? r.adapter.adapter_type : "cpu");
  o.set("backend", gpu ? r.adapter.backend : "cpu");
  o.set("threads", r.threads);
  o.set("bandwidth_gbs", r.bandwidth > 0 ? Value(r.bandwidth * 1e-9) : Value());
  o.set("bandwidth_source", r.bandwidth_source);
  o.set("repeats", p.repeats);
  o.set("warmup", p.warmup);
  o.set("decode_ahead", p.decode_ahead);
  o.set("max_ctx", r.max_ctx);
  o.set("batch", p.batch);
  if (!p.draft_model.empty()) {
    o.set("draft_model", p.draft_model);
    o.set("draft_name", r.draft_name);
  }
  Value results = Value::array();
  for (const auto& t : r.tests) {
    Value x = Value::object();
    x.set("test", t.name);
    x.set("depth", t.depth);
    if (!t.tuning.empty()) x.set("tuning", t.tuning);
    x.set("n_prompt", t.n_prompt);
    x.set("n_gen", t.n_gen);
    x.set("seconds", numbers(t.seconds));
    x.set("tps", numbers(t.tps));
    x.set("tps_median", t.t.median);
    x.set("tps_mean", t.t.mean);
    x.set("tps_stddev", t.t.stddev);
    x.set("tps_min", t.t.min);
    x.set("tps_max", t.t.max);
    x.set("gbs", positive(t.gbs));
    x.set("bandwidth_fraction", positive(t.bw_frac));
    x.set("host_ms_per_token", t.host_ms.empty() ? Value() : Value(bench::stats(t.host_ms).median));
    x.set("wait_ms_per_token", t.wait_ms.empty() ? Value() : Value(bench::stats(t.wait_ms).median));
    if (t.draft_tokens > 0) {
      x.set("draft_tokens", t.draft_tokens);
      x.set("forced_acceptance", t.forced_acceptance >= 0 ? Value(t.forced_acceptance) : Value());
      x.set("acceptance", t.acceptance);
      x.set("tokens_per_pass", t.tokens_per_pass);
      x.set("draft_share", t.draft_share);
    }
    results.push_back(std::move(x));
  }
  o.set("results", std::move(results));
  if (!r.profile.empty()) {
    Value prof = Value::array();
    for (const auto& k : r.profile) {
      Value x = Value::object();
      x.set("kernel", k.kernel);
      x.set("dispatches", k.dispatches);
      x.set("ms", k.ms);
      prof.push_back(std::move(x));
    }
    o.set("decode_step_profile", std::move(prof));
  }
  return o;
}

void write_png(const std::string& path, const LlmSpeedResult& r,
               Overwrite overwrite) {  // t/s of each test, one bar per test
  std::vector<std::string> cats;
  chart::BarSeries bars{"median t/s", {}};
  for (const auto& t : r.tests) {
    cats.push_back(t.name);
    bars.values.push_back(t.t.median);
  }
  chart::write_bar_chart(path, r.name + " on " + (r.engine == llm::Device::Gpu ? r.device : "the CPU engine"),
                         "tokens/s", cats, {bars}, {}, overwrite);
}

// --- the command ---------------------------------------------------------------------------------

int bench_llm_cmd(const Flags& f) {
  const LlmSpeedPlan plan = parse(f);
  f.out.check();
  const bool tty = isatty(2);
  auto status = [&](const std::string& s) {
    std::fprintf(stderr, "%s[bench-llm] %s%s", tty ? "\r" : "", s.c_str(), tty ? "          " : "\n");
    std::fflush(stderr);
  };
  const LlmBackend be = llm_backend(f.gpu, -1, &f.split);
  LlmSpeedPlan on = plan;
  on.device = be.device;
  on.split_gpus = be.split_gpus;
  on.tensor_split = be.tensor_split;
  on.cache_type = be.cache_type;
  on.swa_full = be.swa_full;
  LlmSpeedResult r = bench::run_llm_speed(be.ctx, on, status);
  if (tty) std::fprintf(stderr, "\r%70s\r", "");
  say_engine_choice(r.engine_reason);

  print_report(f.out.table(), on, r);
  if (f.out.png) write_png(*f.out.png, r, f.out.overwrite());
  if (f.out.json) f.out.write_json(report_json(on, r).dump(1));
  return 0;
}

Register reg{
    {"bench-llm", "llama-bench for LlamaModel: prefill (pp) and decode (tg) tokens/s, decode vs bandwidth",
     [](CLI::App& app) {
       auto f = std::make_shared<Flags>();
       auto& p = f->plan;
       add_text(app, "--model,-m", f->model, "a GGUF file, Hugging Face folder or pulled owner/name[/FILE] (required)")
           ->type_name("MODEL");
       add_numbers(app, "-p,--n-prompt", p.prompt_sizes, "prefill tests: prompt sizes in tokens (0: none)");
       add_numbers(app, "-n,--n-gen", p.generate_sizes, "decode tests: tokens generated (0: none)");
       add_numbers(app, "-d,--n-depth", p.depths, "tokens already in the cache before each test (llama-bench's -d)");
       add_number(app, "-r,--repetitions", p.repeats, "timed runs of each test");
       add_output_flags(app, f->out, "every number as JSON", "a bar chart of t/s");
       add_number(app, "--bandwidth", f->bandwidth,
                  "memory bandwidth in GB/s to compare decode with (default: measured; 0: none)");
       add_number(app, "--batch", p.batch, "tokens per prefill batch");
       add_number(app, "--threads,-t", p.threads, "the CPU engine's threads (default 0: every processor)");
       add_number(app, "--seed", p.seed, "seed of the random prompt tokens");
       app.add_flag("--no-warmup", f->no_warmup, "no untimed warm-up run before each test");
       add_number(app, "--decode-ahead", p.decode_ahead, "decode steps in flight (1: synchronous)");
       app.add_flag("--profile", p.profile,
                    "GPU time per kernel of one decode step (GPU engine; under the last --tuning set)");
       add_text(app, "--matmul", f->matmul, "prefill kernel: naive, tiled or regtile (default: auto)");
       add_text(app, "--tuning", f->tuning,
                "kernel knobs knob=v,knob=v (src/ops/llm/tuning.h, e.g. mvq_rows=2,matmul_bk=16); sets separated "
                "by ';' run every test once per set");
       app.add_flag("--no-q8", f->no_q8, "f32 activations for quantized weights too (EngineOptions::q8_activations)");
       add_text(app, "--draft-model,--model-draft", f->draft_model,
                "speculative decoding: every tg test again with this draft model (same tokenizer) proposing tokens")
           ->type_name("MODEL");
       add_numbers(app, "--draft-tokens,--draft-max", p.draft_tokens,
                   "speculative decoding: proposals per round (several: a test each)");
       add_numbers(app, "--draft-acceptance", p.draft_acceptance,
                   "speculative decoding: keep each proposal with this probability (0..1; several: a test each) "
                   "instead of by the target's argmax, for random-weight models (default: the argmax)");
       add_gpu_flags(app, f->gpu);
       add_engine_flags(app, f->split);
       return [f] { return bench_llm_cmd(*f); };
     }}};

}  // namespace
}  // namespace wgc::cli
