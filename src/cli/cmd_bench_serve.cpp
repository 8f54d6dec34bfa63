// wgc bench-serve: a serving benchmark against an OpenAI-compatible server (src/server/bench_serve.h).
#include "cli/command.h"
#include "io/chart.h"
#include "server/bench_serve.h"
#include "util/error.h"
#include "util/output_file.h"

#include <cstdio>
#include <cstdlib>
#include <iostream>

namespace wgc::cli {
namespace {

struct Flags {
  server::BenchServeOptions o;
  OutputFlags out;
};

void in_range(int v, const char* flag, int lo, int hi) {
  if (v < lo || v > hi)
    throw UsageError(std::string(flag) + " expects an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                     "], got " + std::to_string(v));
}

int bench_serve(const Flags& f) {
  server::BenchServeOptions o = f.o;
  for (int c : o.concurrency) in_range(c, "--concurrency", 1, 4096);
  in_range(o.prompt_len, "--prompt-len", 1, 1 << 20);
  in_range(o.gen_len, "--gen-len", 1, 1 << 20);
  in_range(o.requests, "--requests", 0, 1 << 20);
  if (o.api_key.empty())
    if (const char* env = std::getenv("WGC_API_KEY")) o.api_key = env;
  const Overwrite overwrite = f.out.overwrite();
  const auto& png = f.out.png;
  std::filesystem::path latency_png;  // beside --png: PNG_latency.png
  if (png) {
    latency_png = *png;
    latency_png.replace_filename(latency_png.stem().string() + "_latency" + latency_png.extension().string());
    f.out.check({latency_png});
  } else {
    f.out.check();
  }

  std::fprintf(stderr, "wgc bench-serve: %s, prompt %d tokens, %d generated per request\n", o.url.c_str(), o.prompt_len,
               o.gen_len);
  auto result = server::bench_serve(o, [](const server::BenchServeLevel& l) {
    std::fprintf(stderr, "concurrency %d: %.1f output tok/s, TTFT p50 %.1f ms, ITL p50 %.2f ms%s\n", l.concurrency,
                 l.output_tokens_per_s, l.ttft_p50_ms, l.itl_p50_ms,
                 l.failed ? (", " + std::to_string(l.failed) + " failed").c_str() : "");
  });
  std::ostream& table = f.out.json_to_stdout() ? std::cerr : std::cout;
  table << "model " << result.model << ", prompt " << o.prompt_len << " tokens, " << o.gen_len
        << " generated per request\n\n"
        << server::bench_serve_table(result.levels);

  f.out.write_json(server::bench_serve_json(o, result));
  if (png) {
    // Throughput, and beside it (PNG_latency.png) the latencies, against the concurrency.
    chart::Series tps{"output tokens/s", {}, {}};
    chart::Series ttft50{"TTFT p50", {}, {}}, ttft99{"TTFT p99", {}, {}}, itl50{"ITL p50", {}, {}},
        itl99{"ITL p99", {}, {}};
    for (const auto& l : result.levels) {
      double c = l.concurrency;
      tps.x.push_back(c), tps.y.push_back(l.output_tokens_per_s);
      ttft50.x.push_back(c), ttft50.y.push_back(l.ttft_p50_ms);
      ttft99.x.push_back(c), ttft99.y.push_back(l.ttft_p99_ms);
      itl50.x.push_back(c), itl50.y.push_back(l.itl_p50_ms);
      itl99.x.push_back(c), itl99.y.push_back(l.itl_p99_ms);
    }
    chart::ChartOptions co;
    co.log_x = true;
    std::string what = result.model + ", prompt " + std::to_string(o.prompt_len) + ", gen " + std::to_string(o.gen_len);
    chart::write_line_chart(*png, "wgc bench-serve: " + what, "concurrent clients", "output tokens/s", {tps}, co,
                            overwrite);
    co.log_y = true;
    chart::write_line_chart(latency_png, "latency: " + what, "concurrent clients", "ms", {ttft50, ttft99, itl50, itl99},
                            co, overwrite);
    info("wrote " + *png + " and " + latency_png.string());
  }
  for (const auto& l : result.levels)
    if (l.failed) return 1;
  return 0;
}

Register reg{
    {"bench-serve",
     "serving benchmark of an OpenAI-compatible server: output tokens/s, time to first token, "
     "inter-token latency",
     [](CLI::App& app) {
       auto f = std::make_shared<Flags>();
       auto& o = f->o;
       app.add_option("--url", o.url, "the server's base URL (no /v1)");
       add_numbers(app, "--concurrency", o.concurrency, "concurrent clients, one level each");
       add_number(app, "--prompt-len", o.prompt_len, "prompt tokens per request (random ids)");
       add_number(app, "--gen-len", o.gen_len, "tokens generated per request");
       add_number(app, "--requests", o.requests, "requests per level; 0: 4 x concurrency, at least 8");
       app.add_option("--model", o.model, "the model id to ask for (default: the server's first)")->default_str("");
       app.add_option("--api-key", o.api_key, "bearer token to send (or WGC_API_KEY)")->default_str("");
       add_number(app, "--seed", o.seed, "seed of the prompts and the sampling");
       add_output_flags(app, f->out, "the results as JSON",
                        "a throughput chart (and beside it FILE_latency.png, the latencies)");
       return [f] { return bench_serve(*f); };
     }}};

}  // namespace
}  // namespace wgc::cli
