#include "server/bench_serve.h"

#include "util/error.h"
#include "util/format.h"
#include "util/json.h"
#include "util/progress.h"

#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <mutex>
#include <random>
#include <thread>

namespace wgc::server {
namespace {

using Clock = std::chrono::steady_clock;
using json::Value;

double ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

// Nearest-rank percentile of `v` (sorted here); 0 when empty.
double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t rank = size_t(std::ceil(p / 100.0 * double(v.size())));
  return v[std::clamp<size_t>(rank, 1, v.size()) - 1];
}

httplib::Headers headers(const BenchServeOptions& o) {
  httplib::Headers h;
  if (!o.api_key.empty()) h.emplace("Authorization", "Bearer " + o.api_key);
  return h;
}

// GET /v1/models: the served model's id and vocabulary size (wgc's "meta.n_vocab"; 0 when the
// server does not say).
std::pair<std::string, int64_t> served_model(const BenchServeOptions& o) {
  httplib::Client cli(o.url);
  cli.set_connection_timeout(10);
  auto r = cli.Get("/v1/models", headers(o));
  if (!r) throw Error("wgc bench-serve: cannot reach " + o.url + " (" + httplib::to_string(r.error()) + ")");
  if (r->status != 200)
    throw Error("wgc bench-serve: GET " + o.url + "/v1/models answered " + std::to_string(r->status) + ": " + r->body);
  Value doc = json::parse(r->body, "GET /v1/models");
  const Value* data = doc.find("data");
  if (!data || !data->is_array() || data->size() == 0 || !(*data)[0].find("id"))
    throw Error("wgc bench-serve: " + o.url + "/v1/models lists no model");
  const Value& m = (*data)[0];
  int64_t vocab = 0;
  if (const Value* meta = m.find("meta"); meta && meta->is_object()) vocab = meta->get_int("n_vocab", 0);
  return {m["id"].as_string(), vocab};
}

struct Outcome {
  bool ok = false;
  std::string error;
  double ttft_ms = 0, e2e_ms = 0;
  std::vector<double> itl_ms;
  uint64_t tokens = 0;
};

// One streamed request; the server's usage gives the token count (else the chunks with text).
Outcome run_one(httplib::Client& cli, const BenchServeOptions& o, const std::string& model, int64_t vocab,
                uint64_t index) {
  std::mt19937_64 rng(o.seed * 1000003 + index);
  // Ids past the first 100 (often control tokens) and below 30000 (inside any Llama vocabulary).
  int64_t hi = vocab > 200 ? std::min<int64_t>(vocab, 30000) : 1000;
  std::uniform_int_distribution<int64_t> id(100, hi - 1);
  Value prompt = Value::array();
  for (int i = 0; i < o.prompt_len; ++i) prompt.push_back(id(rng));
  Value body = Value::object();
  body.set("model", model);
  body.set("prompt", std::move(prompt));
  body.set("max_tokens", o.gen_len);
  body.set("ignore_eos", true);
  body.set("temperature", 0);
  body.set("stream", true);
  Value so = Value::object();
  so.set("include_usage", true);
  body.set("stream_options", std::move(so));

  Outcome out;
  std::string pending;
  bool done = false;
  uint64_t chunks = 0;
  auto start = Clock::now();
  Clock::time_point last;
  auto on_event = [&](std::string_view data) {
    if (data == "[DONE]") {
      done = true;
      return;
    }
    Value ev = json::parse(data, "a streamed event");
    if (const Value* err = ev.find("error")) {
      out.error = err->is_object() ? err->get_string("message", err->dump()) : err->dump();
      return;
    }
    if (const Value* u = ev.find("usage"); u && u->is_object()) out.tokens = uint64_t(u->get_int("completion_tokens"));
    const Value* choices = ev.find("choices");
    if (!choices || !choices->is_array() || choices->size() == 0) return;
    if ((*choices)[0].get_string("text").empty()) return;
    auto now = Clock::now();
    if (chunks++ == 0)
      out.ttft_ms = ms(now - start);
    else
      out.itl_ms.push_back(ms(now - last));
    last = now;
  };
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/completions";
  req.headers = headers(o);
  req.headers.emplace("Content-Type", "application/json");
  req.body = body.dump();
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    pending.append(data, n);
    size_t pos;
    while ((pos = pending.find("\n\n")) != std::string::npos) {
      std::string event = pending.substr(0, pos);
      pending.erase(0, pos + 2);
      if (event.starts_with("data: ")) on_event(std::string_view(event).substr(6));
    }
    return out.error.empty();
  };
  httplib::Response res;
  httplib::Error err = httplib::Error::Success;
  bool sent = cli.send(req, res, err);
  out.e2e_ms = ms(Clock::now() - start);
  if (!out.error.empty()) return out;
  if (!sent) {
    out.error = "request failed: " + httplib::to_string(err);
  } else if (res.status != 200) {
    out.error = "HTTP " + std::to_string(res.status) + ": " + pending + res.body;
  } else if (!done) {
    out.error = "the stream ended without [DONE]";
  } else {
    out.ok = true;
    if (out.tokens == 0) out.tokens = chunks;
  }
  return out;
}

