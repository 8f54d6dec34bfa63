// A serving benchmark against any OpenAI-compatible server (wgc serve, llama-server, vLLM), like
// vLLM's benchmark_serving: at each concurrency level, that many clients keep streaming
// /v1/completions requests of prompt_len random prompt tokens and exactly gen_len generated tokens
// (ignore_eos) until `requests` have finished; it measures aggregate output tokens/s, the time to
// first token and the inter-token latency (p50, p99) as clients see them.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace wgc::server {

struct BenchServeOptions {
  std::string url = "http://127.0.0.1:8080";  // the server's base URL (no /v1)
  std::vector<int> concurrency = {1, 8, 32, 64};
  int prompt_len = 128;  // prompt tokens (token ids, drawn at random from the vocabulary)
  int gen_len = 128;     // tokens generated per request
  int requests = 0;      // per level; 0: 4 x concurrency, at least 8
  std::string model;     // "" : the first of GET /v1/models
  std::string api_key;   // sent as a bearer token when non-empty
  uint64_t seed = 1;     // prompts and sampling
  int timeout_s = 600;   // per request
};

struct BenchServeLevel {
  int concurrency = 0;
  int requests = 0, failed = 0;
  double seconds = 0;          // wall time of the level
  uint64_t output_tokens = 0;  // from the servers' usage (else counted chunks)
  double output_tokens_per_s = 0, requests_per_s = 0;
  double ttft_p50_ms = 0, ttft_p99_ms = 0;  // request sent -> first token
  double itl_p50_ms = 0, itl_p99_ms = 0;    // between tokens of one request
  double e2e_p50_ms = 0;
  std::string first_error;  // of the failed requests
};

struct BenchServeResult {
  std::string model;  // as the requests named it
  std::vector<BenchServeLevel> levels;
};

// Runs every level in order; `on_level` (optional) sees each result as it comes. Throws wgc::Error
// when the server cannot be reached or names no model.
BenchServeResult bench_serve(const BenchServeOptions& o,
                             const std::function<void(const BenchServeLevel&)>& on_level = {});

// The results as a Markdown table, and as JSON (with the options).
std::string bench_serve_table(const std::vector<BenchServeLevel>& levels);
std::string bench_serve_json(const BenchServeOptions& o, const BenchServeResult& r);

}  // namespace wgc::server
