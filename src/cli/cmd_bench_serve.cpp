// wgc bench-serve: a serving benchmark against an OpenAI-compatible server (src/server/bench_serve.h).
#include "cli/command.h"
#include "io/chart.h"
#include "server/bench_serve.h"
#include "util/error.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>

namespace wgc::cli {
namespace {

int int_value(const std::string& s, const char* flag, int lo, int hi) {
  char* end = nullptr;
  long v = std::strtol(s.c_str(), &end, 10);
  if (s.empty() || *end || v < lo || v > hi)
    throw Error(std::string("wgc bench-serve: ") + flag + " expects an integer in [" + std::to_string(lo) + ", " +
                std::to_string(hi) + "], got '" + s + "'");
  return int(v);
}

int bench_serve(Args& a) {
  server::BenchServeOptions o;
  o.url = a.option_or("--url", o.url);
  if (auto c = a.list("--concurrency"); !c.empty()) {
    o.concurrency.clear();
    for (const auto& s : c) o.concurrency.push_back(int_value(s, "--concurrency", 1, 4096));
  }
  o.prompt_len = int_value(a.option_or("--prompt-len", "128"), "--prompt-len", 1, 1 << 20);
  o.gen_len = int_value(a.option_or("--gen-len", "128"), "--gen-len", 1, 1 << 20);
  o.requests = int_value(a.option_or("--requests", "0"), "--requests", 0, 1 << 20);
  o.model = a.option_or("--model", "");
  o.api_key = a.option_or("--api-key", "");
  if (o.api_key.empty())
    if (const char* env = std::getenv("WGC_API_KEY")) o.api_key = env;
  o.seed = uint64_t(int_value(a.option_or("--seed", "1"), "--seed", 0, 1 << 30));
  auto json = a.option("--json");
  auto png = a.option("--png");
  a.done();

  std::fprintf(stderr, "wgc bench-serve: %s, prompt %d tokens, %d generated per request\n", o.url.c_str(), o.prompt_len,
               o.gen_len);
  auto result = server::bench_serve(o, [](const server::BenchServeLevel& l) {
    std::fprintf(stderr, "concurrency %d: %.1f output tok/s, TTFT p50 %.1f ms, ITL p50 %.2f ms%s\n", l.concurrency,
                 l.output_tokens_per_s, l.ttft_p50_ms, l.itl_p50_ms,
                 l.failed ? (", " + std::to_string(l.failed) + " failed").c_str() : "");
  });
  std::cout << "model " << result.model << ", prompt " << o.prompt_len << " tokens, " << o.gen_len
            << " generated per request\n\n"
            << server::bench_serve_table(result.levels);

  if (json) {
    std::ofstream f(*json);
    f << server::bench_serve_json(o, result) << "\n";
    if (!f) throw Error("wgc bench-serve: cannot write " + *json);
  }
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
    chart::write_line_chart(*png, "wgc bench-serve: " + what, "concurrent clients", "output tokens/s", {tps}, co);
    std::filesystem::path lat = *png;
    lat.replace_filename(lat.stem().string() + "_latency" + lat.extension().string());
    co.log_y = true;
    chart::write_line_chart(lat, "latency: " + what, "concurrent clients", "ms", {ttft50, ttft99, itl50, itl99}, co);
    std::fprintf(stderr, "wrote %s and %s\n", png->c_str(), lat.c_str());
  }
  for (const auto& l : result.levels)
    if (l.failed) return 1;
  return 0;
}

Register reg{{"bench-serve",
              "[--url http://127.0.0.1:8080] [--concurrency 1,8,32,64] [--prompt-len 128] [--gen-len 128] "
              "[--requests N] [--model ID] [--api-key KEY] [--seed S] [--json FILE] [--png FILE]",
              "serving benchmark of an OpenAI-compatible server: output tokens/s, time to first token, "
              "inter-token latency",
              bench_serve}};

}  // namespace
}  // namespace wgc::cli