BenchServeLevel run_level(const BenchServeOptions& o, const std::string& model, int64_t vocab, int concurrency,
                          uint64_t first_index) {
  BenchServeLevel lv;
  lv.concurrency = concurrency;
  lv.requests = o.requests > 0 ? o.requests : std::max(8, 4 * concurrency);
  std::atomic<int> next{0};
  std::mutex mu;
  std::vector<Outcome> outcomes;
  Progress bar("bench-serve: concurrency " + std::to_string(concurrency), uint64_t(lv.requests));
  auto start = Clock::now();
  std::vector<std::thread> clients;
  for (int c = 0; c < concurrency; ++c)
    clients.emplace_back([&] {
      httplib::Client cli(o.url);
      cli.set_connection_timeout(10);
      cli.set_read_timeout(o.timeout_s);
      cli.set_write_timeout(o.timeout_s);
      cli.set_keep_alive(true);
      for (int i; (i = next++) < lv.requests;) {
        Outcome r = run_one(cli, o, model, vocab, first_index + uint64_t(i));
        bar.add(1);
        std::lock_guard lock(mu);
        outcomes.push_back(std::move(r));
      }
    });
  for (auto& t : clients) t.join();
  bar.finish();
  lv.seconds = std::chrono::duration<double>(Clock::now() - start).count();

  std::vector<double> ttft, itl, e2e;
  for (const auto& r : outcomes) {
    if (!r.ok) {
      ++lv.failed;
      if (lv.first_error.empty()) lv.first_error = r.error;
      continue;
    }
    lv.output_tokens += r.tokens;
    ttft.push_back(r.ttft_ms);
    e2e.push_back(r.e2e_ms);
    itl.insert(itl.end(), r.itl_ms.begin(), r.itl_ms.end());
  }
  lv.output_tokens_per_s = lv.seconds > 0 ? double(lv.output_tokens) / lv.seconds : 0;
  lv.requests_per_s = lv.seconds > 0 ? double(lv.requests - lv.failed) / lv.seconds : 0;
  lv.ttft_p50_ms = percentile(ttft, 50);
  lv.ttft_p99_ms = percentile(ttft, 99);
  lv.itl_p50_ms = percentile(itl, 50);
  lv.itl_p99_ms = percentile(itl, 99);
  lv.e2e_p50_ms = percentile(e2e, 50);
  return lv;
}

}  // namespace

BenchServeResult bench_serve(const BenchServeOptions& o, const std::function<void(const BenchServeLevel&)>& on_level) {
  if (o.concurrency.empty()) throw Error("wgc bench-serve: no concurrency level given");
  for (int c : o.concurrency)
    if (c < 1 || c > 4096) throw Error("wgc bench-serve: concurrency " + std::to_string(c) + " is outside 1..4096");
  if (o.prompt_len < 1 || o.gen_len < 1) throw Error("wgc bench-serve: prompt and generation lengths must be >= 1");
  auto [served, vocab] = served_model(o);
  BenchServeResult out;
  out.model = o.model.empty() ? served : o.model;
  uint64_t index = 0;
  for (int c : o.concurrency) {
    out.levels.push_back(run_level(o, out.model, vocab, c, index));
    index += uint64_t(out.levels.back().requests);
    if (on_level) on_level(out.levels.back());
  }
  return out;
}

std::string bench_serve_table(const std::vector<BenchServeLevel>& levels) {
  const char* head[] = {"concurrency", "requests",   "failed",     "output tok/s", "req/s", "TTFT p50 ms",
                        "TTFT p99 ms", "ITL p50 ms", "ITL p99 ms", "e2e p50 ms",   "wall s"};
  std::vector<std::vector<std::string>> rows;
  for (const auto& l : levels)
    rows.push_back({std::to_string(l.concurrency), std::to_string(l.requests), std::to_string(l.failed),
                    format_number("%.1f", l.output_tokens_per_s), format_number("%.2f", l.requests_per_s),
                    format_number("%.1f", l.ttft_p50_ms), format_number("%.1f", l.ttft_p99_ms),
                    format_number("%.2f", l.itl_p50_ms), format_number("%.2f", l.itl_p99_ms),
                    format_number("%.0f", l.e2e_p50_ms), format_number("%.1f", l.seconds)});
  std::vector<size_t> width;
  for (const char* h : head) width.push_back(std::string(h).size());
  for (const auto& r : rows)
    for (size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
  auto line = [&](const std::vector<std::string>& cells) {
    std::string s = "|";
    for (size_t i = 0; i < cells.size(); ++i) {
      s.append(width[i] - cells[i].size() + 1, ' ');
      s += cells[i];
      s += " |";
    }
    return s + "\n";
  };
  std::string out = line(std::vector<std::string>(std::begin(head), std::end(head)));
  out += "|";
  for (size_t w : width) out += std::string(w + 1, '-') + ":|";
  out += "\n";
  for (const auto& r : rows) out += line(r);
  for (const auto& l : levels)
    if (l.failed) out += "concurrency " + std::to_string(l.concurrency) + ": first error: " + l.first_error + "\n";
  return out;
}

std::string bench_serve_json(const BenchServeOptions& o, const BenchServeResult& r) {
  Value doc = Value::object();
  doc.set("url", o.url);
  doc.set("model", r.model);
  doc.set("prompt_len", o.prompt_len);
  doc.set("gen_len", o.gen_len);
  Value arr = Value::array();
  for (const auto& l : r.levels) {
    Value v = Value::object();
    v.set("concurrency", l.concurrency);
    v.set("requests", l.requests);
    v.set("failed", l.failed);
    v.set("seconds", l.seconds);
    v.set("output_tokens", l.output_tokens);
    v.set("output_tokens_per_s", l.output_tokens_per_s);
    v.set("requests_per_s", l.requests_per_s);
    v.set("ttft_p50_ms", l.ttft_p50_ms);
    v.set("ttft_p99_ms", l.ttft_p99_ms);
    v.set("itl_p50_ms", l.itl_p50_ms);
    v.set("itl_p99_ms", l.itl_p99_ms);
    v.set("e2e_p50_ms", l.e2e_p50_ms);
    if (!l.first_error.empty()) v.set("first_error", l.first_error);
    arr.push_back(std::move(v));
  }
  doc.set("levels", std::move(arr));
  return doc.dump(1);
}

}  // namespace wgc::server
